#include "kernels/augment_ops.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/image_ops.hpp"

namespace stoker {

namespace {

constexpr double pi = 3.14159265358979323846;

// torchvision's _blend on uint8 of one value: float32 products and sum
// (no fused multiply-add: -ffp-contract=off), clamped, then truncated
// (Tensor.to(uint8)).
inline uint8_t blend_value(float r, float q, float a, float b) {
  float first = r * a;
  float second = q * b;
  float v = first + second;
  v = v < 0.0f ? 0.0f : (v > 255.0f ? 255.0f : v);
  return static_cast<uint8_t>(v);
}

using lut = std::array<uint8_t, 256>;

// `table` (one a channel) applied to every value of `img`.
cv::Mat apply_luts(const cv::Mat& img, const std::vector<lut>& table) {
  cv::Mat out(img.size(), img.type());
  const uint8_t* __restrict a = img.ptr<uint8_t>();
  uint8_t* __restrict o = out.ptr<uint8_t>();
  size_t n = img.total();
  if (table.size() == 1) {
    const lut& t = table[0];
    size_t values = n * static_cast<size_t>(img.channels());
    for (size_t i = 0; i < values; ++i)
      o[i] = t[a[i]];
    return out;
  }
  for (size_t i = 0; i < n; ++i)
    for (size_t k = 0; k < 3; ++k)
      o[3 * i + k] = table[k][a[3 * i + k]];
  return out;
}

// A blend against a constant (brightness: 0, contrast: the mean): a
// function of the value alone, so a table.
cv::Mat blend_constant(const cv::Mat& img, double ratio, float other) {
  auto r = static_cast<float>(ratio);
  auto q = static_cast<float>(1.0 - ratio);
  lut t;
  for (int v = 0; v < 256; ++v)
    t[static_cast<size_t>(v)] = blend_value(r, q, static_cast<float>(v),
                                            other);
  return apply_luts(img, {t});
}

// A blend against another 8-bit image of the same shape.
cv::Mat blend_images(const cv::Mat& img, const cv::Mat& other, double ratio) {
  auto r = static_cast<float>(ratio);
  auto q = static_cast<float>(1.0 - ratio);
  cv::Mat out(img.size(), img.type());
  const uint8_t* __restrict a = img.ptr<uint8_t>();
  const uint8_t* __restrict b = other.ptr<uint8_t>();
  uint8_t* __restrict o = out.ptr<uint8_t>();
  size_t values = img.total() * static_cast<size_t>(img.channels());
  for (size_t i = 0; i < values; ++i)
    o[i] = blend_value(r, q, a[i], b[i]);
  return out;
}

// rgb_to_grayscale's uint8 value of pixel `p` (3 channels).
inline uint8_t gray_of(const uint8_t* p) {
  float l = 0.2989f * static_cast<float>(p[0])
            + 0.587f * static_cast<float>(p[1]);
  l = l + 0.114f * static_cast<float>(p[2]);
  return static_cast<uint8_t>(l);
}

cv::Mat saturation(const cv::Mat& img, double factor) {
  if (img.channels() == 1) // torchvision: as PIL, a gray image stays
    return img.clone();
  cv::Mat gray(img.size(), img.type());
  const uint8_t* p = img.ptr<uint8_t>();
  uint8_t* g = gray.ptr<uint8_t>();
  size_t n = img.total();
  for (size_t i = 0; i < n; ++i)
    g[3 * i] = g[3 * i + 1] = g[3 * i + 2] = gray_of(p + 3 * i);
  return blend_images(img, gray, factor);
}

cv::Mat contrast(const cv::Mat& img, double factor) {
  // The mean of the gray image (or of the one channel): a sum of integers,
  // exact in float32 below 2^24, as torch's reduction has it then.
  const uint8_t* p = img.ptr<uint8_t>();
  size_t n = img.total();
  uint64_t sum = 0;
  if (img.channels() == 3)
    for (size_t i = 0; i < n; ++i)
      sum += gray_of(p + 3 * i);
  else
    for (size_t i = 0; i < n; ++i)
      sum += p[i];
  float mean = static_cast<float>(sum) / static_cast<float>(n);
  return blend_constant(img, factor, mean);
}

cv::Mat sharpness(const cv::Mat& img, double factor) {
  int h = img.rows;
  int w = img.cols;
  int c = img.channels();
  if (h <= 2 || w <= 2)
    return img.clone();
  // The degenerate image: the 3x3 kernel [1 1 1; 1 5 1; 1 1 1] / 13 inside,
  // rounded (an integer over 13 is never a tie: (2s + 13) / 26 in
  // integers), the border as it is.
  cv::Mat degenerate = img.clone();
  size_t row = static_cast<size_t>(w) * static_cast<size_t>(c);
  std::vector<int> columns(row); // each value's sum over rows y-1..y+1
  for (int y = 1; y < h - 1; ++y) {
    const uint8_t* up = img.ptr<uint8_t>(y - 1);
    const uint8_t* mid = img.ptr<uint8_t>(y);
    const uint8_t* down = img.ptr<uint8_t>(y + 1);
    for (size_t i = 0; i < row; ++i)
      columns[i] = up[i] + mid[i] + down[i];
    uint8_t* d = degenerate.ptr<uint8_t>(y);
    for (size_t i = static_cast<size_t>(c); i + c < row; ++i) {
      int s = columns[i - c] + columns[i] + columns[i + c] + 4 * mid[i];
      d[i] = static_cast<uint8_t>((2 * s + 13) / 26);
    }
  }
  return blend_images(img, degenerate, factor);
}

cv::Mat auto_contrast(const cv::Mat& img) {
  int c = img.channels();
  std::vector<lut> tables(static_cast<size_t>(c));
  const uint8_t* p = img.ptr<uint8_t>();
  size_t n = img.total();
  for (int k = 0; k < c; ++k) {
    uint8_t lo = 255;
    uint8_t hi = 0;
    for (size_t i = 0; i < n; ++i) {
      lo = std::min(lo, p[i * c + k]);
      hi = std::max(hi, p[i * c + k]);
    }
    // torchvision: an infinite scale (a flat channel) becomes 1, the
    // minimum 0.
    float low = lo == hi ? 0.0f : lo;
    float scale = lo == hi ? 1.0f : 255.0f / static_cast<float>(hi - lo);
    for (int v = 0; v < 256; ++v) {
      float x = (static_cast<float>(v) - low) * scale;
      x = x < 0.0f ? 0.0f : (x > 255.0f ? 255.0f : x);
      tables[static_cast<size_t>(k)][static_cast<size_t>(v)]
        = static_cast<uint8_t>(x);
    }
  }
  return apply_luts(img, tables);
}

cv::Mat equalize(const cv::Mat& img) {
  int c = img.channels();
  size_t n = img.total();
  const uint8_t* p = img.ptr<uint8_t>();
  std::vector<lut> tables(static_cast<size_t>(c));
  for (int k = 0; k < c; ++k) {
    auto& table = tables[static_cast<size_t>(k)];
    for (size_t v = 0; v < 256; ++v)
      table[v] = static_cast<uint8_t>(v);
    std::array<int64_t, 256> hist{};
    for (size_t i = 0; i < n; ++i)
      ++hist[p[i * c + k]];
    // torchvision's _scale_channel: the step from every nonzero bin but
    // the last; none (a flat channel) leaves it.
    int64_t last = 0;
    int64_t total = 0;
    for (auto count : hist)
      if (count != 0) {
        total += count;
        last = count;
      }
    int64_t step = (total - last) / 255;
    if (step == 0)
      continue;
    int64_t cumulative = 0;
    for (size_t v = 0; v < 256; ++v) { // shifted by one: table[0] is 0
      int64_t value = v == 0 ? 0 : (cumulative + step / 2) / step;
      table[v] = static_cast<uint8_t>(std::min<int64_t>(value, 255));
      cumulative += hist[v];
    }
  }
  return apply_luts(img, tables);
}

// torchvision's _get_inverse_affine_matrix (inverted, scale 1): output
// position relative to `center` -> input position.
std::array<double, 6> inverse_affine(double cx, double cy, double angle,
                                     double tx, double ty, double shear_x,
                                     double shear_y) {
  double rot = angle * pi / 180.0;
  double sx = shear_x * pi / 180.0;
  double sy = shear_y * pi / 180.0;
  double a = std::cos(rot - sy) / std::cos(sy);
  double b = -std::cos(rot - sy) * std::tan(sx) / std::cos(sy) - std::sin(rot);
  double c = std::sin(rot - sy) / std::cos(sy);
  double d = -std::sin(rot - sy) * std::tan(sx) / std::cos(sy) + std::cos(rot);
  std::array<double, 6> m{d, -b, 0.0, -c, a, 0.0};
  m[2] += m[0] * (-cx - tx) + m[1] * (-cy - ty);
  m[5] += m[3] * (-cx - tx) + m[4] * (-cy - ty);
  m[2] += cx;
  m[5] += cy;
  return m;
}

// Round half to even, as std::nearbyint in the default rounding mode, for
// |x| < 2^51, without a call into libm (no SSE4.1 round instruction in
// the baseline ISA).
inline double round_even(double x) {
  constexpr double magic = 6755399441055744.0; // 1.5 * 2^52
  volatile double shifted = x + magic; // not folded away
  return shifted - magic;
}

// F_t.affine's grid and grid_sample (zeros outside, align_corners False):
// output pixel (x, y) samples the input at m applied to its position from
// the centre, plus (size - 1) / 2.
// `fill_mask`: bilinear values times the share of their taps inside, as
// torchvision blends with a fill of 0 (RandomRotation's), not zero
// padding alone (the augment policies' fill None).
template <int C>
void warp_rows(const cv::Mat& img, const std::array<double, 6>& m,
               augment_sampling sampling, bool fill_mask, cv::Mat& out) {
  int h = img.rows;
  int w = img.cols;
  auto pixel = [&](int y, int x) { return img.ptr<uint8_t>(y) + x * C; };
  for (int y = 0; y < h; ++y) {
    double gy = y - h * 0.5 + 0.5;
    uint8_t* o = out.ptr<uint8_t>(y);
    for (int x = 0; x < w; ++x, o += C) {
      double gx = x - w * 0.5 + 0.5;
      double ix = m[0] * gx + m[1] * gy + m[2] + (w - 1) * 0.5;
      double iy = m[3] * gx + m[4] * gy + m[5] + (h - 1) * 0.5;
      if (sampling == augment_sampling::nearest) {
        auto sx = static_cast<int>(round_even(ix));
        auto sy = static_cast<int>(round_even(iy));
        if (sx >= 0 && sy >= 0 && sx < w && sy < h) {
          const uint8_t* s = pixel(sy, sx);
          for (int k = 0; k < C; ++k)
            o[k] = s[k];
        }
        continue;
      }
      auto x0 = static_cast<int>(std::floor(ix));
      auto y0 = static_cast<int>(std::floor(iy));
      if (x0 < -1 || y0 < -1 || x0 >= w || y0 >= h)
        continue; // every tap outside: 0
      double fx = ix - x0;
      double fy = iy - y0;
      double weights[4] = {(1 - fy) * (1 - fx), (1 - fy) * fx, fy * (1 - fx),
                           fy * fx};
      double v[C] = {};
      double inside = 0;
      for (int t = 0; t < 4; ++t) {
        int sx = x0 + (t & 1);
        int sy = y0 + (t >> 1);
        if (sx < 0 || sy < 0 || sx >= w || sy >= h)
          continue;
        inside += weights[t];
        const uint8_t* s = pixel(sy, sx);
        for (int k = 0; k < C; ++k)
          v[k] += weights[t] * s[k];
      }
      if (fill_mask)
        for (int k = 0; k < C; ++k)
          v[k] *= inside;
      for (int k = 0; k < C; ++k)
        o[k] = static_cast<uint8_t>(
          std::min(std::max(round_even(v[k]), 0.0), 255.0));
    }
  }
}

cv::Mat warp(const cv::Mat& img, const std::array<double, 6>& m,
             augment_sampling sampling, bool fill_mask = false) {
  cv::Mat out = cv::Mat::zeros(img.size(), img.type());
  if (img.channels() == 3)
    warp_rows<3>(img, m, sampling, fill_mask, out);
  else
    warp_rows<1>(img, m, sampling, fill_mask, out);
  return out;
}

} // namespace

std::string_view augment_op_name(augment_op op) noexcept {
  static constexpr std::array<std::string_view, augment_op_count + 1> names{
    "Identity",   "ShearX",     "ShearY",   "TranslateX",   "TranslateY",
    "Rotate",     "Brightness", "Color",    "Contrast",     "Sharpness",
    "Posterize",  "Solarize",   "AutoContrast", "Equalize", "Invert"};
  return names[static_cast<size_t>(op)];
}

bool augment_op_signed(augment_op op) noexcept {
  switch (op) {
    case augment_op::shear_x:
    case augment_op::shear_y:
    case augment_op::translate_x:
    case augment_op::translate_y:
    case augment_op::rotate:
    case augment_op::brightness:
    case augment_op::color:
    case augment_op::contrast:
    case augment_op::sharpness:
      return true;
    default:
      return false;
  }
}


cv::Mat rotate_filled(const cv::Mat& input, double degrees,
                      augment_sampling sampling) {
  cv::Mat img = input.isContinuous() ? input : input.clone();
  return warp(img, inverse_affine(0.0, 0.0, -degrees, 0.0, 0.0, 0.0, 0.0),
              sampling, true);
}

cv::Mat adjust_hue(const cv::Mat& input, double hue_factor) {
  cv::Mat img = input.isContinuous() ? input : input.clone();
  if (img.channels() == 1) // torchvision: as PIL, a gray image stays
    return img.clone();
  // torchvision's _rgb2hsv and _hsv2rgb in float32, operation by
  // operation (so the same bytes), on x / 255.
  auto shift = static_cast<float>(hue_factor);
  cv::Mat out(img.size(), img.type());
  const uint8_t* p = img.ptr<uint8_t>();
  uint8_t* o = out.ptr<uint8_t>();
  for (size_t i = 0; i < img.total(); ++i, p += 3, o += 3) {
    float r = static_cast<float>(p[0]) / 255.0f;
    float g = static_cast<float>(p[1]) / 255.0f;
    float b = static_cast<float>(p[2]) / 255.0f;
    float maxc = std::max(std::max(r, g), b);
    float minc = std::min(std::min(r, g), b);
    bool eqc = maxc == minc;
    float cr = maxc - minc;
    float s = cr / (eqc ? 1.0f : maxc);
    float divisor = eqc ? 1.0f : cr;
    float rc = (maxc - r) / divisor;
    float gc = (maxc - g) / divisor;
    float bc = (maxc - b) / divisor;
    float hr = maxc == r ? bc - gc : 0.0f;
    float hg = (maxc == g && maxc != r) ? (2.0f + rc) - bc : 0.0f;
    float hb = (maxc != g && maxc != r) ? (4.0f + gc) - rc : 0.0f;
    float h = (hr + hg) + hb;
    h = std::fmod(h / 6.0f + 1.0f, 1.0f);
    h = h + shift; // torch's remainder: a - floor(a) for a divisor of 1
    h = h - std::floor(h);
    float v = maxc;
    float i6 = std::floor(h * 6.0f);
    float f = (h * 6.0f) - i6;
    int sector = static_cast<int>(i6) % 6;
    if (sector < 0)
      sector += 6;
    auto unit = [](float x) { return std::min(std::max(x, 0.0f), 1.0f); };
    float pp = unit(v * (1.0f - s));
    float qq = unit(v * (1.0f - s * f));
    float tt = unit(v * (1.0f - s * (1.0f - f)));
    float rgb[6][3] = {{v, tt, pp}, {qq, v, pp}, {pp, v, tt},
                       {pp, qq, v}, {tt, pp, v}, {v, pp, qq}};
    for (int k = 0; k < 3; ++k)
      o[k] = static_cast<uint8_t>(rgb[sector][k] * 255.0f);
  }
  return out;
}

cv::Mat color_jitter(const cv::Mat& input, const color_jitter_draw& d) {
  cv::Mat img = input.isContinuous() ? input : input.clone();
  for (int k : d.order) {
    if (!d.active[static_cast<size_t>(k)])
      continue;
    double f = d.factor[static_cast<size_t>(k)];
    switch (k) {
      case 0:
        img = blend_constant(img, f, 0.0f);
        break;
      case 1:
        img = contrast(img, f);
        break;
      case 2:
        img = saturation(img, f);
        break;
      default:
        img = adjust_hue(img, f);
    }
  }
  return img;
}

cv::Mat to_grayscale(const cv::Mat& input, int channels) {
  cv::Mat img = input.isContinuous() ? input : input.clone();
  if (img.channels() == 1) // torchvision: a clone (expanded to 3 if asked)
    return channels == 1 ? img.clone() : [&] {
      cv::Mat three;
      cv::merge(std::vector<cv::Mat>{img, img, img}, three);
      return three;
    }();
  cv::Mat gray(img.size(), CV_MAKETYPE(img.depth(), channels));
  size_t n = img.total();
  for (size_t i = 0; i < n; ++i) {
    if (img.depth() == CV_8U) {
      uint8_t l = gray_of(img.ptr<uint8_t>() + 3 * i);
      for (int k = 0; k < channels; ++k)
        gray.ptr<uint8_t>()[i * channels + k] = l;
    } else {
      const float* p = img.ptr<float>() + 3 * i;
      float l = 0.2989f * p[0] + 0.587f * p[1];
      l = l + 0.114f * p[2];
      for (int k = 0; k < channels; ++k)
        gray.ptr<float>()[i * channels + k] = l;
    }
  }
  return gray;
}

cv::Mat erase_box(const cv::Mat& img, const cv::Rect& box, double value) {
  if (box.empty())
    return img;
  cv::Mat out = img.clone();
  out(box).setTo(cv::Scalar::all(value));
  return out;
}

cv::Mat apply_augment_op(const cv::Mat& input, augment_op op,
                         double magnitude, augment_sampling sampling) {
  cv::Mat img = input.isContinuous() ? input : input.clone();
  int w = img.cols;
  int h = img.rows;
  switch (op) {
    case augment_op::identity:
      return img;
    case augment_op::shear_x: // about the top-left corner (center [0, 0])
      return warp(img,
                  inverse_affine(-w * 0.5, -h * 0.5, 0.0, 0.0, 0.0,
                                 std::atan(magnitude) * 180.0 / pi, 0.0),
                  sampling);
    case augment_op::shear_y:
      return warp(img,
                  inverse_affine(-w * 0.5, -h * 0.5, 0.0, 0.0, 0.0, 0.0,
                                 std::atan(magnitude) * 180.0 / pi),
                  sampling);
    case augment_op::translate_x:
      return warp(img,
                  inverse_affine(0.0, 0.0, 0.0, std::trunc(magnitude), 0.0,
                                 0.0, 0.0),
                  sampling);
    case augment_op::translate_y:
      return warp(img,
                  inverse_affine(0.0, 0.0, 0.0, 0.0, std::trunc(magnitude),
                                 0.0, 0.0),
                  sampling);
    case augment_op::rotate: // F.rotate turns the angle for affine's sense
      return warp(img, inverse_affine(0.0, 0.0, -magnitude, 0.0, 0.0, 0.0, 0.0),
                  sampling);
    case augment_op::brightness:
      return blend_constant(img, 1.0 + magnitude, 0.0f);
    case augment_op::color:
      return saturation(img, 1.0 + magnitude);
    case augment_op::contrast:
      return contrast(img, 1.0 + magnitude);
    case augment_op::sharpness:
      return sharpness(img, 1.0 + magnitude);
    case augment_op::posterize: {
      auto bits = static_cast<int>(magnitude);
      auto mask = static_cast<uint8_t>(-(1 << (8 - bits)));
      lut t;
      for (size_t v = 0; v < 256; ++v)
        t[v] = static_cast<uint8_t>(v & mask);
      return apply_luts(img, {t});
    }
    case augment_op::solarize: {
      auto threshold = static_cast<float>(magnitude);
      lut t;
      for (size_t v = 0; v < 256; ++v)
        t[v] = static_cast<float>(v) >= threshold
                 ? static_cast<uint8_t>(255 - v)
                 : static_cast<uint8_t>(v);
      return apply_luts(img, {t});
    }
    case augment_op::auto_contrast:
      return auto_contrast(img);
    case augment_op::equalize:
      return equalize(img);
    case augment_op::invert: {
      lut t;
      for (size_t v = 0; v < 256; ++v)
        t[v] = static_cast<uint8_t>(255 - v);
      return apply_luts(img, {t});
    }
  }
  return img;
}

} // namespace stoker
