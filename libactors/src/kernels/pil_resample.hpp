#pragma once

// PIL's resample (Pillow's libImaging/Resample.c), which torchvision's
// Resize and resized_crop run on PIL images: separable, a triangle filter
// as wide as the shrink (antialiased; one pixel wide when enlarging), taps
// in 22-bit fixed point, the horizontal pass rounded to 8 bits before the
// vertical one. The same integer arithmetic, so the same bytes.

#include <opencv2/core.hpp>

#include "stoker/counter_rng.hpp"

namespace stoker {

/// `img` (8-bit, 1 to 4 channels, HWC) resized to `out_w` x `out_h` as
/// PIL's bilinear resize does, byte for byte, through the code path
/// `path` (which the CPU must support): along x AVX-512 VBMI for 1 and 3
/// channels where the CPU permutes bytes and a block of 16 outputs' taps
/// lie within 128 bytes of the row or of a channel's plane (shrinks up to
/// about 7), else the portable loop; along y vector loops on the AVX2 and
/// AVX-512 paths. Every path gives the same bytes. A new Mat, or `img`
/// itself where the size is the same. The caller's thread.
cv::Mat pil_resize(const cv::Mat& img, int out_h, int out_w,
                   simd_path path);

/// Which code the x pass of pil_resize() ran for `path` on an image of
/// `channels` channels shrunk or enlarged from `in_w` to `out_w`
/// columns: true where the VBMI twin made some block; for tests that
/// compare the paths and must know what they compared.
bool pil_resize_uses_vbmi(int channels, int in_w, int out_w,
                          simd_path path);

} // namespace stoker
