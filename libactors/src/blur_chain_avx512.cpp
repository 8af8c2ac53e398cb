// The blur chain for AVX-512F (compiled with -mavx512f -mfma; run only
// where the CPU has it: see apply_blur_stage).

#include <immintrin.h>

#include "stoker/detail/blur_chain.hpp"

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
};

} // namespace stoker::detail::avx512

#define STOKER_BLUR_NS avx512
#include "stoker/detail/blur_chain_impl.hpp"
#undef STOKER_BLUR_NS

namespace stoker::detail {

void blur_chain_avx512(float* plane, uint32_t h, uint32_t w,
                       const float* taps, uint32_t calls, uint32_t radius,
                       float* scratch) noexcept {
  avx512::run_chain(plane, h, w, taps, calls, radius, scratch);
}

uint64_t fma_peak_avx512(uint64_t iterations, float* sink) noexcept {
  __m512 acc[10];
  for (int i = 0; i < 10; ++i)
    acc[i] = _mm512_set1_ps(static_cast<float>(i) * 1e-3f);
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (uint64_t n = 0; n < iterations; ++n)
    for (int i = 0; i < 10; ++i)
      acc[i] = _mm512_fmadd_ps(acc[i], a, b);
  __m512 sum = acc[0];
  for (int i = 1; i < 10; ++i)
    sum = _mm512_add_ps(sum, acc[i]);
  _mm512_storeu_ps(sink, sum);
  return iterations * 10 * 16 * 2;
}

} // namespace stoker::detail
