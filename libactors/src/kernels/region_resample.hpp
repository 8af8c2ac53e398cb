#pragma once

// The resampling half of the fused JPEG start: a region decode_jpeg_region
// made (jpeg_region.hpp), its box to the output size, finished (flip,
// ToTensor, Normalize) in the same pass, as interleaved pixels or the
// batch's planes. Pure functions; the transform chain's fused start
// (transforms/) runs them.

#include <vector>

#include <opencv2/core.hpp>

#include "kernels/jpeg_region.hpp"
#include "stoker/counter_rng.hpp"

namespace stoker {

/// What the fused start does to the resampled pixels on the way out, in
/// the same pass: ToTensor's [0, 1], then (x - mean[c]) / stddev[c]
/// (Normalize; one value: every channel), mirrored left to right with
/// `flip`.
struct pixel_finish {
  bool flip = false;
  std::vector<float> mean{0.0f};
  std::vector<float> stddev{1.0f};
};

/// The region's box resampled to `out_w` x `out_h` float32 pixels,
/// finished by `finish` in the same pass. Where the box (at the decoded
/// scale) shrinks along either axis: torchvision's antialiased bilinear,
/// PIL's filter (a triangle as wide as the shrink, at least one pixel;
/// taps within `bounds`), in 14-bit fixed-point taps along x and float
/// along y, not rounded to 8 bits between: within one level of
/// torchvision's Resize of the same pixels. Where it enlarges both ways:
/// bilinear with half-pixel centres, output pixel x sampling the box at
/// box.x + (x + 0.5) * box.width / out_w - 0.5 (clamped to the box), as
/// cv::resize and PIL map them, in float. The same numbers on every CPU
/// (the AVX2 and AVX-512 paths give the portable path's bits).
cv::Mat resample_region(const jpeg_region& r, int out_w, int out_h,
                        const pixel_finish& finish = {});

/// As resample_region(), written as planes (CHW: the channels one after
/// the other, out_h x out_w each) into `planes`, which the caller owns and
/// sizes: the batch's memory, so the image is written once, in its final
/// layout. The same numbers as resample_region().
void resample_region_planes(const jpeg_region& r, int out_w, int out_h,
                            const pixel_finish& finish, float* planes);

/// Which code resampled a region: the antialiased filter with its x pass
/// portable or AVX-512 VBMI (for some block of 16 outputs at least; the
/// y pass as the path says), or the bilinear pass with its x pass
/// portable, AVX2 (three channels), AVX-512 VBMI, or portable with the
/// AVX2 row loops (one channel, or a path whose x pass fell back).
enum class resample_pass {
  antialiased,
  antialiased_avx512,
  portable,
  avx2_rows,
  avx2,
  avx512
};

/// As above through the code path `path`, which the CPU must support
/// (avx512 takes the VBMI x pass where the CPU permutes bytes and the
/// box's taps fit its table, else AVX2); returns what ran, for tests that
/// compare the paths and must know what they compared.
resample_pass resample_region_planes(const jpeg_region& r, int out_w,
                                     int out_h, const pixel_finish& finish,
                                     float* planes, simd_path path);

/// Whether this CPU runs the AVX-512 VBMI x pass (byte permutes).
bool supports_byte_permutes() noexcept;

} // namespace stoker
