#include "stoker/permutation.hpp"

#include "stoker/counter_rng.hpp"

namespace stoker {

permutation::permutation(uint64_t n, uint64_t key) noexcept
  : n_(n), key_(mix64(key)), half_bits_(1) {
  // Domain 2^(2*half_bits) >= n, so cycle walking takes < 4 steps on average.
  while (half_bits_ < 32 && (uint64_t{1} << (2 * half_bits_)) < n)
    ++half_bits_;
  half_mask_ = (uint64_t{1} << half_bits_) - 1;
}

uint64_t permutation::feistel(uint64_t x) const noexcept {
  uint64_t left = x >> half_bits_;
  uint64_t right = x & half_mask_;
  for (uint64_t round = 0; round < 4; ++round) {
    uint64_t f = mix64(key_ ^ mix64(right + (round << 58))) & half_mask_;
    uint64_t next_right = left ^ f;
    left = right;
    right = next_right;
  }
  return (left << half_bits_) | right;
}

uint64_t permutation::operator()(uint64_t i) const noexcept {
  // A bijection on the domain maps the cycle through i back into [0, n).
  uint64_t x = feistel(i);
  while (x >= n_)
    x = feistel(x);
  return x;
}

} // namespace stoker
