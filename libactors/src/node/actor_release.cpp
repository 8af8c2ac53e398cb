#include "node/actor_release.hpp"

#include <algorithm>
#include <thread>

#include <caf/actor_cast.hpp>
#include <caf/io/middleman.hpp>
#include <caf/weak_intrusive_ptr.hpp>

namespace stoker {

size_t release_actors(caf::actor_system& sys, std::vector<caf::actor> actors,
                      std::chrono::milliseconds limit) {
  std::vector<caf::weak_actor_ptr> watched;
  watched.reserve(actors.size());
  for (auto& a : actors) {
    if (!a)
      continue;
    watched.push_back(caf::actor_cast<caf::weak_actor_ptr>(a));
    // Not published: CAF answers with an error, which changes nothing.
    if (sys.has_middleman())
      static_cast<void>(sys.middleman().unpublish(a, 0));
  }
  actors.clear();
  auto alive = [&] {
    return static_cast<size_t>(
      std::count_if(watched.begin(), watched.end(), [](auto& w) {
        return caf::actor_cast<caf::strong_actor_ptr>(w) != nullptr;
      }));
  };
  auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    auto left = alive();
    if (left == 0 || std::chrono::steady_clock::now() >= deadline)
      return left;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

} // namespace stoker
