// The blur chain one float at a time, for any CPU (and to check the vector
// paths against): the same operations in the same order, the fused
// multiply-add through __builtin_fmaf (exactly rounded, like the vector
// instructions).

#include "kernels/blur_chain.hpp"

namespace stoker::detail::scalar {

struct vec {
  using type = float;
  static constexpr int lanes = 1;
  static type load(const float* p) { return *p; }
  static void store(float* p, type v) { *p = v; }
  static type set1(float x) { return x; }
  static type add(type a, type b) { return a + b; }
  static type mul(type a, type b) { return a * b; }
  static type fma(type a, type b, type c) { return __builtin_fmaf(a, b, c); }
  static void transpose(type*) {} // a 1 x 1 block is its own transpose
};

} // namespace stoker::detail::scalar

#define STOKER_BLUR_NS scalar
#include "kernels/blur_chain_impl.hpp"
#undef STOKER_BLUR_NS

namespace stoker::detail {

size_t blur_chain_scratch(uint32_t height, uint32_t width,
                          uint32_t radius) noexcept {
  size_t length = height > width ? height : width;
  return 2 * (length + 2 * size_t{radius}) * 16; // two strips, widest ISA
}

chain_issue chain_issue_per_output(uint32_t radius) noexcept {
  return chain_issue{uint64_t{radius} + 1, uint64_t{radius}};
}

uint64_t chain_output_vectors(uint32_t h, uint32_t w, uint32_t calls,
                              uint32_t lanes) noexcept {
  if (lanes == 0)
    return 0;
  auto strips = [lanes](uint64_t across) {
    return (across + lanes - 1) / lanes;
  };
  // Vertical halves: a strip per `lanes` columns, h positions each;
  // horizontal ones: a strip per `lanes` rows, w positions each.
  return uint64_t{calls} * (strips(w) * h + strips(h) * w);
}

double chain_seconds_bound(const fp_peaks& peak, double vectors,
                           uint32_t radius) noexcept {
  if (peak.fma_per_s <= 0 || peak.add_per_s <= 0 || peak.mixed_per_s <= 0)
    return 0;
  auto issue = chain_issue_per_output(radius);
  auto fma = static_cast<double>(issue.fma_unit) * vectors;
  auto adds = static_cast<double>(issue.adds) * vectors;
  double seconds = fma / peak.fma_per_s;
  if (adds / peak.add_per_s > seconds)
    seconds = adds / peak.add_per_s;
  if ((fma + adds) / peak.mixed_per_s > seconds)
    seconds = (fma + adds) / peak.mixed_per_s;
  return seconds;
}

void blur_chain_scalar(float* plane, uint32_t h, uint32_t w, const float* taps,
                       uint32_t calls, uint32_t radius,
                       float* scratch) noexcept {
  scalar::run_chain(plane, h, w, taps, calls, radius, scratch);
}

} // namespace stoker::detail
