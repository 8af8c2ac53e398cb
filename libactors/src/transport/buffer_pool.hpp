#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <set>
#include <vector>

namespace stoker {

/// Recycles large byte buffers between the threads that fill them (a
/// worker making a batch, a batch receiver) and the ones that are done with
/// them (a worker after sending, the trainer after its step). A fresh
/// 38.5 MB buffer costs a zero fill and, in 4 KiB pages, ~9,400 page
/// faults; a recycled one of the same size costs neither, so a pipeline
/// whose buffers all come from here allocates nothing in its steady state,
/// whatever malloc's settings. A buffer it creates is advised to use
/// transparent huge pages where the kernel allows (madvise(MADV_HUGEPAGE)
/// on its 2 MiB-aligned part) and touched once, then, not per batch.
/// Thread-safe.
class buffer_pool {
public:
  /// Keeps at most `capacity` idle buffers; more are freed on release.
  explicit buffer_pool(size_t capacity = 8);

  /// A buffer of exactly `bytes` bytes whose contents are unspecified. Reuses
  /// an idle buffer of that size if there is one, else the largest idle one
  /// big enough (shrunk, no copy), else creates one.
  std::vector<char> acquire(size_t bytes);

  /// Gives a buffer back; the caller no longer owns it.
  void release(std::vector<char>&& buffer);

  /// Idle buffers now held.
  size_t idle() const;

  /// Buffers acquire() handed out that were recycled rather than created.
  size_t reused() const;

  /// Buffers acquire() created.
  size_t created() const;

  /// Whether `data` is the start of a buffer acquire() created and release()
  /// has not freed (up to 4,096 are remembered): how a consumer proves it
  /// got the very memory a producer filled, not a copy of it.
  bool made(const void* data) const;

private:
  mutable std::mutex mutex_;
  size_t capacity_;
  size_t reused_ = 0;
  size_t created_ = 0;
  std::vector<std::vector<char>> idle_;
  static constexpr size_t max_tracked = 4096;
  std::set<const void*> made_;
};

/// Advises the kernel to back [data, data + bytes) with transparent huge
/// pages where it can (the 2 MiB-aligned part; THP mode "madvise" or
/// "always"). Returns whether the advice was taken; harmless if not.
bool advise_huge_pages(void* data, size_t bytes) noexcept;

} // namespace stoker
