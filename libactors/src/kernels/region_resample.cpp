// The resampling half of the fused JPEG start (jpeg_region.hpp): a
// decoded region's box to the output size, finished (flip, ToTensor,
// Normalize) in the same pass, as interleaved pixels or the batch's planes.
#include "kernels/jpeg_region.hpp"

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

namespace stoker {

namespace {

// One axis of a bilinear resample: for each output index the two source
// indices (clamped to the source) and the weight of the second.
struct taps {
  std::vector<int> lo, hi;
  std::vector<float> w;
};

taps taps_for(double start, double length, int out, int size) {
  taps t;
  t.lo.resize(static_cast<size_t>(out));
  t.hi.resize(static_cast<size_t>(out));
  t.w.resize(static_cast<size_t>(out));
  double step = length / out;
  for (int i = 0; i < out; ++i) {
    // Clamped to the box, as a resize of the cropped image is at its
    // edges (the region holds a pixel beyond them for the reduced case).
    double at = start + (i + 0.5) * step - 0.5;
    at = std::clamp(at, start, std::max(start, start + length - 1.0));
    at = std::clamp(at, 0.0, static_cast<double>(size - 1));
    int lo = static_cast<int>(std::floor(at));
    t.lo[static_cast<size_t>(i)] = lo;
    t.hi[static_cast<size_t>(i)] = std::min(lo + 1, size - 1);
    t.w[static_cast<size_t>(i)] = static_cast<float>(at - lo);
  }
  return t;
}


// Per channel: value in [0, 255] -> (value / 255 - mean) / stddev.
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

// Where the finished pixels go: HWC rows of a cv::Mat, or the planes of
// a CHW image (the batch's own memory), by strides.
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

template <int C>
void resample_rows(const cv::Mat& src, const taps& xs, const taps& ys,
                   const pixel_finish& finish, const float_image& out) {
  const finish_of<C> fin{finish};
  const int out_w = out.cols;
  const size_t cs = out.channel_stride;
  std::vector<int> a(static_cast<size_t>(out_w));
  std::vector<int> b(static_cast<size_t>(out_w));
  for (size_t x = 0; x < a.size(); ++x) {
    a[x] = xs.lo[x] * C;
    b[x] = xs.hi[x] * C;
  }
  for (int y = 0; y < out.rows; ++y) {
    auto yi = static_cast<size_t>(y);
    const uint8_t* top = src.ptr<uint8_t>(ys.lo[yi]);
    const uint8_t* bottom = src.ptr<uint8_t>(ys.hi[yi]);
    const float wy = ys.w[yi];
    for (int x = 0; x < out_w; ++x) {
      auto xi = static_cast<size_t>(x);
      const uint8_t* t0 = top + a[xi];
      const uint8_t* t1 = top + b[xi];
      const uint8_t* b0 = bottom + a[xi];
      const uint8_t* b1 = bottom + b[xi];
      const float wx = xs.w[xi];
      float* px = out.pixel(y, finish.flip ? out_w - 1 - x : x);
      for (int k = 0; k < C; ++k) {
        float upper = t0[k] + wx * static_cast<float>(t1[k] - t0[k]);
        float lower = b0[k] + wx * static_cast<float>(b1[k] - b0[k]);
        px[k * cs] =
          (upper + wy * (lower - upper)) * fin.scale[k] + fin.shift[k];
      }
    }
  }
}

// 8-bit pixels already at the output size: finished into `out`.
template <int C>
void finish_rows(const cv::Mat& src, const pixel_finish& finish,
                 const float_image& out) {
  const finish_of<C> fin{finish};
  const int w = out.cols;
  const size_t cs = out.channel_stride;
  for (int y = 0; y < out.rows; ++y) {
    const uint8_t* in = src.ptr<uint8_t>(y);
    for (int x = 0; x < w; ++x) {
      float* px = out.pixel(y, finish.flip ? w - 1 - x : x);
      for (int k = 0; k < C; ++k)
        px[k * cs] = in[x * C + k] * fin.scale[k] + fin.shift[k];
    }
  }
}

// One row of a plane finished: `w` bytes to floats, scaled and shifted,
// read backwards when mirrored. Cloned for AVX2 and chosen once at load
// time (an ifunc): eight floats a step instead of four, the same
// arithmetic (the library builds with -ffp-contract=off: no FMA in
// either clone), so the same numbers on every CPU. Out of line, as a
// clone must be.
__attribute__((target_clones("avx2", "default"), noinline)) void
finish_row(const uint8_t* in, float* dst, size_t w, float scale,
           float shift, bool mirrored) {
  if (mirrored)
    for (size_t x = 0; x < w; ++x)
      dst[x] = static_cast<float>(in[w - 1 - x]) * scale + shift;
  else
    for (size_t x = 0; x < w; ++x)
      dst[x] = static_cast<float>(in[x]) * scale + shift;
}

// The same into planes (CHW): each channel split out, then one
// contiguous loop per row that the compiler vectorizes, reading the row
// backwards when mirrored (cv::flip of a one-byte plane is a plain byte
// loop: 5% of a worker's time); the same arithmetic as finish_rows, so
// the same numbers.
template <int C>
void finish_planes(const cv::Mat& src, const pixel_finish& finish,
                   const float_image& out) {
  const finish_of<C> fin{finish};
  cv::Mat planes[C];
  if (C == 1)
    planes[0] = src;
  else
    cv::split(src, planes);
  const auto w = static_cast<size_t>(out.cols);
  for (int c = 0; c < C; ++c) {
    const cv::Mat& plane = planes[c];
    const float scale = fin.scale[c];
    const float shift = fin.shift[c];
    for (int y = 0; y < out.rows; ++y) {
      const uint8_t* in = plane.ptr<uint8_t>(y);
      float* dst = out.base + static_cast<size_t>(c) * out.channel_stride
                   + static_cast<size_t>(y) * out.row_stride;
      finish_row(in, dst, w, scale, shift, finish.flip);
    }
  }
}

bool whole(double v) {
  return std::abs(v - std::round(v)) < 1e-9;
}


// torchvision's antialiased bilinear filter (resize with antialias=True,
// PIL's): a triangle as wide as the shrink, over [start, start + length)
// of a dimension of `size` pixels, per output index its first source index
// and weights (summing to 1).
struct filter_bank {
  std::vector<int> first;
  std::vector<int> count;
  std::vector<float> weights; // `width` a row, the first `count` used
  int width = 0;
};

filter_bank triangle_taps(double start, double length, int out, int size) {
  filter_bank f;
  const double scale = length / out;
  const double support = std::max(1.0, scale);
  const int lo_bound = std::max(0, static_cast<int>(std::floor(start)));
  const int hi_bound =
    std::min(size, static_cast<int>(std::ceil(start + length)));
  f.width = static_cast<int>(std::ceil(2.0 * support)) + 2;
  f.first.resize(static_cast<size_t>(out));
  f.count.resize(static_cast<size_t>(out));
  f.weights.assign(static_cast<size_t>(out) * static_cast<size_t>(f.width),
                   0.0f);
  for (int i = 0; i < out; ++i) {
    double center = start + (i + 0.5) * scale;
    int lo = std::max(static_cast<int>(std::floor(center - support)),
                      lo_bound);
    int hi = std::min(static_cast<int>(std::ceil(center + support)),
                      hi_bound);
    hi = std::max(hi, lo + 1);
    hi = std::min(hi, lo + f.width);
    double sum = 0;
    std::vector<double> w(static_cast<size_t>(hi - lo));
    for (int x = lo; x < hi; ++x) {
      w[static_cast<size_t>(x - lo)] =
        std::max(0.0, 1.0 - std::abs((x + 0.5 - center) / support));
      sum += w[static_cast<size_t>(x - lo)];
    }
    auto at = static_cast<size_t>(i) * static_cast<size_t>(f.width);
    for (size_t k = 0; k < w.size(); ++k)
      f.weights[at + k] = static_cast<float>(sum > 0 ? w[k] / sum
                                                     : 1.0 / static_cast<double>(w.size()));
    f.first[static_cast<size_t>(i)] = lo;
    f.count[static_cast<size_t>(i)] = hi - lo;
  }
  return f;
}

// A reduced region, shrunk by two or more: antialiased, along x into
// float rows, then along y, finished on the way out.
template <int C>
void resample_antialiased(const cv::Mat& src, const filter_bank& xs,
                          const filter_bank& ys, const pixel_finish& finish,
                          const float_image& out) {
  const finish_of<C> fin{finish};
  const int out_w = out.cols;
  const size_t row_len = static_cast<size_t>(out_w) * C;
  const int row_lo = ys.first.front();
  const int row_hi = ys.first.back() + ys.count.back();
  std::vector<float> wide(static_cast<size_t>(row_hi - row_lo) * row_len);
  for (int r = row_lo; r < row_hi; ++r) {
    const uint8_t* in = src.ptr<uint8_t>(r);
    float* dst = wide.data() + static_cast<size_t>(r - row_lo) * row_len;
    for (int x = 0; x < out_w; ++x) {
      auto xi = static_cast<size_t>(x);
      const float* w = xs.weights.data() + xi * static_cast<size_t>(xs.width);
      const uint8_t* px = in + static_cast<size_t>(xs.first[xi]) * C;
      float acc[C] = {};
      for (int k = 0; k < xs.count[xi]; ++k)
        for (int c = 0; c < C; ++c)
          acc[c] += w[k] * px[k * C + c];
      for (int c = 0; c < C; ++c)
        dst[xi * C + static_cast<size_t>(c)] = acc[c];
    }
  }
  std::vector<float> row(row_len);
  const size_t cs = out.channel_stride;
  for (int y = 0; y < out.rows; ++y) {
    auto yi = static_cast<size_t>(y);
    std::fill(row.begin(), row.end(), 0.0f);
    const float* w = ys.weights.data() + yi * static_cast<size_t>(ys.width);
    for (int k = 0; k < ys.count[yi]; ++k) {
      const float* in =
        wide.data()
        + static_cast<size_t>(ys.first[yi] + k - row_lo) * row_len;
      for (size_t i = 0; i < row_len; ++i)
        row[i] += w[k] * in[i];
    }
    for (int x = 0; x < out_w; ++x) {
      float* px = out.pixel(y, finish.flip ? out_w - 1 - x : x);
      for (int c = 0; c < C; ++c)
        px[static_cast<size_t>(c) * cs] =
          row[static_cast<size_t>(x) * C + static_cast<size_t>(c)]
            * fin.scale[c]
          + fin.shift[c];
    }
  }
}

// Calls `f` with the channel count as a constant (1 or 3: what the
// decoder makes), so each kernel is compiled per count.
template <class F>
void with_channels(int channels, F f) {
  if (channels == 1)
    f(std::integral_constant<int, 1>{});
  else
    f(std::integral_constant<int, 3>{});
}

void resample_into(const jpeg_region& r, const pixel_finish& finish,
                   const float_image& out) {
  auto& b = r.box;
  const int c = r.pixels.channels();
  const int out_w = out.cols;
  const int out_h = out.rows;
  if (r.scale < 8) {
    // Reduced by the IDCT to twice the output or more (dct_scale_for):
    // the rest of the shrink antialiased, as torchvision's resize.
    auto xs = triangle_taps(b.x, b.width, out_w, r.pixels.cols);
    auto ys = triangle_taps(b.y, b.height, out_h, r.pixels.rows);
    with_channels(c, [&](auto k) {
      resample_antialiased<decltype(k)::value>(r.pixels, xs, ys, finish, out);
    });
    return;
  }
  if (whole(b.x) && whole(b.y) && whole(b.width) && whole(b.height)) {
    // Whole pixels (a full-scale crop box): OpenCV's resize, SIMD, the
    // unfused chain's numbers.
    cv::Rect box{static_cast<int>(std::lround(b.x)),
                 static_cast<int>(std::lround(b.y)),
                 static_cast<int>(std::lround(b.width)),
                 static_cast<int>(std::lround(b.height))};
    cv::Mat sized;
    if (box.width == out_w && box.height == out_h)
      sized = r.pixels(box);
    else
      cv::resize(r.pixels(box), sized, cv::Size{out_w, out_h}, 0, 0,
                 cv::INTER_LINEAR);
    bool planar = out.pixel_stride == 1;
    with_channels(c, [&](auto k) {
      constexpr int C = decltype(k)::value;
      planar ? finish_planes<C>(sized, finish, out)
             : finish_rows<C>(sized, finish, out);
    });
    return;
  }
  auto xs = taps_for(b.x, b.width, out_w, r.pixels.cols);
  auto ys = taps_for(b.y, b.height, out_h, r.pixels.rows);
  with_channels(c, [&](auto k) {
    resample_rows<decltype(k)::value>(r.pixels, xs, ys, finish, out);
  });
}

} // namespace

cv::Mat resample_region(const jpeg_region& r, int out_w, int out_h,
                        const pixel_finish& finish) {
  cv::Mat out(out_h, out_w, CV_32FC(r.pixels.channels()));
  resample_into(r, finish, float_image::hwc(out));
  return out;
}

void resample_region_planes(const jpeg_region& r, int out_w, int out_h,
                            const pixel_finish& finish, float* planes) {
  resample_into(r, finish, float_image::chw(planes, out_h, out_w));
}

} // namespace stoker
