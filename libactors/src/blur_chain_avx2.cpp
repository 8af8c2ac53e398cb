// The blur chain for AVX2 with FMA (compiled with -mavx2 -mfma; run only
// where the CPU has both: see apply_blur_stage).

#include <immintrin.h>

#include "stoker/detail/blur_chain.hpp"

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
};

} // namespace stoker::detail::avx2

#define STOKER_BLUR_NS avx2
#include "stoker/detail/blur_chain_impl.hpp"
#undef STOKER_BLUR_NS

namespace stoker::detail {

void blur_chain_avx2(float* plane, uint32_t h, uint32_t w, const float* taps,
                     uint32_t calls, uint32_t radius, float* scratch) noexcept {
  avx2::run_chain(plane, h, w, taps, calls, radius, scratch);
}

uint64_t fma_peak_avx2(uint64_t iterations, float* sink) noexcept {
  __m256 acc[10];
  for (int i = 0; i < 10; ++i)
    acc[i] = _mm256_set1_ps(static_cast<float>(i) * 1e-3f);
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (uint64_t n = 0; n < iterations; ++n)
    for (int i = 0; i < 10; ++i)
      acc[i] = _mm256_fmadd_ps(acc[i], a, b);
  __m256 sum = acc[0];
  for (int i = 1; i < 10; ++i)
    sum = _mm256_add_ps(sum, acc[i]);
  _mm256_storeu_ps(sink, sum);
  return iterations * 10 * 8 * 2;
}

} // namespace stoker::detail
