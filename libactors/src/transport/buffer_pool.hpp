#pragma once

#include <cstddef>
#include <mutex>
#include <vector>

namespace stoker {

/// Recycles large byte buffers between the thread that fills them (a batch
/// receiver) and the one that drops them (the trainer, after its step).
/// A fresh 38 MB buffer costs a zero fill plus a page fault per page; a
/// recycled one of the same size costs neither. Thread-safe.
class buffer_pool {
public:
  /// Keeps at most `capacity` idle buffers; more are freed on release.
  explicit buffer_pool(size_t capacity = 8);

  /// A buffer of exactly `bytes` bytes whose contents are unspecified. Reuses
  /// an idle buffer of that size if there is one, else the largest idle one
  /// (resized), else allocates.
  std::vector<char> acquire(size_t bytes);

  /// Gives a buffer back; the caller no longer owns it.
  void release(std::vector<char>&& buffer);

  /// Idle buffers now held.
  size_t idle() const;

  /// Buffers acquire() handed out that were recycled rather than allocated.
  size_t reused() const;

private:
  mutable std::mutex mutex_;
  size_t capacity_;
  size_t reused_ = 0;
  std::vector<std::vector<char>> idle_;
};

} // namespace stoker
