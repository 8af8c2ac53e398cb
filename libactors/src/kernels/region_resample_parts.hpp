#pragma once

// Internal to the fused start's resample (region_resample.cpp, the
// bilinear pass; region_antialias.cpp, the antialiased one): what both
// passes write and how they finish a pixel.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include <opencv2/core.hpp>

#include "kernels/region_resample.hpp"
#include "stoker/counter_rng.hpp"

namespace stoker::resample_detail {

/// Per channel: value in [0, 255] -> (value / 255 - mean) / stddev.
template <int C>
struct finish_of {
  float scale[C];
  float shift[C];
  explicit finish_of(const pixel_finish& f) {
    for (int k = 0; k < C; ++k) {
      auto m = f.mean[f.mean.size() == 1 ? 0 : static_cast<size_t>(k)];
      auto sd = f.stddev[f.stddev.size() == 1 ? 0 : static_cast<size_t>(k)];
      scale[k] = 1.0f / (255.0f * sd);
      shift[k] = -m / sd;
    }
  }
};

/// Where the finished pixels go: HWC rows of a cv::Mat, or the planes of
/// a CHW image (the batch's own memory), by strides.
struct float_image {
  float* base;
  int rows;
  int cols;
  size_t row_stride;
  size_t pixel_stride;
  size_t channel_stride;

  static float_image hwc(cv::Mat& m) {
    auto c = static_cast<size_t>(m.channels());
    return {m.ptr<float>(), m.rows, m.cols, m.step1(), c, 1};
  }
  static float_image chw(float* planes, int rows, int cols) {
    auto plane = static_cast<size_t>(rows) * static_cast<size_t>(cols);
    return {planes, rows, cols, static_cast<size_t>(cols), 1, plane};
  }
  float* pixel(int y, int x) const {
    return base + static_cast<size_t>(y) * row_stride
           + static_cast<size_t>(x) * pixel_stride;
  }
};

/// Calls `f` with the channel count as a constant (1 or 3: what the
/// decoder makes), so each kernel is compiled per count.
template <class F>
void with_channels(int channels, F f) {
  if (channels == 1)
    f(std::integral_constant<int, 1>{});
  else
    f(std::integral_constant<int, 3>{});
}

/// One axis of a separable filter: per output index its first source
/// index, its tap count and `width` weights (the first `count` used, the
/// rest 0); `most`, the largest count. W: float, or a fixed-point integer.
template <class W>
struct tap_bank {
  std::vector<int> first;
  std::vector<int> count;
  std::vector<W> weights;
  int width = 0;
  int most = 0;
};

/// Where the VBMI x passes (16 outputs a step, their taps fetched by byte
/// permutes from 128 bytes) read their tables, for outputs whose taps are
/// `first[x]`, `count[x]`, of `channels`-byte pixels: from the row where
/// every block's taps fit 128 bytes of it, else (`planar`) from each
/// channel's plane of columns [col_lo, col_hi). Per block of 16 outputs,
/// `starts`: the first source column its taps read, or -1 where they span
/// more than 128 bytes even so (the portable loop makes that block).
struct vbmi_blocks {
  std::vector<int> starts;
  bool planar = false;
  int col_lo = 0;
  int col_hi = 0;
};

inline vbmi_blocks plan_vbmi_blocks(const std::vector<int>& first,
                                    const std::vector<int>& count,
                                    int channels) {
  constexpr int block = 16;
  auto starts_for = [&](int stride) {
    std::vector<int> starts(first.size() / block, -1);
    for (size_t b = 0; b < starts.size(); ++b) {
      const int* f = first.data() + b * block;
      const int* n = count.data() + b * block;
      const int least = *std::min_element(f, f + block);
      bool fits = true;
      for (int m = 0; m < block; ++m)
        fits = fits && (f[m] - least + n[m]) * stride
                         <= jpeg_region::read_ahead;
      if (fits)
        starts[b] = least;
    }
    return starts;
  };
  vbmi_blocks v;
  v.starts = starts_for(channels);
  v.planar = channels > 1
             && std::find(v.starts.begin(), v.starts.end(), -1)
                  != v.starts.end();
  if (v.planar)
    v.starts = starts_for(1);
  if (!first.empty())
    v.col_lo = *std::min_element(first.begin(), first.end());
  for (size_t x = 0; x < first.size(); ++x)
    v.col_hi = std::max(v.col_hi, first[x] + count[x]);
  return v;
}

#if defined(__x86_64__)
/// Pixels [0, n) of the three-channel row `in` as three planes `out[c]`
/// (n bytes each), for the VBMI x passes whose taps span more than 128
/// bytes of interleaved pixels. The caller's CPU must permute bytes
/// (supports_byte_permutes()).
void split_channels_vbmi(const uint8_t* in, size_t n, uint8_t* const* out);
#endif

/// torchvision's antialiased bilinear resample (PIL's filter: a triangle
/// as wide as the shrink, at least one pixel) of the region's box into
/// `out`, finished on the way. Taps read within `r.bounds` (the box where
/// that is empty). Any box and output size; the caller's thread; returns
/// antialiased_avx512 where the VBMI x pass ran for some block, else
/// antialiased. The same bits on every path (see region_antialias.cpp).
resample_pass resample_antialiased(const jpeg_region& r,
                                   const pixel_finish& finish,
                                   const float_image& out, simd_path path);

} // namespace stoker::resample_detail
