// The blur chain for AVX-512F (compiled with -mavx512f -mfma; run only
// where the CPU has it: see apply_blur_stage).

#include <immintrin.h>

#include "kernels/blur_chain.hpp"

namespace stoker::detail::avx512 {

struct vec {
  using type = __m512;
  static constexpr int lanes = 16;
  static type load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, type v) { _mm512_storeu_ps(p, v); }
  static type set1(float x) { return _mm512_set1_ps(x); }
  static type add(type a, type b) { return _mm512_add_ps(a, b); }
  static type mul(type a, type b) { return _mm512_mul_ps(a, b); }
  static type fma(type a, type b, type c) { return _mm512_fmadd_ps(a, b, c); }
  /// Rows 0..15 of a 16 x 16 block to its columns, in place: pairs
  /// interleaved, then 2 x 2 and 4 x 4 blocks of 128-bit lanes (64
  /// shuffles for 16 vectors). The zero-masked forms with every lane
  /// kept are the plain instructions; the plain intrinsics' undefined
  /// source trips GCC 12's uninitialized warning.
  static void transpose(type* rows) {
    type t[16];
    for (int i = 0; i < 16; i += 2) {
      t[i] = _mm512_maskz_unpacklo_ps(0xFFFF, rows[i], rows[i + 1]);
      t[i + 1] = _mm512_maskz_unpackhi_ps(0xFFFF, rows[i], rows[i + 1]);
    }
    // u[4g + j]: in 128-bit lane L, rows 4g..4g+3 of column 4L + j.
    type u[16];
    for (int g = 0; g < 4; ++g) {
      u[4 * g] = _mm512_maskz_shuffle_ps(0xFFFF, t[4 * g], t[4 * g + 2], 0x44);
      u[4 * g + 1] =
          _mm512_maskz_shuffle_ps(0xFFFF, t[4 * g], t[4 * g + 2], 0xEE);
      u[4 * g + 2] =
          _mm512_maskz_shuffle_ps(0xFFFF, t[4 * g + 1], t[4 * g + 3], 0x44);
      u[4 * g + 3] =
          _mm512_maskz_shuffle_ps(0xFFFF, t[4 * g + 1], t[4 * g + 3], 0xEE);
    }
    for (int j = 0; j < 4; ++j) {
      auto v0 = _mm512_maskz_shuffle_f32x4(0xFFFF, u[j], u[4 + j], 0x88);
      auto v1 = _mm512_maskz_shuffle_f32x4(0xFFFF, u[j], u[4 + j], 0xDD);
      auto v2 = _mm512_maskz_shuffle_f32x4(0xFFFF, u[8 + j], u[12 + j], 0x88);
      auto v3 = _mm512_maskz_shuffle_f32x4(0xFFFF, u[8 + j], u[12 + j], 0xDD);
      rows[j] = _mm512_maskz_shuffle_f32x4(0xFFFF, v0, v2, 0x88);
      rows[4 + j] = _mm512_maskz_shuffle_f32x4(0xFFFF, v1, v3, 0x88);
      rows[8 + j] = _mm512_maskz_shuffle_f32x4(0xFFFF, v0, v2, 0xDD);
      rows[12 + j] = _mm512_maskz_shuffle_f32x4(0xFFFF, v1, v3, 0xDD);
    }
  }
};

} // namespace stoker::detail::avx512

#define STOKER_BLUR_NS avx512
#include "kernels/blur_chain_impl.hpp"
#undef STOKER_BLUR_NS

namespace stoker::detail {

void blur_chain_avx512(float* plane, uint32_t h, uint32_t w, const float* taps,
                       uint32_t calls, uint32_t radius,
                       float* scratch) noexcept {
  avx512::run_chain(plane, h, w, taps, calls, radius, scratch);
}

uint64_t fma_peak_avx512(uint64_t iterations, float* sink) noexcept {
  return avx512::fma_peak(iterations, sink);
}

} // namespace stoker::detail
