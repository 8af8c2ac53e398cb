#pragma once

// torchvision's augmentation ops (transforms.functional on uint8 tensors,
// torchvision 0.14, as TrivialAugmentWide applies them) on 8-bit HWC
// images of 1 or 3 channels: pure functions, tested op by op against
// python3-torchvision (tests/transforms/augment_ops_test.cpp).

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include <opencv2/core.hpp>

#include "stoker/counter_rng.hpp"

namespace stoker {

/// The ops of TrivialAugmentWide's space, in its order (the draw picks an
/// index into this list, as torchvision's does into its dict).
enum class augment_op : uint8_t {
  identity,
  shear_x,
  shear_y,
  translate_x,
  translate_y,
  rotate,
  brightness,
  color,
  contrast,
  sharpness,
  posterize,
  solarize,
  auto_contrast,
  equalize,
  invert, ///< AutoAugment's only, not in the 14 the others draw from
};

/// The ops TrivialAugmentWide and RandAugment draw from (all but invert).
constexpr size_t augment_op_count = 14;

/// torchvision's name of `op` ("ShearX").
std::string_view augment_op_name(augment_op op) noexcept;

/// How the geometric ops sample: torchvision's InterpolationMode NEAREST
/// (TrivialAugmentWide's default) or BILINEAR (the reference recipe's).
enum class augment_sampling : uint8_t { nearest, bilinear };

/// `op` at `magnitude` (torchvision's _apply_op: the shears' magnitude is
/// tan of the angle, translations in pixels (truncated), rotation in
/// degrees counter-clockwise about the centre, brightness, colour,
/// contrast and sharpness a factor 1 + magnitude, posterize the bits
/// kept, solarize the threshold). Pixels the geometric ops bring in from
/// outside are 0 (fill None). The colour ops compute in float32 and
/// truncate as torchvision does (the same bytes); the geometric ones
/// compute the source position in double, where torchvision's grid is
/// float32: bilinear values may round the other way at a near tie (within
/// 1 level, tested on under 1% of values).
/// `img`: CV_8UC1 or CV_8UC3, any layout; a new Mat comes back (or `img`
/// for identity).
cv::Mat apply_augment_op(const cv::Mat& img, augment_op op, double magnitude,
                         augment_sampling sampling
                         = augment_sampling::nearest);

/// One draw of TrivialAugmentWide's policy: the op, and its magnitude
/// (signed where the op is).
struct augment_draw {
  augment_op op = augment_op::identity;
  double magnitude = 0.0;
};

/// Bins of the magnitudes (TrivialAugmentWide's num_magnitude_bins).
constexpr size_t trivial_wide_bins = 31;

/// The magnitude of bin `bin` of `op` in TrivialAugmentWide's space, as
/// torchvision's float32 tables hold it (torch.linspace's values); 0 for
/// the ops without one.
double trivial_wide_magnitude(augment_op op, size_t bin) noexcept;

/// Whether `op`'s magnitude takes a random sign.
bool augment_op_signed(augment_op op) noexcept;

/// TrivialAugmentWide's draw from `rng` (words of block 0): an op
/// uniform over the 14, a bin uniform over 31 for the ops with a
/// magnitude, and a sign with even odds for the signed ones. The same
/// distributions as torchvision's (tested by chi-square), not its draws.
augment_draw draw_trivial_wide(const counter_rng& rng) noexcept;

/// The magnitude of bin `bin` of `bins` for `op` in RandAugment's space
/// on a `height` x `width` image (its translations scale with the size),
/// as torch.linspace's float32 values (within an ulp: torch's vectorised
/// kernel rounds a few values differently); 0 for the ops without one.
double rand_augment_magnitude(augment_op op, size_t bin, size_t bins,
                              int height, int width) noexcept;

/// RandAugment's ops for one sample: `count` ops, each uniform over the
/// 14 (block i of `rng` for op i), at bin `magnitude` of `bins`, signed
/// with even odds where the op is.
std::vector<augment_draw> draw_rand_augment(uint32_t count, size_t magnitude,
                                            size_t bins, int height,
                                            int width,
                                            const counter_rng& rng);

/// torchvision's F.rotate as RandomRotation calls it (fill 0, no expand):
/// `degrees` counter-clockwise about the centre; bilinear values blended
/// with the fill mask as torchvision does (an edge pixel darkened by the
/// share of its taps outside). 8-bit, 1 or 3 channels.
cv::Mat rotate_filled(const cv::Mat& img, double degrees,
                      augment_sampling sampling);

/// RandomRotation's angle: uniform in [-degrees, degrees) from word 0 of
/// block 0.
double random_rotation_angle(double degrees, const counter_rng& rng) noexcept;

/// torchvision's rgb_to_grayscale: 0.2989 R + 0.587 G + 0.114 B in float32
/// (8-bit: truncated), as `channels` (1 or 3) equal channels; a 1-channel
/// image as it is (3 copies for 3). 8-bit or float32.
cv::Mat to_grayscale(const cv::Mat& img, int channels);

/// One op of an AutoAugment sub-policy: applied with probability `p`, at
/// bin `magnitude_bin` of RandAugment's space with 10 bins (-1: the op
/// has no magnitude).
struct auto_augment_step {
  augment_op op;
  double p;
  int magnitude_bin;
};

/// AutoAugment's ImageNet policy: 25 sub-policies of 2 steps, as
/// torchvision's AutoAugmentPolicy.IMAGENET lists them.
constexpr size_t auto_augment_policies = 25;
const std::array<std::array<auto_augment_step, 2>, auto_augment_policies>&
auto_augment_imagenet() noexcept;

/// AutoAugment's ops for one sample (torchvision's get_params): a
/// sub-policy uniform over the 25 (word 0 of block 0), each step applied
/// when its uniform draw (words 1 and 2) is <= its p, signed with even
/// odds (word 3) where the op is.
std::vector<augment_draw> draw_auto_augment(int height, int width,
                                            const counter_rng& rng);

/// torchvision's adjust_hue on 8-bit RGB: the hue turned by `hue_factor`
/// (-0.5..0.5 of a turn) through its float32 HSV round trip, truncated
/// back to bytes; a 1-channel image as it is.
cv::Mat adjust_hue(const cv::Mat& img, double hue_factor);

/// ColorJitter's draw (torchvision's get_params): the four adjustments
/// in an order uniform over the 24 (block 0), each factor uniform in its
/// range (block 1: brightness, contrast and saturation in [max(0, 1 - x),
/// 1 + x], hue in [-x, x]); an adjustment whose x is 0 is left out.
struct color_jitter_draw {
  std::array<int, 4> order{}; ///< 0 brightness, 1 contrast, 2 saturation, 3 hue
  std::array<double, 4> factor{};
  std::array<bool, 4> active{};
};
color_jitter_draw draw_color_jitter(const std::array<double, 4>& strength,
                                    const counter_rng& rng) noexcept;

/// ColorJitter applied as drawn (8-bit, 1 or 3 channels).
cv::Mat color_jitter(const cv::Mat& img, const color_jitter_draw& d);

/// RandomErasing's parameters (torchvision's defaults).
struct erasing_options {
  double p = 0.5;
  double scale_min = 0.02;
  double scale_max = 0.33;
  double ratio_min = 0.3;
  double ratio_max = 3.3;
  double value = 0.0;
};

/// torchvision's RandomErasing.get_params from `rng`: with probability
/// `o.p` (block 10) a box of area scale x H x W and aspect ratio h / w
/// (log-uniform), h and w rounded as Python does, that fits strictly
/// inside, placed uniformly (blocks 0..9, one a try, 10 tries); an empty
/// rect when it does not erase or no try fits (torchvision then returns
/// the image as it is).
cv::Rect random_erasing_box(int height, int width, const erasing_options& o,
                            const counter_rng& rng) noexcept;

/// `img` (any depth, HWC) with `box` set to `value` in every channel; a
/// new Mat (`img` itself for an empty box).
cv::Mat erase_box(const cv::Mat& img, const cv::Rect& box, double value);

} // namespace stoker
