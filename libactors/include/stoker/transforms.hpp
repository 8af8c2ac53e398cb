#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <caf/expected.hpp>
#include <caf/meta/type_name.hpp>
#include <opencv2/core.hpp>

#include "stoker/counter_rng.hpp"

namespace stoker {

/// One entry of `pipeline.transforms`, parsed: "random-crop(28, 4)" is
/// name "random-crop" with args {28, 4}.
struct transform_spec {
  std::string name;
  std::vector<double> args;
  std::string text; ///< as written, for error messages
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, transform_spec& x) {
  return f(caf::meta::type_name("transform_spec"), x.name, x.args, x.text);
}

/// Parses "name" or "name(a, b, ...)" with numeric arguments; errors
/// (errc::invalid_config) quote the entry.
caf::expected<transform_spec> parse_transform(std::string_view text);

/// The shape of an image; 0 where it varies from image to image (files of
/// different sizes before a resize or crop).
struct image_shape {
  uint32_t height = 0;
  uint32_t width = 0;
  uint32_t channels = 0;
};

/// Checks a chain (known names, argument counts and ranges, `decode` first
/// when the source gives files, normalize and gaussian-blur after
/// to-tensor, a fixed output size) and returns the shape that comes out of
/// it for inputs of `input`. Errors name the entry and what was expected.
caf::expected<image_shape> check_chain(const std::vector<transform_spec>& chain,
                                       image_shape input, bool encoded);

/// The evaluation chain derived from a training chain: no augmentation.
/// Flips and blurs are dropped, random-crop(S, P) becomes center-crop(S),
/// random-resized-crop(S, ...) becomes resize(S) then center-crop(S).
std::vector<transform_spec>
eval_chain_of(const std::vector<transform_spec>& train);

/// Whose random draws a sample's transforms make: a pure function of
/// (seed, epoch, sample id, entry), so any worker makes the same sample.
struct draw_key {
  uint64_t seed = 0;
  uint64_t epoch = 0;
  uint64_t sample = 0;
};

/// What a source hands the chain: a file's bytes (to decode) or pixels
/// (HWC, CV_8U or CV_32F, 1..4 channels).
struct sample_input {
  std::vector<char> encoded;
  cv::Mat pixels;
};

/// Runs a checked chain on one sample on the calling thread and returns
/// HWC float32 pixels. A file that does not decode is errc::io_failure.
caf::expected<cv::Mat> apply_chain(const std::vector<transform_spec>& chain,
                                   sample_input input, const draw_key& key);

// -- the transforms one by one (HWC images; tested on hand-made cases) ----

/// Decodes an encoded image (PNG, JPEG, ...) to 8-bit RGB, or grayscale
/// with `gray`; an empty Mat if it does not decode.
cv::Mat decode_image(const std::vector<char>& bytes, bool gray);

/// Bilinear resize (half-pixel centres, as torchvision's antialias=False).
/// `height` 0: the shorter side becomes `width`, keeping the aspect ratio.
cv::Mat resize_image(const cv::Mat& img, uint32_t height, uint32_t width);

/// The centre `height` x `width` window; zero padding where the image is
/// smaller (torchvision's CenterCrop).
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
