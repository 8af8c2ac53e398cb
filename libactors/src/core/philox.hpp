#pragma once

#include <cstdint>

namespace stoker::detail {

// Philox4x32-10 constants (Salmon et al., SC'11; Random123).
constexpr uint32_t philox_m0 = 0xD2511F53u;
constexpr uint32_t philox_m1 = 0xCD9E8D57u;
constexpr uint32_t philox_w0 = 0x9E3779B9u;
constexpr uint32_t philox_w1 = 0xBB67AE85u;
constexpr int philox_rounds = 10;

/// One Philox4x32-10 block in place, scalar. The vector kernels in
/// normal_kernels.cpp compute the same function on 8 or 16 counters.
inline void philox_block(uint32_t& c0, uint32_t& c1, uint32_t& c2,
                         uint32_t& c3, uint32_t k0, uint32_t k1) noexcept {
  for (int r = 0; r < philox_rounds; ++r) {
    uint64_t p0 = static_cast<uint64_t>(philox_m0) * c0;
    uint64_t p1 = static_cast<uint64_t>(philox_m1) * c2;
    c0 = static_cast<uint32_t>(p1 >> 32) ^ c1 ^ k0;
    c1 = static_cast<uint32_t>(p1);
    c2 = static_cast<uint32_t>(p0 >> 32) ^ c3 ^ k1;
    c3 = static_cast<uint32_t>(p0);
    k0 += philox_w0;
    k1 += philox_w1;
  }
}

/// Blocks per kernel call: 16 blocks = 64 floats.
constexpr unsigned normal_lanes = 16;

/// Where a stream's blocks live: counter words 1..3 and the key are fixed,
/// word 0 is the block index.
struct philox_stream {
  uint32_t k0, k1; ///< key
  uint32_t stage;  ///< counter word 1
  uint32_t c2, c3; ///< counter words 2 and 3 (the sample id)
};

/// Writes 4 * normal_lanes standard normals from blocks first..first+15 of
/// `s` to `out`, block b giving out[4b .. 4b+3]. Three builds of one
/// algorithm; every one returns the same bits (see counter_rng.hpp).
void normal_chunk_portable(const philox_stream& s, uint32_t first,
                           float* out) noexcept;
void normal_chunk_avx2(const philox_stream& s, uint32_t first,
                       float* out) noexcept;
void normal_chunk_avx512(const philox_stream& s, uint32_t first,
                         float* out) noexcept;
/// Four chunks at once (blocks first..first+63 to out[0..255]), the same
/// bits as four normal_chunk_avx512 calls: four independent chains keep
/// the multiplies' and polynomials' latency overlapped.
void normal_chunks4_avx512(const philox_stream& s, uint32_t first,
                           float* out) noexcept;

} // namespace stoker::detail
