#include "transport/buffer_pool.hpp"

#include <algorithm>

namespace stoker {

buffer_pool::buffer_pool(size_t capacity) : capacity_(capacity) {
  idle_.reserve(capacity);
}

std::vector<char> buffer_pool::acquire(size_t bytes) {
  std::vector<char> result;
  {
    std::lock_guard<std::mutex> guard{mutex_};
    if (!idle_.empty()) {
      auto exact = std::find_if(idle_.begin(), idle_.end(),
                                [&](const auto& b) { return b.size() == bytes; });
      auto pick = exact != idle_.end()
                    ? exact
                    : std::max_element(idle_.begin(), idle_.end(),
                                       [](const auto& a, const auto& b) {
                                         return a.capacity() < b.capacity();
                                       });
      result = std::move(*pick);
      idle_.erase(pick);
      ++reused_;
    }
  }
  result.resize(bytes);
  return result;
}

void buffer_pool::release(std::vector<char>&& buffer) {
  std::vector<char> surplus; // freed after the lock is dropped
  {
    std::lock_guard<std::mutex> guard{mutex_};
    if (buffer.capacity() > 0 && idle_.size() < capacity_)
      idle_.push_back(std::move(buffer));
    else
      surplus = std::move(buffer);
  }
}

size_t buffer_pool::idle() const {
  std::lock_guard<std::mutex> guard{mutex_};
  return idle_.size();
}

size_t buffer_pool::reused() const {
  std::lock_guard<std::mutex> guard{mutex_};
  return reused_;
}

} // namespace stoker
