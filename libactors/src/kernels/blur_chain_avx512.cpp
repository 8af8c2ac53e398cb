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
  /// Lanes k..k+15 of `lo` then `hi` (0 <= k <= 16): one valignd instead of
  /// a load that splits a cache line. The immediate must be a constant: a
  /// switch the unrolled tap loop folds away. (The zero-masked form: the
  /// plain one's undefined source trips GCC 12's uninitialized warning.)
  static constexpr bool has_window = true;
  static type window(type lo, type hi, int k) {
    auto a = _mm512_castps_si512(lo);
    auto b = _mm512_castps_si512(hi);
    switch (k) {
#define STOKER_WINDOW(K)                                                       \
  case K:                                                                      \
    return _mm512_castsi512_ps(_mm512_maskz_alignr_epi32(0xFFFF, b, a, K));
      STOKER_WINDOW(1) STOKER_WINDOW(2) STOKER_WINDOW(3) STOKER_WINDOW(4)
      STOKER_WINDOW(5) STOKER_WINDOW(6) STOKER_WINDOW(7) STOKER_WINDOW(8)
      STOKER_WINDOW(9) STOKER_WINDOW(10) STOKER_WINDOW(11) STOKER_WINDOW(12)
      STOKER_WINDOW(13) STOKER_WINDOW(14) STOKER_WINDOW(15)
#undef STOKER_WINDOW
      case 16:
        return hi;
      default:
        return lo;
    }
  }
};

} // namespace stoker::detail::avx512

#define STOKER_BLUR_NS avx512
#include "kernels/blur_chain_impl.hpp"
#undef STOKER_BLUR_NS

namespace stoker::detail {

void blur_chain_avx512(float* plane, uint32_t h, uint32_t w,
                       const float* taps, uint32_t calls, uint32_t radius,
                       float* scratch) noexcept {
  avx512::run_chain(plane, h, w, taps, calls, radius, scratch);
}

uint64_t fma_peak_avx512(uint64_t iterations, float* sink) noexcept {
  return avx512::fma_peak(iterations, sink);
}

} // namespace stoker::detail
