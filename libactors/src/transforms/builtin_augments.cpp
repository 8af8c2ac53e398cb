#include <array>
#include <cmath>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

#include "stoker/errors.hpp"
#include "stoker/registry.hpp"
#include "kernels/augment_ops.hpp"
#include "registry/builtins.hpp"
#include "transforms/builtin_parts.hpp"

// torchvision's augmentations as built-in transforms (kernels/augment_ops:
// the ops, tested against torchvision).

namespace stoker::detail {

namespace {

// Right after the fused crop the pass's [0, 1] floats: the bytes the
// unfused chain has there; 8-bit pixels as they are.
cv::Mat as_bytes(const cv::Mat& img) {
  if (img.depth() != CV_32F)
    return img;
  cv::Mat bytes;
  img.convertTo(bytes, CV_8U, 255.0);
  return bytes;
}

// The sampling an entry's BILINEAR argument at `at` asks for.
augment_sampling sampling_at(const std::vector<double>& args, size_t at) {
  return args.size() > at && args[at] == 1 ? augment_sampling::bilinear
                                           : augment_sampling::nearest;
}

// The drawn ops applied in a row.
cv::Mat apply_draws(cv::Mat img, const std::vector<augment_draw>& draws,
                    augment_sampling sampling) {
  for (auto& d : draws)
    img = apply_augment_op(img, d.op, d.magnitude, sampling);
  return img;
}

} // namespace

void add_builtin_augments(registry& reg) {
  auto define = define_transform;
  // torchvision's TrivialAugmentWide on 8-bit pixels: one of its 14 ops
  // at a magnitude drawn from the sample's own generator.
  auto wide = define("trivial-augment-wide", 0, 1,
                     "trivial-augment-wide([BILINEAR]) with BILINEAR 0 "
                     "(nearest, torchvision's default) or 1");
  // The sampling argument, 8-bit pixels of 1 or 3 channels: the augment
  // policies' check (rand-augment's passes its BILINEAR here).
  auto augment_check = [](const entry_spec& t, chain_state& st) {
    if (!t.args.empty() && t.args[0] != 0 && t.args[0] != 1)
      return transform_error(t, "expected 0 (nearest) or 1 (bilinear) "
                                "sampling");
    if (st.encoded)
      return transform_error(t, "expected decoded pixels: put it after "
                                "decode");
    if (st.is_float)
      return transform_error(t, "expected 8-bit pixels: put it before "
                                "to-tensor");
    auto c = st.shape.channels;
    if (c != 0 && c != 1 && c != 3)
      return transform_error(t, "expected 1 or 3 channels; the chain has "
                                + std::to_string(c));
    return caf::error{};
  };
  wide.check = augment_check;
  wide.apply = pixels([](auto& a, const cv::Mat& img,
                         const counter_rng& rng) {
    return apply_draws(as_bytes(img), {draw_trivial_wide(rng)},
                       sampling_at(a, 0));
  });
  wide.eval = dropped_in_eval;
  must_add(reg.add(std::move(wide)));

  // torchvision's RandAugment on 8-bit pixels: N ops in a row, each at
  // bin M of BINS.
  auto rand = define("rand-augment", 0, 4,
                     "rand-augment([N[, M[, BINS[, BILINEAR]]]]) with N ops "
                     "(default 2) at magnitude bin M (9) of BINS (31), "
                     "BILINEAR 0 or 1");
  rand.check = [augment_check](const entry_spec& t, chain_state& st) {
    auto& a = t.args;
    auto whole = [](double v) { return v >= 0 && std::floor(v) == v; };
    if (!a.empty() && !(whole(a[0]) && a[0] <= 16))
      return transform_error(t, "expected N, the ops a sample gets, a "
                                "whole number from 0 to 16");
    double bins = a.size() > 2 ? a[2] : 31;
    if (a.size() > 2 && !(whole(bins) && bins >= 2 && bins <= 1000))
      return transform_error(t, "expected BINS a whole number from 2 to "
                                "1000");
    if (a.size() > 1 && !(whole(a[1]) && a[1] < bins))
      return transform_error(t, "expected M a whole number below BINS ("
                                + std::to_string(static_cast<int>(bins))
                                + ")");
    entry_spec sampling = t; // BILINEAR and the pixels
    sampling.args.clear();
    if (a.size() > 3)
      sampling.args.push_back(a[3]);
    return augment_check(sampling, st);
  };
  rand.apply = pixels([](auto& a, const cv::Mat& img,
                         const counter_rng& rng) {
    auto count = static_cast<uint32_t>(a.size() > 0 ? a[0] : 2);
    auto magnitude = static_cast<size_t>(a.size() > 1 ? a[1] : 9);
    auto bins = static_cast<size_t>(a.size() > 2 ? a[2] : 31);
    return apply_draws(as_bytes(img),
                       draw_rand_augment(count, magnitude, bins, img.rows,
                                         img.cols, rng),
                       sampling_at(a, 3));
  });
  rand.eval = dropped_in_eval;
  must_add(reg.add(std::move(rand)));

  // torchvision's AutoAugment with its ImageNet policy on 8-bit pixels.
  auto autoaug = define("auto-augment", 0, 1,
                        "auto-augment([BILINEAR]): the ImageNet policy; "
                        "BILINEAR 0 or 1");
  autoaug.check = augment_check;
  autoaug.apply = pixels([](auto& a, const cv::Mat& img,
                            const counter_rng& rng) {
    return apply_draws(as_bytes(img),
                       draw_auto_augment(img.rows, img.cols, rng),
                       sampling_at(a, 0));
  });
  autoaug.eval = dropped_in_eval;
  must_add(reg.add(std::move(autoaug)));

  // torchvision's ColorJitter on 8-bit pixels.
  auto jitter = define("color-jitter", 1, 4,
                       "color-jitter(BRIGHTNESS[, CONTRAST[, SATURATION[, "
                       "HUE]]]) with each >= 0 and HUE <= 0.5");
  jitter.check = [augment_check](const entry_spec& t, chain_state& st) {
    for (size_t k = 0; k < t.args.size(); ++k)
      if (!(t.args[k] >= 0 && (k < 3 || t.args[k] <= 0.5)))
        return transform_error(t, "expected BRIGHTNESS, CONTRAST and "
                                  "SATURATION >= 0 and 0 <= HUE <= 0.5");
    entry_spec pixels_only = t;
    pixels_only.args.clear();
    return augment_check(pixels_only, st);
  };
  jitter.apply = pixels([](auto& a, const cv::Mat& img,
                           const counter_rng& rng) {
    std::array<double, 4> strength{};
    for (size_t k = 0; k < a.size(); ++k)
      strength[k] = a[k];
    return color_jitter(as_bytes(img), draw_color_jitter(strength, rng));
  });
  jitter.eval = dropped_in_eval;
  must_add(reg.add(std::move(jitter)));

  // torchvision's RandomRotation (fill 0, no expand) on 8-bit pixels.
  auto rotation = define("random-rotation", 1, 2,
                         "random-rotation(DEGREES[, BILINEAR]) with "
                         "0 < DEGREES <= 180, BILINEAR 0 or 1");
  rotation.check = [augment_check](const entry_spec& t, chain_state& st) {
    if (!(t.args[0] > 0 && t.args[0] <= 180))
      return transform_error(t, "expected 0 < DEGREES <= 180: the angle "
                                "is drawn from [-DEGREES, DEGREES]");
    entry_spec sampling = t;
    sampling.args.erase(sampling.args.begin());
    return augment_check(sampling, st);
  };
  rotation.apply = pixels([](auto& a, const cv::Mat& img,
                             const counter_rng& rng) {
    return rotate_filled(as_bytes(img), random_rotation_angle(a[0], rng),
                         sampling_at(a, 1));
  });
  rotation.eval = dropped_in_eval;
  must_add(reg.add(std::move(rotation)));

  // torchvision's Grayscale: 1 or 3 equal channels, 8-bit or float.
  auto gray = define("grayscale", 0, 1,
                     "grayscale([CHANNELS]) with CHANNELS 1 or 3");
  gray.check = [](const entry_spec& t, chain_state& st) {
    double out = t.args.empty() ? 1 : t.args[0];
    if (out != 1 && out != 3)
      return transform_error(t, "expected CHANNELS 1 or 3");
    if (st.encoded)
      return transform_error(t, "expected decoded pixels: put it after "
                                "decode");
    auto c = st.shape.channels;
    if (c != 0 && c != 1 && c != 3)
      return transform_error(t, "expected 1 or 3 channels; the chain has "
                                + std::to_string(c));
    st.shape.channels = static_cast<uint32_t>(out);
    return caf::error{};
  };
  gray.apply = pixels([](auto& a, const cv::Mat& img, auto&) {
    return to_grayscale(img, a.empty() ? 1 : static_cast<int>(a[0]));
  });
  must_add(reg.add(std::move(gray)));

  // torchvision's RandomErasing: a box set to VALUE (0: the mean colour
  // after normalize), on 8-bit or float pixels.
  auto erasing = define("random-erasing", 0, 6,
                        "random-erasing([P[, SCALE_MIN, SCALE_MAX[, "
                        "RATIO_MIN, RATIO_MAX[, VALUE]]]])");
  erasing.check = [](const entry_spec& t, chain_state& st) {
    auto& a = t.args;
    if (st.encoded)
      return transform_error(t, "expected decoded pixels: put it after "
                                "decode");
    if (a.size() == 2 || a.size() == 4)
      return transform_error(t, "expected P, then SCALE_MIN and SCALE_MAX "
                                "together, then RATIO_MIN and RATIO_MAX "
                                "together");
    if (!a.empty() && !(a[0] >= 0 && a[0] <= 1))
      return transform_error(t, "expected a probability P from 0 to 1");
    if (a.size() >= 3 && !(a[1] > 0 && a[1] <= a[2] && a[2] < 1))
      return transform_error(t, "expected 0 < SCALE_MIN <= SCALE_MAX < 1");
    if (a.size() >= 5 && !(a[3] > 0 && a[3] <= a[4]))
      return transform_error(t, "expected 0 < RATIO_MIN <= RATIO_MAX");
    return caf::error{};
  };
  erasing.apply = pixels([](auto& a, const cv::Mat& img,
                            const counter_rng& rng) {
    erasing_options o;
    if (!a.empty())
      o.p = a[0];
    if (a.size() >= 3) {
      o.scale_min = a[1];
      o.scale_max = a[2];
    }
    if (a.size() >= 5) {
      o.ratio_min = a[3];
      o.ratio_max = a[4];
    }
    if (a.size() >= 6)
      o.value = a[5];
    return erase_box(img, random_erasing_box(img.rows, img.cols, o, rng),
                     o.value);
  });
  erasing.eval = dropped_in_eval;
  must_add(reg.add(std::move(erasing)));
}

} // namespace stoker::detail
