// Standard normal kernels: Philox4x32-10 blocks, then Box-Muller.
//
// The Philox part is written with intrinsics for AVX2 and AVX-512 (the
// compiler does not vectorize the 32x32->64 multiply on AVX2); Box-Muller is
// plain code that each target's build vectorizes. Only integer operations
// and correctly rounded IEEE float operations (+ - * / sqrt, int->float) are
// used, in the same order, with -ffp-contract=off, so all paths agree bit
// for bit.

#include "core/philox.hpp"

#include <cmath>
#include <cstring>

#include "core/float_bits.hpp"

#if defined(__x86_64__) || defined(__i386__)
#  include <immintrin.h>
#  define STOKER_X86 1
#endif

namespace stoker::detail {

namespace {

constexpr unsigned lanes = normal_lanes;

inline float to_float(uint32_t small_value) {
  // Through int32 (the values fit): unsigned-to-float has no vector
  // instruction before AVX-512.
  return static_cast<float>(static_cast<int32_t>(small_value));
}

// Natural log for x in (0, 1], Cephes logf polynomial (rel. error ~1e-7).
inline float log_unit(float x) {
  uint32_t bits = bits_of(x);
  int32_t e = static_cast<int32_t>(bits >> 23) - 126;
  uint32_t mantissa = bits & 0x007FFFFFu;
  float m = float_of(mantissa | 0x3F000000u); // [0.5, 1)
  // Move m into [sqrt(0.5), sqrt(2)) around 1. `small` is m < sqrt(0.5)
  // (0x3F3504F3), computed without a branch so every target vectorizes it.
  float small = to_float((mantissa - 0x3504F3u) >> 31);
  float ef = static_cast<float>(e) - small;
  float t = m + small * m - 1.0f;
  float z = t * t;
  float p = 7.0376836292e-2f;
  p = p * t - 1.1514610310e-1f;
  p = p * t + 1.1676998740e-1f;
  p = p * t - 1.2420140846e-1f;
  p = p * t + 1.4249322787e-1f;
  p = p * t - 1.6668057665e-1f;
  p = p * t + 2.0000714765e-1f;
  p = p * t - 2.4999993993e-1f;
  p = p * t + 3.3333331174e-1f;
  float y = t * z * p;
  y = y + ef * -2.12194440e-4f;
  y = y - 0.5f * z;
  return t + y + ef * 0.693359375f;
}

// Two standard normals from two 32-bit words. The angle's quadrant comes
// from the top bits of `wa`, so sin/cos only need the polynomial on
// [-pi/4, pi/4] and a branch-free rotation.
inline void box_muller(uint32_t wr, uint32_t wa, float& z0, float& z1) {
  constexpr float two_pow_m24 = 5.9604644775390625e-8f;
  float u = to_float((wr >> 8) + 1u) * two_pow_m24; // (0, 1]
  float r = std::sqrt(-2.0f * log_unit(u));
  uint32_t q = wa >> 30;
  float f = to_float((wa >> 6) & 0xFFFFFFu) * two_pow_m24 - 0.5f;
  float x = f * 1.57079632679489662f; // [-pi/4, pi/4)
  float x2 = x * x;
  float s = ((-1.9515295891e-4f * x2 + 8.3321608736e-3f) * x2
             - 1.6666654611e-1f) * x2 * x + x;
  float c = ((2.443315711809948e-5f * x2 - 1.388731625493765e-3f) * x2
             + 4.166664568298827e-2f) * x2 * x2 - 0.5f * x2 + 1.0f;
  // angle = q * pi/2 + x: rotate (c, s) by q quarter turns, swapping them
  // and flipping sign bits (selects every target vectorizes as blends and
  // xors; c > 0 and s is never -0, so these are the bits the arithmetic
  // form swap * c + (1 - swap) * s, times +-1, gave).
  bool swap = (q & 1u) != 0;
  uint32_t sin_flip = (q >> 1) << 31;
  uint32_t cos_flip = ((q ^ (q >> 1)) & 1u) << 31;
  float sin_a = float_of(bits_of(swap ? c : s) ^ sin_flip);
  float cos_a = float_of(bits_of(swap ? s : c) ^ cos_flip);
  z0 = r * cos_a;
  z1 = r * sin_a;
}

// The Philox words of `n` consecutive blocks, structure of arrays.
template <unsigned n = lanes>
struct words {
  alignas(64) uint32_t a[n], b[n], c[n], d[n];
};

// Box-Muller over `n` blocks, interleaved back to block order. Inlined into
// each target's kernel so it is vectorized for that target.
template <unsigned n>
__attribute__((always_inline)) inline void box_muller_chunk(const words<n>& w,
                                                            float* out) {
  float z[4][n];
  for (unsigned l = 0; l < n; ++l) {
    box_muller(w.a[l], w.b[l], z[0][l], z[1][l]);
    box_muller(w.c[l], w.d[l], z[2][l], z[3][l]);
  }
  for (unsigned l = 0; l < n; ++l)
    for (unsigned k = 0; k < 4; ++k)
      out[4 * l + k] = z[k][l];
}

} // namespace

void normal_chunk_portable(const philox_stream& s, uint32_t first,
                           float* out) noexcept {
  words<> w;
  for (unsigned l = 0; l < lanes; ++l) {
    w.a[l] = first + l;
    w.b[l] = s.stage;
    w.c[l] = s.c2;
    w.d[l] = s.c3;
    philox_block(w.a[l], w.b[l], w.c[l], w.d[l], s.k0, s.k1);
  }
  box_muller_chunk(w, out);
}

#ifdef STOKER_X86

// Each kernel is compiled for its own target (the pragma also covers the
// helpers and the inlined Box-Muller), and chosen at run time.
#pragma GCC push_options
#pragma GCC target("avx2")

// Both halves of a 32x32 product, 8 lanes: even lanes from one 64-bit
// multiply, odd lanes from another, blended (vpmulld for the low half
// would take two more multiply uops and ten cycles of latency).
static inline void mul_wide_avx2(__m256i x, __m256i m, __m256i& hi,
                                 __m256i& lo) {
  __m256i even = _mm256_mul_epu32(x, m);
  __m256i odd = _mm256_mul_epu32(_mm256_srli_epi64(x, 32), m);
  hi = _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA);
  lo = _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA);
}

void normal_chunk_avx2(const philox_stream& s, uint32_t first, float* out) noexcept {
  const __m256i m0 = _mm256_set1_epi32(static_cast<int>(philox_m0));
  const __m256i m1 = _mm256_set1_epi32(static_cast<int>(philox_m1));
  words<> w;
  for (unsigned half = 0; half < lanes; half += 8) {
    __m256i c0 = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int>(first + half)),
                                  _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    __m256i c1 = _mm256_set1_epi32(static_cast<int>(s.stage));
    __m256i c2 = _mm256_set1_epi32(static_cast<int>(s.c2));
    __m256i c3 = _mm256_set1_epi32(static_cast<int>(s.c3));
    uint32_t k0 = s.k0, k1 = s.k1;
    for (int r = 0; r < philox_rounds; ++r) {
      __m256i hi0, lo0, hi1, lo1;
      mul_wide_avx2(c0, m0, hi0, lo0);
      mul_wide_avx2(c2, m1, hi1, lo1);
      c0 = _mm256_xor_si256(_mm256_xor_si256(hi1, c1),
                            _mm256_set1_epi32(static_cast<int>(k0)));
      c1 = lo1;
      c2 = _mm256_xor_si256(_mm256_xor_si256(hi0, c3),
                            _mm256_set1_epi32(static_cast<int>(k1)));
      c3 = lo0;
      k0 += philox_w0;
      k1 += philox_w1;
    }
    _mm256_store_si256(reinterpret_cast<__m256i*>(w.a + half), c0);
    _mm256_store_si256(reinterpret_cast<__m256i*>(w.b + half), c1);
    _mm256_store_si256(reinterpret_cast<__m256i*>(w.c + half), c2);
    _mm256_store_si256(reinterpret_cast<__m256i*>(w.d + half), c3);
  }
  box_muller_chunk(w, out);
}

#pragma GCC pop_options
#pragma GCC push_options
#pragma GCC target("avx512f,avx512vl,avx512dq,avx512bw")
// GCC 12 warns about _mm512_undefined_* inside its own headers.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"

// Both halves of a 32x32 product, 16 lanes, as mul_wide_avx2.
static inline void mul_wide_avx512(__m512i x, __m512i m, __m512i& hi,
                                   __m512i& lo) {
  __m512i even = _mm512_mul_epu32(x, m);
  __m512i odd = _mm512_mul_epu32(_mm512_srli_epi64(x, 32), m);
  hi = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(even, 32), odd);
  lo = _mm512_mask_blend_epi32(0xAAAA, even, _mm512_slli_epi64(odd, 32));
}

// Philox on `n` vectors of 16 counters at once (independent chains, so
// the multiplies' latency overlaps), then Box-Muller on all 16n blocks.
template <unsigned n>
__attribute__((always_inline)) inline void normal_blocks_avx512(
  const philox_stream& s, uint32_t first, float* out) {
  const __m512i m0 = _mm512_set1_epi32(static_cast<int>(philox_m0));
  const __m512i m1 = _mm512_set1_epi32(static_cast<int>(philox_m1));
  const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10,
                                         11, 12, 13, 14, 15);
  __m512i c0[n], c1[n], c2[n], c3[n];
  for (unsigned v = 0; v < n; ++v) {
    c0[v] = _mm512_add_epi32(
      _mm512_set1_epi32(static_cast<int>(first + v * lanes)), iota);
    c1[v] = _mm512_set1_epi32(static_cast<int>(s.stage));
    c2[v] = _mm512_set1_epi32(static_cast<int>(s.c2));
    c3[v] = _mm512_set1_epi32(static_cast<int>(s.c3));
  }
  uint32_t k0 = s.k0, k1 = s.k1;
  for (int r = 0; r < philox_rounds; ++r) {
    const __m512i key0 = _mm512_set1_epi32(static_cast<int>(k0));
    const __m512i key1 = _mm512_set1_epi32(static_cast<int>(k1));
    for (unsigned v = 0; v < n; ++v) {
      __m512i hi0, lo0, hi1, lo1;
      mul_wide_avx512(c0[v], m0, hi0, lo0);
      mul_wide_avx512(c2[v], m1, hi1, lo1);
      c0[v] = _mm512_ternarylogic_epi32(hi1, c1[v], key0, 0x96); // a^b^c
      c1[v] = lo1;
      c2[v] = _mm512_ternarylogic_epi32(hi0, c3[v], key1, 0x96);
      c3[v] = lo0;
    }
    k0 += philox_w0;
    k1 += philox_w1;
  }
  words<n * lanes> w;
  for (unsigned v = 0; v < n; ++v) {
    _mm512_store_si512(w.a + v * lanes, c0[v]);
    _mm512_store_si512(w.b + v * lanes, c1[v]);
    _mm512_store_si512(w.c + v * lanes, c2[v]);
    _mm512_store_si512(w.d + v * lanes, c3[v]);
  }
  box_muller_chunk(w, out);
}

void normal_chunk_avx512(const philox_stream& s, uint32_t first,
                         float* out) noexcept {
  normal_blocks_avx512<1>(s, first, out);
}

void normal_chunks4_avx512(const philox_stream& s, uint32_t first,
                           float* out) noexcept {
  normal_blocks_avx512<4>(s, first, out);
}

#pragma GCC diagnostic pop
#pragma GCC pop_options

#else // not x86: the vector paths are never selected (supports() is false)

void normal_chunk_avx2(const philox_stream& s, uint32_t first,
                       float* out) noexcept {
  normal_chunk_portable(s, first, out);
}

void normal_chunk_avx512(const philox_stream& s, uint32_t first,
                         float* out) noexcept {
  normal_chunk_portable(s, first, out);
}

void normal_chunks4_avx512(const philox_stream& s, uint32_t first,
                           float* out) noexcept {
  for (unsigned c = 0; c < 4; ++c)
    normal_chunk_portable(s, first + c * lanes, out + c * 4 * lanes);
}

#endif

} // namespace stoker::detail
