#include "kernels/augment_ops.hpp"

#include <algorithm>
#include <cmath>

#include "kernels/image_ops.hpp"

// The augment policies' draws and tables (TrivialAugmentWide, RandAugment,
// AutoAugment's ImageNet policy, RandomRotation's angle, RandomErasing's
// box); the ops themselves: augment_ops.cpp.

namespace stoker {

namespace {

// torch.linspace(0, 0.99, 31) and (0, 32, 31) as torch 1.13 holds them:
// its vectorised kernel rounds a few values differently from the formula
// below (bins 19 and 25 of the first, 13, 17 and 24 of the second).
constexpr std::array<float, trivial_wide_bins> factor_bins{
  0.0f,       0.033f,      0.066f, 0.099f, 0.132f,      0.16499999f,
  0.198f,     0.231f,      0.264f, 0.297f, 0.32999998f, 0.363f,
  0.396f,     0.429f,      0.462f, 0.495f, 0.528f,      0.561f,
  0.594f,     0.62700003f, 0.66f,  0.693f, 0.726f,      0.759f,
  0.792f,     0.825f,      0.85800004f,    0.89100003f, 0.924f,
  0.957f,     0.99f};
constexpr std::array<float, trivial_wide_bins> pixel_bins{
  0.0f,       1.0666667f, 2.1333334f, 3.2000003f, 4.266667f,  5.3333335f,
  6.4000006f, 7.466667f,  8.533334f,  9.6f,       10.666667f, 11.733334f,
  12.800001f, 13.866667f, 14.933334f, 16.0f,      17.066666f, 18.133333f,
  19.199999f, 20.266666f, 21.333332f, 22.4f,      23.466667f, 24.533333f,
  25.6f,      26.666666f, 27.733334f, 28.8f,      29.866667f, 30.933332f,
  32.0f};

// torch.linspace(start, end, steps)[i] in float32 by its scalar formula
// (from the start up to the middle, from the end after): torch's values
// for the rotation's and solarize's tables (tested).
float linspace(float start, float end, size_t steps, size_t i) {
  float step = (end - start) / static_cast<float>(steps - 1);
  if (i < steps / 2)
    return start + step * static_cast<float>(i);
  return end - step * static_cast<float>(steps - i - 1);
}

} // namespace

double trivial_wide_magnitude(augment_op op, size_t bin) noexcept {
  constexpr size_t n = trivial_wide_bins;
  switch (op) {
    case augment_op::shear_x:
    case augment_op::shear_y:
    case augment_op::brightness:
    case augment_op::color:
    case augment_op::contrast:
    case augment_op::sharpness:
      return factor_bins[bin];
    case augment_op::translate_x:
    case augment_op::translate_y:
      return pixel_bins[bin];
    case augment_op::rotate:
      return linspace(0.0f, 135.0f, n, bin);
    case augment_op::posterize: // 8 - round(i / 5): bits kept
      return 8.0 - std::nearbyint(static_cast<float>(bin)
                                  / static_cast<float>((n - 1) / 6.0));
    case augment_op::solarize:
      return linspace(255.0f, 0.0f, n, bin);
    default:
      return 0.0;
  }
}

double rand_augment_magnitude(augment_op op, size_t bin, size_t bins,
                              int height, int width) noexcept {
  switch (op) {
    case augment_op::shear_x:
    case augment_op::shear_y:
      return linspace(0.0f, 0.3f, bins, bin);
    case augment_op::translate_x: // torchvision: 150 / 331 of the size
      return linspace(0.0f, static_cast<float>(150.0 / 331.0 * width), bins,
                      bin);
    case augment_op::translate_y:
      return linspace(0.0f, static_cast<float>(150.0 / 331.0 * height), bins,
                      bin);
    case augment_op::rotate:
      return linspace(0.0f, 30.0f, bins, bin);
    case augment_op::brightness:
    case augment_op::color:
    case augment_op::contrast:
    case augment_op::sharpness:
      return linspace(0.0f, 0.9f, bins, bin);
    case augment_op::posterize: // 8 - round(i / ((bins - 1) / 4))
      return 8.0 - std::nearbyint(static_cast<float>(bin)
                                  / static_cast<float>((bins - 1) / 4.0));
    case augment_op::solarize:
      return linspace(255.0f, 0.0f, bins, bin);
    default:
      return 0.0;
  }
}

std::vector<augment_draw> draw_rand_augment(uint32_t count, size_t magnitude,
                                            size_t bins, int height,
                                            int width,
                                            const counter_rng& rng) {
  std::vector<augment_draw> out;
  for (uint32_t i = 0; i < count; ++i) {
    auto words = rng.block(i);
    augment_draw d;
    d.op = static_cast<augment_op>((uint64_t{words[0]} * augment_op_count)
                                   >> 32);
    d.magnitude = rand_augment_magnitude(d.op, magnitude, bins, height,
                                         width);
    if (augment_op_signed(d.op) && (words[2] & 1u))
      d.magnitude = -d.magnitude;
    out.push_back(d);
  }
  return out;
}

const std::array<std::array<auto_augment_step, 2>, auto_augment_policies>&
auto_augment_imagenet() noexcept {
  using o = augment_op;
  static const std::array<std::array<auto_augment_step, 2>,
                          auto_augment_policies>
    policies{{
      {{{o::posterize, 0.4, 8}, {o::rotate, 0.6, 9}}},
      {{{o::solarize, 0.6, 5}, {o::auto_contrast, 0.6, -1}}},
      {{{o::equalize, 0.8, -1}, {o::equalize, 0.6, -1}}},
      {{{o::posterize, 0.6, 7}, {o::posterize, 0.6, 6}}},
      {{{o::equalize, 0.4, -1}, {o::solarize, 0.2, 4}}},
      {{{o::equalize, 0.4, -1}, {o::rotate, 0.8, 8}}},
      {{{o::solarize, 0.6, 3}, {o::equalize, 0.6, -1}}},
      {{{o::posterize, 0.8, 5}, {o::equalize, 1.0, -1}}},
      {{{o::rotate, 0.2, 3}, {o::solarize, 0.6, 8}}},
      {{{o::equalize, 0.6, -1}, {o::posterize, 0.4, 6}}},
      {{{o::rotate, 0.8, 8}, {o::color, 0.4, 0}}},
      {{{o::rotate, 0.4, 9}, {o::equalize, 0.6, -1}}},
      {{{o::equalize, 0.0, -1}, {o::equalize, 0.8, -1}}},
      {{{o::invert, 0.6, -1}, {o::equalize, 1.0, -1}}},
      {{{o::color, 0.6, 4}, {o::contrast, 1.0, 8}}},
      {{{o::rotate, 0.8, 8}, {o::color, 1.0, 2}}},
      {{{o::color, 0.8, 8}, {o::solarize, 0.8, 7}}},
      {{{o::sharpness, 0.4, 7}, {o::invert, 0.6, -1}}},
      {{{o::shear_x, 0.6, 5}, {o::equalize, 1.0, -1}}},
      {{{o::color, 0.4, 0}, {o::equalize, 0.6, -1}}},
      {{{o::equalize, 0.4, -1}, {o::solarize, 0.2, 4}}},
      {{{o::solarize, 0.6, 5}, {o::auto_contrast, 0.6, -1}}},
      {{{o::invert, 0.6, -1}, {o::equalize, 1.0, -1}}},
      {{{o::color, 0.6, 4}, {o::contrast, 1.0, 8}}},
      {{{o::equalize, 0.8, -1}, {o::equalize, 0.6, -1}}},
    }};
  return policies;
}

std::vector<augment_draw> draw_auto_augment(int height, int width,
                                            const counter_rng& rng) {
  auto words = rng.block(0);
  auto& policy = auto_augment_imagenet()[static_cast<size_t>(
    (uint64_t{words[0]} * auto_augment_policies) >> 32)];
  std::vector<augment_draw> out;
  for (size_t i = 0; i < 2; ++i) {
    auto& step = policy[i];
    double u = (words[1 + i] >> 8) * (1.0 / 16777216.0);
    if (!(u <= step.p))
      continue;
    augment_draw d;
    d.op = step.op;
    if (step.magnitude_bin >= 0)
      d.magnitude = rand_augment_magnitude(
        step.op, static_cast<size_t>(step.magnitude_bin), 10, height, width);
    if (augment_op_signed(step.op) && ((words[3] >> i) & 1u))
      d.magnitude = -d.magnitude;
    out.push_back(d);
  }
  return out;
}

augment_draw draw_trivial_wide(const counter_rng& rng) noexcept {
  auto words = rng.block(0);
  auto pick = [](uint32_t word, uint64_t n) {
    return static_cast<size_t>((uint64_t{word} * n) >> 32);
  };
  augment_draw d;
  d.op = static_cast<augment_op>(pick(words[0], augment_op_count));
  d.magnitude = trivial_wide_magnitude(d.op, pick(words[1],
                                                  trivial_wide_bins));
  if (augment_op_signed(d.op) && (words[2] & 1u))
    d.magnitude = -d.magnitude;
  return d;
}

cv::Rect random_erasing_box(int height, int width, const erasing_options& o,
                            const counter_rng& rng) noexcept {
  if (!(rng.uniform(10) < o.p))
    return {};
  double area = static_cast<double>(height) * width;
  double log_lo = std::log(o.ratio_min);
  double log_hi = std::log(o.ratio_max);
  for (uint32_t attempt = 0; attempt < 10; ++attempt) {
    auto words = rng.block(attempt);
    auto u = [&](int i) { return (words[i] >> 8) * (1.0 / 16777216.0); };
    double target = area * (o.scale_min + (o.scale_max - o.scale_min) * u(0));
    double ratio = std::exp(log_lo + (log_hi - log_lo) * u(1));
    int h = python_round(std::sqrt(target * ratio));
    int w = python_round(std::sqrt(target / ratio));
    if (!(h < height && w < width))
      continue;
    int top = std::min(static_cast<int>(u(2) * (height - h + 1)), height - h);
    int left = std::min(static_cast<int>(u(3) * (width - w + 1)), width - w);
    return cv::Rect{left, top, w, h};
  }
  return {};
}

color_jitter_draw draw_color_jitter(const std::array<double, 4>& strength,
                                    const counter_rng& rng) noexcept {
  color_jitter_draw d;
  auto order = rng.block(0);
  auto factors = rng.block(1);
  d.order = {0, 1, 2, 3};
  for (size_t i = 3; i > 0; --i) { // Fisher-Yates: each order 1/24
    auto j = static_cast<size_t>((uint64_t{order[i]} * (i + 1)) >> 32);
    std::swap(d.order[i], d.order[j]);
  }
  for (size_t k = 0; k < 4; ++k) {
    double x = strength[k];
    d.active[k] = x > 0;
    double lo = k == 3 ? -x : std::max(0.0, 1.0 - x);
    double hi = k == 3 ? x : 1.0 + x;
    d.factor[k] = lo + (hi - lo) * ((factors[k] >> 8) * (1.0 / 16777216.0));
  }
  return d;
}

double random_rotation_angle(double degrees, const counter_rng& rng) noexcept {
  return -degrees + 2.0 * degrees * static_cast<double>(rng.uniform(0));
}

} // namespace stoker
