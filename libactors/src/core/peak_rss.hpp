#pragma once

#include <cstdint>

#include <sys/resource.h>

namespace stoker::detail {

/// The calling process's peak resident set size so far, in bytes (0 if the
/// system cannot say). Printed by every node when it exits, so memory can
/// be compared across runs (tools/bench/bench-router).
inline uint64_t peak_rss_bytes() noexcept {
  rusage usage{};
  if (::getrusage(RUSAGE_SELF, &usage) != 0)
    return 0;
  return static_cast<uint64_t>(usage.ru_maxrss) * 1024; // Linux: kilobytes
}

} // namespace stoker::detail
