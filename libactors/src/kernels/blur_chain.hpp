#pragma once

// The hand-written blur chain's entry points, one per instruction set
// (blur_chain_avx512.cpp, blur_chain_avx2.cpp, blur_chain_scalar.cpp, each
// compiled for its ISA from blur_chain_impl.hpp). Internal: callers go
// through apply_blur_stage, which picks one the CPU can run. This header
// declares plain functions only, so that no inline code compiled for a
// wider ISA can leak into the rest of the program.

#include <cstddef>
#include <cstdint>

namespace stoker::detail {

/// Floats of scratch one chain call needs for height x width planes and
/// taps of `radius`: two strips of max(height, width) + 2 * radius vectors
/// of the widest ISA (64-byte aligned by the caller).
size_t blur_chain_scratch(uint32_t height, uint32_t width,
                          uint32_t radius) noexcept;

/// Blurs the h x w plane at `plane` in place `calls` times: call c with the
/// 2 * radius + 1 taps at taps + c * (2 * radius + 1), which must be
/// symmetric (gaussian_kernel's are). Borders reflect-101. `scratch` holds
/// blur_chain_scratch(h, w, radius) floats. Every ISA computes each pixel
/// with the same operations in the same order (fused multiply-adds
/// included), so all three give bit-identical results. The calls' vertical
/// halves all run before their horizontal halves (they commute): not the
/// bits of blurring H, V, H, V..., the same numbers to rounding.
using blur_chain_fn = void (*)(float* plane, uint32_t h, uint32_t w,
                               const float* taps, uint32_t calls,
                               uint32_t radius, float* scratch) noexcept;

void blur_chain_avx512(float* plane, uint32_t h, uint32_t w,
                       const float* taps, uint32_t calls, uint32_t radius,
                       float* scratch) noexcept;
void blur_chain_avx2(float* plane, uint32_t h, uint32_t w, const float* taps,
                     uint32_t calls, uint32_t radius, float* scratch) noexcept;
void blur_chain_scalar(float* plane, uint32_t h, uint32_t w,
                       const float* taps, uint32_t calls, uint32_t radius,
                       float* scratch) noexcept;

/// What one core's vector units do a second, for the bound the blur
/// benchmarks print: vector FMAs, vector adds and the two mixed 1:1 (each
/// with `chains` independent accumulators, more than latency x units on
/// any x86 core), and FMAs in one dependent chain (its latency).
struct fp_peaks {
  int lanes = 0;
  int chains = 0;
  double fma_per_s = 0;           ///< vector FMA instructions a second
  double add_per_s = 0;           ///< vector adds a second
  double mixed_per_s = 0;         ///< FMAs and adds together, 1:1
  double fma_one_chain_per_s = 0; ///< dependent FMAs: 1 / latency
};

/// The vector instructions one output vector of one pass costs (the taps
/// are paired, blur_chain_impl.hpp): the centre's multiply and r fused
/// multiply-adds on the FMA units, and r adds; 3r + 1 FLOP a lane, not
/// the textbook 2K = 4r + 2 (a bound counted from that is exceeded).
struct chain_issue {
  uint64_t fma_unit = 0; ///< the multiply and the FMAs
  uint64_t adds = 0;
};
chain_issue chain_issue_per_output(uint32_t radius) noexcept;

/// Output vectors a chain of `calls` blurs computes on one h x w plane
/// with `lanes`-wide vectors, both halves: every position of every strip
/// (a strip narrower than `lanes` still costs whole vectors).
uint64_t chain_output_vectors(uint32_t h, uint32_t w, uint32_t calls,
                              uint32_t lanes) noexcept;

/// The fewest seconds the units measured in `peak` need for `vectors`
/// output vectors of a blur of `radius`: the slowest of the FMA units
/// alone, the add units alone and both kinds mixed (where adds share the
/// FMA units the mixed rate is the FMA rate; where they have units of
/// their own, up to twice it). No chain can run faster; 0 if `peak` has
/// a rate of 0.
double chain_seconds_bound(const fp_peaks& peak, double vectors,
                           uint32_t radius) noexcept;

/// Measures fp_peaks with `iterations` rounds of each probe, writing to
/// `sink` (16 floats) so nothing is optimized away; `now` is a clock in
/// seconds. Only on a CPU that runs the ISA.
fp_peaks fp_peaks_avx512(uint64_t iterations, float* sink, double (*now)());
fp_peaks fp_peaks_avx2(uint64_t iterations, float* sink, double (*now)());

/// ToTensor's reorder of `pixels` 3-channel pixels, HWC `src` to planes
/// at dst + c * plane_stride (no overlap), and a whole image back: 16
/// pixels at a time through two-source permutes, where the plain strided
/// loop moves one float at a time. Only on a CPU that runs AVX-512F
/// (hwc_to_chw_run and chw_to_hwc pick them).
void hwc3_to_chw_avx512(const float* src, float* dst, uint64_t pixels,
                        uint64_t plane_stride) noexcept;
void chw3_to_hwc_avx512(const float* src, float* dst,
                        uint64_t pixels) noexcept;

} // namespace stoker::detail
