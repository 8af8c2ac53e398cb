#pragma once

// stoker layer: core

#include <cstdint>

namespace stoker {

/// A keyed pseudo-random permutation of [0, n) in O(1) memory: a 4-round
/// Feistel network on the smallest even-bit power-of-two domain >= n, with
/// cycle walking back into [0, n). Lets the source shuffle a dataset of any
/// size without materializing the order. Plain value type, any thread.
class permutation {
public:
  permutation(uint64_t n, uint64_t key) noexcept;

  /// The element at position `i` (requires i < size()).
  uint64_t operator()(uint64_t i) const noexcept;

  uint64_t size() const noexcept { return n_; }

private:
  uint64_t feistel(uint64_t x) const noexcept;

  uint64_t n_;
  uint64_t key_;
  unsigned half_bits_;
  uint64_t half_mask_;
};

} // namespace stoker
