#include "routing/latency_record.hpp"

#include <cmath>

namespace stoker {

namespace {

constexpr double first_ns = 10'000.0; // the first bucket's upper bound
constexpr double growth = 1.05;

} // namespace

void latency_record::add(uint64_t ns) noexcept {
  int b = 0;
  if (static_cast<double>(ns) > first_ns)
    b = static_cast<int>(
      std::ceil(std::log(static_cast<double>(ns) / first_ns) / std::log(growth)));
  counts_[static_cast<size_t>(b < buckets ? b : buckets - 1)] += 1;
  ++count_;
}

double latency_record::percentile_ms(double p) const noexcept {
  if (count_ == 0)
    return 0.0;
  auto rank = static_cast<uint64_t>(std::ceil(p / 100.0
                                              * static_cast<double>(count_)));
  if (rank == 0)
    rank = 1;
  uint64_t seen = 0;
  for (int b = 0; b < buckets; ++b) {
    seen += counts_[static_cast<size_t>(b)];
    if (seen >= rank)
      return first_ns * std::pow(growth, b) * 1e-6;
  }
  return first_ns * std::pow(growth, buckets - 1) * 1e-6;
}

} // namespace stoker
