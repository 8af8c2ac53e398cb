// The blur chain for AVX2 with FMA (compiled with -mavx2 -mfma; run only
// where the CPU has both: see apply_blur_stage).

#include <immintrin.h>

#include "kernels/blur_chain.hpp"

namespace stoker::detail::avx2 {

struct vec {
  // No in-register windows here: the row pass loads every tap (see
  // blur_chain_avx512.cpp); `window` is never called.
  static constexpr bool has_window = false;
  using type = __m256;
  static constexpr int lanes = 8;
  static type load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, type v) { _mm256_storeu_ps(p, v); }
  static type set1(float x) { return _mm256_set1_ps(x); }
  static type add(type a, type b) { return _mm256_add_ps(a, b); }
  static type mul(type a, type b) { return _mm256_mul_ps(a, b); }
  static type fma(type a, type b, type c) { return _mm256_fmadd_ps(a, b, c); }
  static type window(type lo, type, int) { return lo; }
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

uint64_t fma_peak_avx2(uint64_t iterations, float* sink) noexcept {
  return avx2::fma_peak(iterations, sink);
}

} // namespace stoker::detail
