#pragma once

// The simulator's random numbers (cluster_sim.cpp, sim_scenario.cpp).
// Internal.

#include <cstdint>

namespace stoker::detail {

/// splitmix64 and the draws built on it: the same numbers on every
/// standard library (std:: distributions are implementation-defined).
class sim_random {
public:
  explicit sim_random(uint64_t seed) : state_(seed) {
    // nop
  }

  uint64_t next() noexcept {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

  /// Uniform in (0, 1].
  double uniform() noexcept {
    return static_cast<double>((next() >> 11) + 1) * 0x1.0p-53;
  }

private:
  uint64_t state_;
};

} // namespace stoker::detail
