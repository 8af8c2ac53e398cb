#include <boost/test/unit_test.hpp>

#include <chrono>
#include <thread>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include "node/actor_release.hpp"
#include "node/node_config.hpp"

using namespace stoker;
using namespace std::chrono_literals;

namespace {

// A node's CAF configuration with the network layer (a cluster role's).
struct cluster_config : node_config {
  cluster_config() {
    caf::actor_system_config::load<caf::io::middleman>();
  }
};

struct fixture {
  cluster_config cfg;
  caf::actor_system sys{cfg};

  // A detached actor (as trainers and workers are) that does nothing.
  caf::actor spawn_idle() {
    return sys.spawn<caf::detached>([](caf::event_based_actor*) {
      return caf::behavior{[](int) {}};
    });
  }

  // Stops `a` and waits for its down message; the message (which holds
  // `a`) goes with the scoped actor.
  void stop(const caf::actor& a) {
    caf::scoped_actor self{sys};
    self->monitor(a);
    self->send_exit(a, caf::exit_reason::user_shutdown);
    self->receive([](caf::down_msg&) {});
  }

  // The caller's only reference, in a vector (an initializer list would
  // keep a copy alive until release_actors returns).
  static std::vector<caf::actor> only(caf::actor& a) {
    std::vector<caf::actor> out;
    out.push_back(std::move(a));
    return out;
  }

  static double seconds_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now()
                                         - t)
      .count();
  }
};

} // namespace

BOOST_FIXTURE_TEST_SUITE(actor_release, fixture)

BOOST_AUTO_TEST_CASE(an_actor_held_elsewhere_is_waited_for_until_let_go) {
  auto a = spawn_idle();
  stop(a);
  // Another thread holds it for 300 ms more (as a queued message would).
  std::thread holder{[held = a]() mutable {
    std::this_thread::sleep_for(300ms);
    held = nullptr;
  }};
  auto started = std::chrono::steady_clock::now();
  auto left = release_actors(sys, only(a), 10s);
  auto waited = seconds_since(started);
  holder.join();
  BOOST_TEST(left == 0u);
  BOOST_TEST(waited >= 0.25);
  BOOST_TEST(waited < 5.0);
}

BOOST_AUTO_TEST_CASE(an_actor_still_held_at_the_limit_is_counted) {
  auto a = spawn_idle();
  auto kept = a;
  stop(a);
  auto started = std::chrono::steady_clock::now();
  BOOST_TEST(release_actors(sys, only(a), 200ms) == 1u);
  BOOST_TEST(seconds_since(started) >= 0.15);
  kept = nullptr;
  BOOST_TEST(release_actors(sys, {}, 200ms) == 0u);
}

BOOST_AUTO_TEST_CASE(a_published_actor_is_withdrawn_and_let_go) {
  // CAF's BASP broker holds a published actor until it is unpublished or
  // the middleman stops: waiting for it without withdrawing it first
  // would always wait out the limit.
  auto a = spawn_idle();
  auto port = sys.middleman().publish(a, 0, "127.0.0.1");
  BOOST_REQUIRE(port);
  stop(a);
  auto started = std::chrono::steady_clock::now();
  BOOST_TEST(release_actors(sys, only(a), 10s) == 0u);
  BOOST_TEST(seconds_since(started) < 5.0);
}

BOOST_AUTO_TEST_CASE(stopped_unpublished_actors_are_let_go_at_once) {
  std::vector<caf::actor> actors{spawn_idle(), spawn_idle(), caf::actor{}};
  for (auto& a : actors)
    if (a)
      stop(a);
  auto started = std::chrono::steady_clock::now();
  BOOST_TEST(release_actors(sys, std::move(actors), 10s) == 0u);
  BOOST_TEST(seconds_since(started) < 5.0);
}

BOOST_AUTO_TEST_SUITE_END()
