#pragma once

// The image operations the built-in transforms run (OpenCV, HWC images):
// pure functions, tested on hand-made cases.

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <caf/expected.hpp>
#include <opencv2/core.hpp>

#include "stoker/counter_rng.hpp"

namespace stoker {

// -- the transforms one by one (HWC images; tested on hand-made cases) ----

/// Decodes an encoded image (PNG, JPEG, ...) to 8-bit RGB, or grayscale
/// with `gray`; an empty Mat if it does not decode.
cv::Mat decode_image(const std::vector<char>& bytes, bool gray);

/// torchvision's Resize: an 8-bit image as PIL resizes it (bilinear,
/// antialiased where it shrinks, the same bytes as Pillow's resample); a
/// float image bilinear with half-pixel centres. `height` 0: the shorter
/// side becomes `width` and the longer int(width * long / short), keeping
/// the aspect ratio.
cv::Mat resize_image(const cv::Mat& img, uint32_t height, uint32_t width);

/// Python's round(): to the nearest, halves to even, as torchvision's
/// geometry uses it (a crop's offset round((H - h) / 2) of 16.5 is 16, not
/// std::lround's 17: one pixel off wherever the margin is odd).
inline int python_round(double x) {
  return static_cast<int>(std::nearbyint(x)); // the default mode: to even
}

/// The centre `height` x `width` window; zero padding where the image is
/// smaller (torchvision's CenterCrop: offsets python_round((H - h) / 2)).
cv::Mat center_crop(const cv::Mat& img, uint32_t height, uint32_t width);

/// A window of the image padded by `padding` zeros on every side, at a
/// position drawn from `rng` (torchvision's RandomCrop).
cv::Mat random_crop(const cv::Mat& img, uint32_t size, uint32_t padding,
                    const counter_rng& rng);

/// torchvision's RandomResizedCrop box: area fraction in [scale_min,
/// scale_max] and aspect ratio (log-uniform) in [ratio_min, ratio_max], ten
/// tries, then a centre crop clamped to the ratio range.
cv::Rect random_resized_box(int height, int width, double scale_min,
                            double scale_max, double ratio_min,
                            double ratio_max, const counter_rng& rng);

/// Mirrors left to right with probability `p`.
cv::Mat horizontal_flip(const cv::Mat& img, double p, const counter_rng& rng);

/// 8-bit pixels to float32 in [0, 1] (torchvision's ToTensor scaling);
/// float images pass through.
cv::Mat to_float(const cv::Mat& img);

/// (x - mean[c]) / std[c] per channel of a float32 image.
cv::Mat normalize_image(const cv::Mat& img, const std::vector<double>& mean,
                        const std::vector<double>& stddev);

} // namespace stoker
