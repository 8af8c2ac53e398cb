#pragma once

#include <cstddef>
#include <cstdint>

namespace stoker {

/// A fast 64-bit checksum of `n` bytes (four independent multiply-rotate
/// lanes, then a SplitMix64 finish). Not cryptographic: it catches torn,
/// truncated or mixed-up buffers between a worker and a trainer.
uint64_t checksum64(const void* data, size_t n) noexcept;

} // namespace stoker
