#include "transport/buffer_pool.hpp"

#include <algorithm>
#include <cstdint>

#include <sys/mman.h>

namespace stoker {

bool advise_huge_pages(void* data, size_t bytes) noexcept {
  constexpr uintptr_t huge = uintptr_t{2} << 20;
  auto begin = (reinterpret_cast<uintptr_t>(data) + huge - 1) & ~(huge - 1);
  auto end = (reinterpret_cast<uintptr_t>(data) + bytes) & ~(huge - 1);
  if (end <= begin)
    return false; // smaller than one huge page once aligned
  return ::madvise(reinterpret_cast<void*>(begin), end - begin,
                   MADV_HUGEPAGE)
         == 0;
}

buffer_pool::buffer_pool(size_t capacity) : capacity_(capacity) {
  idle_.reserve(capacity);
}

std::vector<char> buffer_pool::acquire(size_t bytes) {
  std::vector<char> result;
  {
    std::lock_guard<std::mutex> guard{mutex_};
    auto exact = std::find_if(idle_.begin(), idle_.end(),
                              [&](const auto& b) { return b.size() == bytes; });
    auto pick = exact;
    if (pick == idle_.end()) // the largest that holds it without a realloc
      for (auto i = idle_.begin(); i != idle_.end(); ++i)
        if (i->capacity() >= bytes
            && (pick == idle_.end() || i->capacity() > pick->capacity()))
          pick = i;
    if (pick != idle_.end()) {
      result = std::move(*pick);
      idle_.erase(pick);
      ++reused_;
    } else {
      ++created_;
    }
  }
  if (result.capacity() < bytes) {
    // Created once: huge pages advised before the first touch, which the
    // zero fill of resize() is, here and not per batch.
    result = std::vector<char>{};
    result.reserve(bytes);
    advise_huge_pages(result.data(), result.capacity());
    std::lock_guard<std::mutex> guard{mutex_};
    if (made_.size() < max_tracked)
      made_.insert(result.data());
  }
  result.resize(bytes);
  return result;
}

void buffer_pool::release(std::vector<char>&& buffer) {
  std::vector<char> surplus; // freed after the lock is dropped
  {
    std::lock_guard<std::mutex> guard{mutex_};
    if (buffer.capacity() > 0 && idle_.size() < capacity_) {
      idle_.push_back(std::move(buffer));
    } else {
      made_.erase(buffer.data()); // freed: its address may serve others
      surplus = std::move(buffer);
    }
  }
}

bool buffer_pool::made(const void* data) const {
  std::lock_guard<std::mutex> guard{mutex_};
  return made_.count(data) > 0;
}

size_t buffer_pool::idle() const {
  std::lock_guard<std::mutex> guard{mutex_};
  return idle_.size();
}

size_t buffer_pool::reused() const {
  std::lock_guard<std::mutex> guard{mutex_};
  return reused_;
}

size_t buffer_pool::created() const {
  std::lock_guard<std::mutex> guard{mutex_};
  return created_;
}

} // namespace stoker
