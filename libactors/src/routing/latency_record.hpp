#pragma once

#include <array>
#include <cstdint>

namespace stoker {

/// Durations (lease to ack) in logarithmic buckets, 5% wide from 10 us to
/// about 40 minutes, so a run of any length keeps them in 2 KB and a
/// percentile is exact to within 5%. Plain code, owned by the router
/// actor; not thread-safe.
class latency_record {
public:
  static constexpr int buckets = 400;

  /// One duration.
  void add(uint64_t ns) noexcept;

  /// Durations added so far.
  uint64_t count() const noexcept { return count_; }

  /// The `p`-th percentile (0 < p <= 100) in milliseconds: the upper bound
  /// of the bucket it falls in; 0 with nothing added.
  double percentile_ms(double p) const noexcept;

private:
  std::array<uint64_t, buckets> counts_{};
  uint64_t count_ = 0;
};

} // namespace stoker
