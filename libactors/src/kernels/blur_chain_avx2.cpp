// The blur chain for AVX2 with FMA (compiled with -mavx2 -mfma; run only
// where the CPU has both: see apply_blur_stage).

#include <immintrin.h>

#include "kernels/blur_chain.hpp"

namespace stoker::detail::avx2 {

struct vec {
  using type = __m256;
  static constexpr int lanes = 8;
  static type load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, type v) { _mm256_storeu_ps(p, v); }
  static type set1(float x) { return _mm256_set1_ps(x); }
  static type add(type a, type b) { return _mm256_add_ps(a, b); }
  static type mul(type a, type b) { return _mm256_mul_ps(a, b); }
  static type fma(type a, type b, type c) { return _mm256_fmadd_ps(a, b, c); }
  /// Rows 0..7 of an 8 x 8 block to its columns, in place (24 shuffles
  /// for 8 vectors; blur_chain_avx512.cpp's transpose, one stage less).
  static void transpose(type* rows) {
    type t[8], u[8];
    for (int i = 0; i < 8; i += 2) {
      t[i] = _mm256_unpacklo_ps(rows[i], rows[i + 1]);
      t[i + 1] = _mm256_unpackhi_ps(rows[i], rows[i + 1]);
    }
    // u[4g + j]: in 128-bit lane L, rows 4g..4g+3 of column 4L + j.
    for (int g = 0; g < 2; ++g) {
      u[4 * g] = _mm256_shuffle_ps(t[4 * g], t[4 * g + 2], 0x44);
      u[4 * g + 1] = _mm256_shuffle_ps(t[4 * g], t[4 * g + 2], 0xEE);
      u[4 * g + 2] = _mm256_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0x44);
      u[4 * g + 3] = _mm256_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0xEE);
    }
    for (int j = 0; j < 4; ++j) {
      rows[j] = _mm256_permute2f128_ps(u[j], u[4 + j], 0x20);
      rows[4 + j] = _mm256_permute2f128_ps(u[j], u[4 + j], 0x31);
    }
  }
};

} // namespace stoker::detail::avx2

#define STOKER_BLUR_NS avx2
#include "kernels/blur_chain_impl.hpp"
#undef STOKER_BLUR_NS

namespace stoker::detail {

void blur_chain_avx2(float* plane, uint32_t h, uint32_t w, const float* taps,
                     uint32_t calls, uint32_t radius, float* scratch) noexcept {
  avx2::run_chain(plane, h, w, taps, calls, radius, scratch);
}

fp_peaks fp_peaks_avx2(uint64_t iterations, float* sink, double (*now)()) {
  return avx2::peaks(iterations, sink, now);
}

} // namespace stoker::detail
