#include "stoker/transforms.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "stoker/blur.hpp"
#include "stoker/errors.hpp"

namespace stoker {

namespace {

caf::error bad(const transform_spec& t, const std::string& what) {
  return make_error(errc::invalid_config,
                    "pipeline.transforms: \"" + t.text + "\": " + what);
}

// What every transform accepts: argument counts and what they mean.
struct transform_rule {
  std::string_view name;
  size_t min_args;
  size_t max_args;
  std::string_view usage;
};

const transform_rule rules[] = {
  {"decode", 0, 1, "decode or decode(1) for grayscale"},
  {"resize", 1, 2, "resize(SHORTER_SIDE) or resize(HEIGHT, WIDTH)"},
  {"center-crop", 1, 2, "center-crop(SIZE) or center-crop(HEIGHT, WIDTH)"},
  {"random-resized-crop", 1, 5,
   "random-resized-crop(SIZE[, SCALE_MIN, SCALE_MAX[, RATIO_MIN, "
   "RATIO_MAX]])"},
  {"random-crop", 1, 2, "random-crop(SIZE[, PADDING])"},
  {"horizontal-flip", 0, 1, "horizontal-flip([P]) with 0 <= P <= 1"},
  {"normalize", 2, 8, "normalize(MEAN, STD) or normalize(M1..Mc, S1..Sc)"},
  {"gaussian-blur", 1, 4,
   "gaussian-blur(KERNEL[, SIGMA_MIN[, SIGMA_MAX[, REPEAT]]])"},
  {"to-tensor", 0, 0, "to-tensor"},
};

const transform_rule* rule_of(std::string_view name) {
  for (auto& r : rules)
    if (r.name == name)
      return &r;
  return nullptr;
}

bool whole(double x, double lo, double hi) {
  return x >= lo && x <= hi && std::floor(x) == x;
}

uint32_t u32(double x) {
  return static_cast<uint32_t>(x);
}

counter_rng rng_for(const draw_key& key, size_t entry) {
  return counter_rng{{key.seed, key.epoch, key.sample,
                      static_cast<rng_stage>(
                        static_cast<uint32_t>(rng_stage::transforms)
                        + static_cast<uint32_t>(entry))}};
}

// A uniform integer in [lo, hi] from word `index` of the stream.
int uniform_int(const counter_rng& rng, uint32_t index, int lo, int hi) {
  if (hi <= lo)
    return lo;
  auto span = static_cast<uint64_t>(hi - lo) + 1;
  return lo + static_cast<int>((uint64_t{rng.block(index)[1]} * span) >> 32);
}

std::string trimmed(std::string_view s) {
  auto b = s.find_first_not_of(" \t");
  if (b == std::string_view::npos)
    return {};
  auto e = s.find_last_not_of(" \t");
  return std::string{s.substr(b, e - b + 1)};
}

} // namespace

caf::expected<transform_spec> parse_transform(std::string_view text) {
  transform_spec t;
  t.text = trimmed(text);
  auto open = t.text.find('(');
  t.name = trimmed(t.text.substr(0, open));
  auto fail = [&](const std::string& why) { return bad(t, why); };
  if (open != std::string::npos) {
    if (t.text.back() != ')')
      return fail("expected NAME(ARG, ...) with a closing parenthesis");
    auto inside = t.text.substr(open + 1, t.text.size() - open - 2);
    if (!trimmed(inside).empty()) {
      size_t at = 0;
      for (;;) {
        auto comma = inside.find(',', at);
        auto word = trimmed(inside.substr(at, comma - at));
        char* end = nullptr;
        double v = std::strtod(word.c_str(), &end);
        if (word.empty() || *end != '\0' || !std::isfinite(v))
          return fail("argument '" + word + "' is not a number");
        t.args.push_back(v);
        if (comma == std::string::npos)
          break;
        at = comma + 1;
      }
    }
  }
  auto rule = rule_of(t.name);
  if (rule == nullptr)
    return fail("unknown transform '" + t.name
                + "'; expected decode, resize, center-crop, "
                  "random-resized-crop, random-crop, horizontal-flip, "
                  "normalize, gaussian-blur or to-tensor");
  if (t.args.size() < rule->min_args || t.args.size() > rule->max_args)
    return fail(std::to_string(t.args.size()) + " argument(s); usage: "
                + std::string{rule->usage});
  return t;
}

caf::expected<image_shape> check_chain(const std::vector<transform_spec>& chain,
                                       image_shape shape, bool encoded) {
  bool is_float = false;
  bool decoded = !encoded;
  for (auto& t : chain) {
    auto& a = t.args;
    auto size_arg = [&](size_t i) { return whole(a[i], 1, 16384); };
    if (!decoded && t.name != "decode")
      return bad(t, "the source gives image files; expected \"decode\" as "
                    "the first transform");
    if (t.name == "decode") {
      if (decoded && encoded)
        return bad(t, "the image is decoded already");
      if (!a.empty() && a[0] != 1 && a[0] != 3)
        return bad(t, "expected decode (RGB) or decode(1) (grayscale)");
      shape.channels = !a.empty() && a[0] == 1 ? 1 : (encoded ? 3
                                                               : shape.channels);
      decoded = true;
    } else if (t.name == "resize" || t.name == "center-crop") {
      if (!size_arg(0) || (a.size() == 2 && !size_arg(1)))
        return bad(t, "sizes must be whole numbers from 1 to 16384");
      if (a.size() == 2 || t.name == "center-crop") {
        shape.height = u32(a[0]);
        shape.width = u32(a.size() == 2 ? a[1] : a[0]);
      } else if (shape.height != 0 && shape.width != 0) {
        auto s = static_cast<double>(u32(a[0]));
        auto h = static_cast<double>(shape.height);
        auto w = static_cast<double>(shape.width);
        // The shorter side becomes s (torchvision rounds the other down).
        if (h <= w) {
          shape.width = u32(std::floor(s * w / h));
          shape.height = u32(s);
        } else {
          shape.height = u32(std::floor(s * h / w));
          shape.width = u32(s);
        }
      } else {
        shape.height = shape.width = 0; // depends on each image
      }
    } else if (t.name == "random-resized-crop") {
      if (!size_arg(0))
        return bad(t, "SIZE must be a whole number from 1 to 16384");
      if (a.size() == 2 || a.size() == 4)
        return bad(t, "give both SCALE_MIN and SCALE_MAX (and both ratios)");
      if (a.size() >= 3 && !(a[1] > 0 && a[1] <= a[2] && a[2] <= 1))
        return bad(t, "expected 0 < SCALE_MIN <= SCALE_MAX <= 1");
      if (a.size() == 5 && !(a[3] > 0 && a[3] <= a[4]))
        return bad(t, "expected 0 < RATIO_MIN <= RATIO_MAX");
      shape.height = shape.width = u32(a[0]);
    } else if (t.name == "random-crop") {
      if (!size_arg(0) || (a.size() == 2 && !whole(a[1], 0, 4096)))
        return bad(t, "SIZE from 1 to 16384, PADDING a whole number from 0");
      uint32_t pad = a.size() == 2 ? u32(a[1]) : 0;
      if (shape.height != 0 && shape.width != 0
          && (shape.height + 2 * pad < u32(a[0])
              || shape.width + 2 * pad < u32(a[0])))
        return bad(t, "the padded image (" + std::to_string(shape.height)
                        + "x" + std::to_string(shape.width) + " + "
                        + std::to_string(pad)
                        + " on each side) is smaller than the crop");
      shape.height = shape.width = u32(a[0]);
    } else if (t.name == "horizontal-flip") {
      if (!a.empty() && !(a[0] >= 0 && a[0] <= 1))
        return bad(t, "expected a probability from 0 to 1");
    } else if (t.name == "to-tensor") {
      is_float = true;
    } else if (t.name == "normalize") {
      if (!is_float)
        return bad(t, "normalize works on float pixels; put it after "
                      "to-tensor");
      if (a.size() != 2 && a.size() != 2 * size_t{shape.channels})
        return bad(t, "expected one MEAN and STD for all channels or one "
                      "of each per channel ("
                        + std::to_string(shape.channels) + ")");
      for (size_t i = a.size() / 2; i < a.size(); ++i)
        if (!(a[i] > 0))
          return bad(t, "every STD must be above 0");
    } else if (t.name == "gaussian-blur") {
      if (!is_float)
        return bad(t, "gaussian-blur works on float pixels; put it after "
                      "to-tensor");
      if (!whole(a[0], 1, 99) || u32(a[0]) % 2 == 0)
        return bad(t, "KERNEL must be odd, from 1 to 99");
      double lo = a.size() > 1 ? a[1] : 0.1;
      double hi = a.size() > 2 ? a[2] : (a.size() > 1 ? a[1] : 2.0);
      if (!(lo > 0 && lo <= hi && hi <= 100))
        return bad(t, "expected 0 < SIGMA_MIN <= SIGMA_MAX <= 100");
      if (a.size() == 4 && !whole(a[3], 1, 1000))
        return bad(t, "REPEAT must be a whole number from 1 to 1000");
    }
  }
  if (!decoded)
    return make_error(errc::invalid_config,
                      "pipeline.transforms: the source gives image files; "
                      "expected \"decode\" first");
  if (shape.height == 0 || shape.width == 0)
    return make_error(errc::invalid_config,
                      "pipeline.transforms: the images' size varies; expected "
                      "a resize(HEIGHT, WIDTH), center-crop, random-crop or "
                      "random-resized-crop that fixes it");
  return shape;
}

std::vector<transform_spec>
eval_chain_of(const std::vector<transform_spec>& train) {
  std::vector<transform_spec> out;
  for (auto& t : train) {
    if (t.name == "horizontal-flip" || t.name == "gaussian-blur")
      continue;
    if (t.name == "random-crop") {
      out.push_back({"center-crop", {t.args[0]},
                     "center-crop(" + std::to_string(u32(t.args[0])) + ")"});
    } else if (t.name == "random-resized-crop") {
      auto s = std::to_string(u32(t.args[0]));
      out.push_back({"resize", {t.args[0]}, "resize(" + s + ")"});
      out.push_back({"center-crop", {t.args[0]}, "center-crop(" + s + ")"});
    } else {
      out.push_back(t);
    }
  }
  return out;
}

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
  cv::Mat out;
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
  int top = static_cast<int>(std::lround((src.rows - h) / 2.0));
  int left = static_cast<int>(std::lround((src.cols - w) / 2.0));
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
    int w = static_cast<int>(std::lround(std::sqrt(target * ratio)));
    int h = static_cast<int>(std::lround(std::sqrt(target / ratio)));
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
    h = static_cast<int>(std::lround(w / ratio_min));
  else if (in_ratio > ratio_max)
    w = static_cast<int>(std::lround(h * ratio_max));
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
  cv::Mat out = img.clone();
  int c = out.channels();
  auto* p = out.ptr<float>();
  size_t n = out.total();
  for (size_t i = 0; i < n; ++i)
    for (int k = 0; k < c; ++k) {
      auto m = static_cast<float>(mean[mean.size() == 1 ? 0 : k]);
      auto s = static_cast<float>(stddev[stddev.size() == 1 ? 0 : k]);
      p[i * c + k] = (p[i * c + k] - m) / s;
    }
  return out;
}

caf::expected<cv::Mat> apply_chain(const std::vector<transform_spec>& chain,
                                   sample_input input, const draw_key& key) {
  cv::Mat img = std::move(input.pixels);
  for (size_t k = 0; k < chain.size(); ++k) {
    auto& t = chain[k];
    auto& a = t.args;
    if (t.name == "decode") {
      if (!input.encoded.empty() || img.empty()) {
        img = decode_image(input.encoded, !a.empty() && a[0] == 1);
        if (img.empty())
          return make_error(errc::io_failure,
                            "not a decodable image ("
                              + std::to_string(input.encoded.size())
                              + " bytes)");
      } else if (!a.empty() && a[0] == 1 && img.channels() == 3) {
        cv::cvtColor(img, img, cv::COLOR_RGB2GRAY);
      }
    } else if (t.name == "resize") {
      img = a.size() == 2 ? resize_image(img, u32(a[0]), u32(a[1]))
                          : resize_image(img, 0, u32(a[0]));
    } else if (t.name == "center-crop") {
      img = center_crop(img, u32(a[0]), u32(a.size() == 2 ? a[1] : a[0]));
    } else if (t.name == "random-crop") {
      img = random_crop(img, u32(a[0]), a.size() == 2 ? u32(a[1]) : 0,
                        rng_for(key, k));
    } else if (t.name == "random-resized-crop") {
      auto box = random_resized_box(img.rows, img.cols,
                                    a.size() > 1 ? a[1] : 0.08,
                                    a.size() > 2 ? a[2] : 1.0,
                                    a.size() > 3 ? a[3] : 3.0 / 4.0,
                                    a.size() > 4 ? a[4] : 4.0 / 3.0,
                                    rng_for(key, k));
      img = resize_image(img(box), u32(a[0]), u32(a[0]));
    } else if (t.name == "horizontal-flip") {
      img = horizontal_flip(img, a.empty() ? 0.5 : a[0], rng_for(key, k));
    } else if (t.name == "to-tensor") {
      img = to_float(img);
    } else if (t.name == "normalize") {
      auto half = a.size() / 2;
      img = normalize_image(img, {a.begin(), a.begin() + half},
                            {a.begin() + half, a.end()});
    } else if (t.name == "gaussian-blur") {
      double lo = a.size() > 1 ? a[1] : 0.1;
      double hi = a.size() > 2 ? a[2] : (a.size() > 1 ? a[1] : 2.0);
      uint32_t repeat = a.size() > 3 ? u32(a[3]) : 1;
      auto rng = rng_for(key, k);
      // Two owned buffers, ping-ponged: the input may be a source's memory.
      cv::Mat cur = img.isContinuous() ? img : img.clone();
      cv::Mat ping(cur.rows, cur.cols, cur.type());
      cv::Mat pong(cur.rows, cur.cols, cur.type());
      for (uint32_t call = 0; call < repeat; ++call) {
        auto sigma = static_cast<float>(lo + (hi - lo) * rng.uniform(call));
        cv::Mat& out = call % 2 == 0 ? ping : pong;
        blur_image_opencv(cur.ptr<float>(), out.ptr<float>(),
                          static_cast<uint32_t>(cur.rows),
                          static_cast<uint32_t>(cur.cols),
                          static_cast<uint32_t>(cur.channels()),
                          gaussian_kernel(sigma, u32(a[0])));
        cur = out;
      }
      img = cur;
    }
  }
  return to_float(img);
}

} // namespace stoker
