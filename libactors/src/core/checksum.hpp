#pragma once

#include <cstddef>
#include <cstdint>

#include "stoker/counter_rng.hpp"

namespace stoker {

/// A fast 64-bit checksum of `n` bytes (32 independent multiply-rotate
/// lanes, vectorized where the CPU allows, then a SplitMix64 finish); the
/// same value on every CPU. Not cryptographic: it catches torn,
/// truncated or mixed-up buffers between a worker and a trainer.
uint64_t checksum64(const void* data, size_t n) noexcept;

/// The same through a chosen path (tests compare the paths); requires
/// supports(path).
uint64_t checksum64(const void* data, size_t n, simd_path path) noexcept;

/// Copies `n` bytes from `src` to `dst` (no overlap) and returns their
/// checksum64, in one pass: a stage that writes its output anyway stamps
/// it for free.
uint64_t copy_checksum64(void* dst, const void* src, size_t n) noexcept;

/// The same through a chosen path.
uint64_t copy_checksum64(void* dst, const void* src, size_t n,
                         simd_path path) noexcept;

} // namespace stoker
