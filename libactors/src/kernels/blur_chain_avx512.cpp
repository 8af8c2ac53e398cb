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

fp_peaks fp_peaks_avx512(uint64_t iterations, float* sink, double (*now)()) {
  return avx512::peaks(iterations, sink, now);
}

namespace {

// Lane p of channel ch's vector is interleaved float 3p + ch of three
// vectors in a row: from the first two through one two-source permute
// (index mod 32), the lanes past them (mask `third`) from the third.
struct interleave3 {
  __m512i pair[3], from_third[3];
  __mmask16 third[3];
  interleave3() {
    for (int ch = 0; ch < 3; ++ch) {
      alignas(64) int pair_idx[16], third_idx[16];
      unsigned mask = 0;
      for (int p = 0; p < 16; ++p) {
        int at = 3 * p + ch;
        pair_idx[p] = at & 31;
        third_idx[p] = at >= 32 ? at - 32 : 0;
        mask |= at >= 32 ? 1u << p : 0u;
      }
      pair[ch] = _mm512_load_si512(pair_idx);
      from_third[ch] = _mm512_load_si512(third_idx);
      third[ch] = static_cast<__mmask16>(mask);
    }
  }
};

// The reverse: lane j of output vector k is pixel (16k + j) / 3's channel
// (16k + j) % 3: channels 0 and 1 through one two-source permute, channel
// 2's lanes (mask `blue`) from the third plane.
struct deinterleave3 {
  __m512i pair[3], from_blue[3];
  __mmask16 blue[3];
  deinterleave3() {
    for (int k = 0; k < 3; ++k) {
      alignas(64) int pair_idx[16], blue_idx[16];
      unsigned mask = 0;
      for (int j = 0; j < 16; ++j) {
        int pixel = (16 * k + j) / 3, ch = (16 * k + j) % 3;
        pair_idx[j] = ch == 1 ? 16 + pixel : pixel;
        blue_idx[j] = pixel;
        mask |= ch == 2 ? 1u << j : 0u;
      }
      pair[k] = _mm512_load_si512(pair_idx);
      from_blue[k] = _mm512_load_si512(blue_idx);
      blue[k] = static_cast<__mmask16>(mask);
    }
  }
};

} // namespace

void hwc3_to_chw_avx512(const float* src, float* dst, uint64_t pixels,
                        uint64_t plane_stride) noexcept {
  const interleave3 m;
  uint64_t p = 0;
  for (; p + 16 <= pixels; p += 16) {
    const float* in = src + 3 * p;
    auto a = _mm512_loadu_ps(in);
    auto b = _mm512_loadu_ps(in + 16);
    auto c = _mm512_loadu_ps(in + 32);
    for (int ch = 0; ch < 3; ++ch) {
      auto v = _mm512_permutex2var_ps(a, m.pair[ch], b);
      v = _mm512_mask_permutexvar_ps(v, m.third[ch], m.from_third[ch], c);
      _mm512_storeu_ps(dst + ch * plane_stride + p, v);
    }
  }
  for (; p < pixels; ++p)
    for (int ch = 0; ch < 3; ++ch)
      dst[ch * plane_stride + p] = src[3 * p + ch];
}

void chw3_to_hwc_avx512(const float* src, float* dst,
                        uint64_t pixels) noexcept {
  const deinterleave3 m;
  uint64_t p = 0;
  for (; p + 16 <= pixels; p += 16) {
    auto r = _mm512_loadu_ps(src + p);
    auto g = _mm512_loadu_ps(src + pixels + p);
    auto b = _mm512_loadu_ps(src + 2 * pixels + p);
    float* out = dst + 3 * p;
    for (int k = 0; k < 3; ++k) {
      auto v = _mm512_permutex2var_ps(r, m.pair[k], g);
      v = _mm512_mask_permutexvar_ps(v, m.blue[k], m.from_blue[k], b);
      _mm512_storeu_ps(out + 16 * k, v);
    }
  }
  for (; p < pixels; ++p)
    for (int ch = 0; ch < 3; ++ch)
      dst[3 * p + ch] = src[ch * pixels + p];
}

} // namespace stoker::detail
