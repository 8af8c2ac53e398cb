#include "kernels/image_ops.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "kernels/pil_resample.hpp"

namespace stoker {

namespace {

// A uniform integer in [lo, hi] from word `index` of the stream.
int uniform_int(const counter_rng& rng, uint32_t index, int lo, int hi) {
  if (hi <= lo)
    return lo;
  auto span = static_cast<uint64_t>(hi - lo) + 1;
  return lo + static_cast<int>((uint64_t{rng.block(index)[1]} * span) >> 32);
}

} // namespace

cv::Mat decode_image(const std::vector<char>& bytes, bool gray) {
  if (bytes.empty())
    return {};
  cv::Mat raw(1, static_cast<int>(bytes.size()), CV_8U,
              const_cast<char*>(bytes.data()));
  cv::Mat img;
  try {
    img = cv::imdecode(raw, gray ? cv::IMREAD_GRAYSCALE : cv::IMREAD_COLOR);
  } catch (const cv::Exception&) {
    return {};
  }
  if (!img.empty() && !gray)
    cv::cvtColor(img, img, cv::COLOR_BGR2RGB);
  return img;
}

cv::Mat resize_image(const cv::Mat& img, uint32_t height, uint32_t width) {
  int h = static_cast<int>(height);
  int w = static_cast<int>(width);
  if (height == 0) { // the shorter side becomes `width`
    auto s = static_cast<double>(width);
    if (img.rows <= img.cols) {
      h = static_cast<int>(width);
      w = static_cast<int>(std::floor(s * img.cols / img.rows));
    } else {
      w = static_cast<int>(width);
      h = static_cast<int>(std::floor(s * img.rows / img.cols));
    }
  }
  if (h == img.rows && w == img.cols)
    return img;
  if (img.depth() == CV_8U) // as torchvision's Resize on a PIL image
    return pil_resize(img, h, w, best_simd_path());
  cv::Mat out; // a float image: bilinear, half-pixel centres
  cv::resize(img, out, cv::Size{w, h}, 0, 0, cv::INTER_LINEAR);
  return out;
}

cv::Mat center_crop(const cv::Mat& img, uint32_t height, uint32_t width) {
  int h = static_cast<int>(height);
  int w = static_cast<int>(width);
  cv::Mat src = img;
  if (img.rows < h || img.cols < w) { // pad with zeros, as torchvision does
    int top = std::max(0, (h - img.rows) / 2);
    int left = std::max(0, (w - img.cols) / 2);
    cv::copyMakeBorder(img, src, top, std::max(0, h - img.rows - top), left,
                       std::max(0, w - img.cols - left), cv::BORDER_CONSTANT,
                       cv::Scalar::all(0));
  }
  // torchvision: top = round((H - h) / 2), left likewise.
  int top = python_round((src.rows - h) / 2.0);
  int left = python_round((src.cols - w) / 2.0);
  return src(cv::Rect{left, top, w, h}).clone();
}

cv::Mat random_crop(const cv::Mat& img, uint32_t size, uint32_t padding,
                    const counter_rng& rng) {
  cv::Mat src = img;
  auto p = static_cast<int>(padding);
  if (p > 0)
    cv::copyMakeBorder(img, src, p, p, p, p, cv::BORDER_CONSTANT,
                       cv::Scalar::all(0));
  int s = static_cast<int>(size);
  int top = uniform_int(rng, 0, 0, src.rows - s);
  int left = uniform_int(rng, 1, 0, src.cols - s);
  return src(cv::Rect{left, top, s, s}).clone();
}

cv::Rect random_resized_box(int height, int width, double scale_min,
                            double scale_max, double ratio_min,
                            double ratio_max, const counter_rng& rng) {
  double area = static_cast<double>(height) * width;
  double log_lo = std::log(ratio_min), log_hi = std::log(ratio_max);
  for (uint32_t attempt = 0; attempt < 10; ++attempt) {
    auto words = rng.block(attempt);
    auto u = [&](int i) { return (words[i] >> 8) * (1.0 / 16777216.0); };
    double target = area * (scale_min + (scale_max - scale_min) * u(0));
    double ratio = std::exp(log_lo + (log_hi - log_lo) * u(1));
    int w = python_round(std::sqrt(target * ratio));
    int h = python_round(std::sqrt(target / ratio));
    if (w > 0 && h > 0 && w <= width && h <= height) {
      int top = static_cast<int>(u(2) * (height - h + 1));
      int left = static_cast<int>(u(3) * (width - w + 1));
      return cv::Rect{std::min(left, width - w), std::min(top, height - h), w,
                      h};
    }
  }
  // Fallback: the whole image, cut to the ratio range, centred.
  double in_ratio = static_cast<double>(width) / height;
  int w = width, h = height;
  if (in_ratio < ratio_min)
    h = python_round(w / ratio_min);
  else if (in_ratio > ratio_max)
    w = python_round(h * ratio_max);
  return cv::Rect{(width - w) / 2, (height - h) / 2, w, h};
}

cv::Mat horizontal_flip(const cv::Mat& img, double p, const counter_rng& rng) {
  if (!(rng.uniform(0) < p))
    return img;
  cv::Mat out;
  cv::flip(img, out, 1);
  return out;
}

cv::Mat to_float(const cv::Mat& img) {
  if (img.depth() == CV_32F)
    return img;
  cv::Mat out;
  img.convertTo(out, CV_32F, 1.0 / 255.0);
  return out;
}

cv::Mat normalize_image(const cv::Mat& img, const std::vector<double>& mean,
                        const std::vector<double>& stddev) {
  cv::Mat in = img.isContinuous() ? img : img.clone();
  cv::Mat out(in.size(), in.type());
  auto c = static_cast<size_t>(in.channels());
  auto constant = [c](const std::vector<double>& v, size_t j) {
    return static_cast<float>(v[v.size() == 1 ? 0 : j % c]);
  };
  // The per-channel constants laid out for 16 pixels: the loop then runs
  // over plain arrays, which the compiler vectorises (a channel index per
  // element it does not: 8x slower). The same sub and div per element.
  constexpr size_t period_pixels = 16;
  constexpr size_t max_channels = 4;
  size_t period = period_pixels * std::min(c, max_channels);
  float m[period_pixels * max_channels];
  float s[period_pixels * max_channels];
  for (size_t j = 0; j < period; ++j) {
    m[j] = constant(mean, j);
    s[j] = constant(stddev, j);
  }
  const auto* p = in.ptr<float>();
  auto* q = out.ptr<float>();
  size_t n = in.total() * c;
  size_t i = 0;
  if (c <= max_channels)
    for (; i + period <= n; i += period)
      for (size_t j = 0; j < period; ++j)
        q[i + j] = (p[i + j] - m[j]) / s[j];
  for (; i < n; ++i)
    q[i] = (p[i] - constant(mean, i)) / constant(stddev, i);
  return out;
}

} // namespace stoker
