#include "kernels/blur.hpp"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <xmmintrin.h>

#include "stoker/errors.hpp"
#include "stoker/messages.hpp"
#include "core/cpu_features.hpp"
#include "core/checksum.hpp"
#include "kernels/blur_chain.hpp"

// Choosing and running the hand-written blur chain; the chain itself is in
// blur_chain_{avx512,avx2,scalar}.cpp.

namespace stoker {

bool cpu_supports(cpu_isa isa) noexcept {
  switch (isa) {
    case cpu_isa::avx512:
      return this_cpu().avx512f;
    case cpu_isa::avx2:
      return this_cpu().avx2 && this_cpu().fma;
    case cpu_isa::automatic:
    case cpu_isa::scalar:
      return true;
  }
  return false;
}

cpu_isa best_cpu_isa() noexcept {
  for (auto isa : {cpu_isa::avx512, cpu_isa::avx2})
    if (cpu_supports(isa))
      return isa;
  return cpu_isa::scalar;
}

caf::expected<blur_choice> resolve_blur(const blur_params& p) {
  blur_choice out;
  if (p.impl == blur_impl::opencv) {
    if (p.isa != cpu_isa::automatic)
      return make_error(errc::invalid_config,
                        "pipeline.blur-isa = \"" + to_string(p.isa)
                          + "\" with pipeline.blur-impl = \"opencv\": the "
                            "ISA chooses among the stoker chain's paths; "
                            "expected \"auto\" or pipeline.blur-impl = "
                            "\"stoker\"");
    return out;
  }
  if (p.isa != cpu_isa::automatic && !cpu_supports(p.isa))
    return make_error(errc::invalid_config,
                      "pipeline.blur-isa = \"" + to_string(p.isa)
                        + "\": this CPU does not run it (it runs \""
                        + to_string(best_cpu_isa())
                        + "\" at best); expected \"auto\" or one it runs");
  out.isa = p.isa == cpu_isa::automatic ? best_cpu_isa() : p.isa;
  // Auto: the chain where it has vectors (measured faster than OpenCV by
  // tools/bench/bench-peer's stage rows), OpenCV's SIMD where it has none.
  out.impl = p.impl == blur_impl::automatic && out.isa == cpu_isa::scalar
               ? blur_impl::opencv
               : blur_impl::stoker;
  return out;
}

namespace {

// `p` moved up to the next 64-byte boundary (at most 15 floats on): where
// vector loads and stores do not split cache lines.
float* align64(float* p) noexcept {
  auto at = reinterpret_cast<uintptr_t>(p);
  return p + ((64 - at % 64) % 64) / sizeof(float);
}

detail::blur_chain_fn chain_for(cpu_isa isa) noexcept {
  switch (isa) {
    case cpu_isa::avx512:
      return detail::blur_chain_avx512;
    case cpu_isa::avx2:
      return detail::blur_chain_avx2;
    case cpu_isa::scalar:
      return detail::blur_chain_scalar;
    case cpu_isa::automatic:
      break;
  }
  return nullptr;
}

// The chain for `isa` and `kernel_size`, checked: both throw
// std::invalid_argument naming what is wrong.
detail::blur_chain_fn checked_chain(cpu_isa isa, uint32_t kernel_size) {
  if (kernel_size % 2 == 0 || kernel_size > 99)
    throw std::invalid_argument("stoker blur: kernel size "
                                + std::to_string(kernel_size)
                                + ", expected an odd size up to 99");
  auto run = chain_for(isa);
  if (run == nullptr || !cpu_supports(isa))
    throw std::invalid_argument("stoker blur: ISA \"" + to_string(isa)
                                + "\" does not run here (this CPU runs \""
                                + to_string(best_cpu_isa()) + "\" at best)");
  return run;
}

// Subnormal floats flushed to zero (MXCSR's FTZ and DAZ) on this thread
// while it lives, the previous mode restored after, as TensorFlow's
// ScopedFlushDenormal does. A call's taps can be subnormal (at radius k
// for sigma near k / sqrt(2 * 87..103): about 5% of the article's calls),
// and so can their products with small pixels; each such operation takes
// a microcode assist of ~100 cycles, which halved the chain's rate
// (1,215 against 2,492 images/s on the 2-core Xeon). The values flushed
// are below 1.2e-38, far under the chain's 1e-5 agreement; every ISA
// flushes alike, so they still agree bit for bit.
class denormals_flushed {
public:
  denormals_flushed() noexcept : saved_(_mm_getcsr()) {
    _mm_setcsr(saved_ | ftz_daz);
  }
  ~denormals_flushed() { _mm_setcsr(saved_); }
  denormals_flushed(const denormals_flushed&) = delete;
  denormals_flushed& operator=(const denormals_flushed&) = delete;

private:
  static constexpr unsigned ftz_daz = 0x8040; // bit 15 FTZ, bit 6 DAZ
  unsigned saved_;
};

// Grows `v` to at least `n` floats (scratch is grown once, never shrunk).
void grow(std::vector<float>& v, size_t n) {
  if (v.size() < n)
    v.resize(n);
}

} // namespace

float* aligned_work(blur_scratch& scratch, size_t floats) {
  grow(scratch.work, floats + 16);
  return align64(scratch.work.data());
}

void blur_planes_chain(float* planes, uint32_t height, uint32_t width,
                       uint32_t channels, const float* taps, uint32_t calls,
                       uint32_t kernel_size, cpu_isa isa,
                       blur_scratch& scratch) {
  auto run = checked_chain(isa, kernel_size);
  uint32_t radius = kernel_size / 2;
  size_t plane = size_t{height} * width;
  grow(scratch.strips, detail::blur_chain_scratch(height, width, radius) + 16);
  float* strips = align64(scratch.strips.data());
  denormals_flushed flushed;
  for (uint32_t c = 0; c < channels; ++c)
    run(planes + c * plane, height, width, taps, calls, radius, strips);
}

void blur_image_chain(float* hwc, uint32_t height, uint32_t width,
                      uint32_t channels, const float* taps, uint32_t calls,
                      uint32_t kernel_size, cpu_isa isa,
                      blur_scratch& scratch) {
  if (channels == 1) { // already a plane
    blur_planes_chain(hwc, height, width, 1, taps, calls, kernel_size, isa,
                      scratch);
    return;
  }
  float* planes = aligned_work(scratch, size_t{height} * width * channels);
  hwc_to_chw(hwc, planes, height, width, channels);
  blur_planes_chain(planes, height, width, channels, taps, calls, kernel_size,
                    isa, scratch);
  chw_to_hwc(planes, hwc, height, width, channels);
}

void blur_stage_stoker(const blur_params& p, cpu_isa isa, image_batch& batch,
                       blur_scratch& scratch) {
  checked_chain(isa, p.kernel_size); // refused before any image changes
  // The image (aligned rows: no vector load or store splits a cache line)
  // and the taps: the worker's own, grown once, as the chain's strips.
  float* planes = aligned_work(scratch, batch.image_elements());
  grow(scratch.taps, size_t{p.repeat} * p.kernel_size);
  // The copy back writes every byte of the batch anyway: it stamps each
  // image's checksum on the way (the worker sends them; a later change of
  // the data, such as a 16-bit wire, must clear them).
  batch.checksums.resize(batch.size());
  for (size_t i = 0; i < batch.size(); ++i) {
    float* img = batch.image(i);
    hwc_to_chw(img, planes, batch.height, batch.width, batch.channels);
    blur_taps(p, batch.epoch, batch.sample_ids[i], scratch.taps.data());
    blur_planes_chain(planes, batch.height, batch.width, batch.channels,
                      scratch.taps.data(), p.repeat, p.kernel_size, isa,
                      scratch);
    batch.checksums[i] = copy_checksum64(img, planes, batch.image_bytes());
  }
}

} // namespace stoker
