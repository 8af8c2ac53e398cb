// The built-in transforms as registry entries: each one's argument checks,
// what it makes of the chain's shape, and its per-sample function (the
// image operations themselves are in transforms.cpp).

#include <cmath>

#include <opencv2/imgproc.hpp>

#include "stoker/errors.hpp"
#include "stoker/registry.hpp"
#include "kernels/blur.hpp"
#include "kernels/image_ops.hpp"
#include "kernels/jpeg_region.hpp"
#include "registry/builtins.hpp"
#include "transforms/builtin_parts.hpp"

namespace stoker::detail {

namespace {

bool whole(double x, double lo, double hi) {
  return x >= lo && x <= hi && std::floor(x) == x;
}

uint32_t u32(double x) {
  return static_cast<uint32_t>(x);
}

bool size_arg(const entry_spec& t, size_t i) {
  return whole(t.args[i], 1, 16384);
}

caf::error check_decode(const entry_spec& t, chain_state& st) {
  auto& a = t.args;
  if (st.files && !st.encoded)
    return transform_error(t, "the image is decoded already");
  if (!a.empty() && a[0] != 1 && a[0] != 3)
    return transform_error(t, "expected decode (RGB) or decode(1) "
                              "(grayscale)");
  st.shape.channels = !a.empty() && a[0] == 1 ? 1
                      : st.encoded           ? 3
                                             : st.shape.channels;
  st.encoded = false;
  return caf::none;
}

caf::error apply_decode(const entry_spec& t, sample_input& s,
                        const counter_rng&) {
  bool gray = !t.args.empty() && t.args[0] == 1;
  if (!s.encoded.empty() || s.pixels.empty()) {
    // A JPEG the fused start's decoder takes (1 or 3 components, no EXIF
    // turn) through it, whole: libjpeg-turbo straight to RGB, where
    // OpenCV's decoder made BGR in a scalar pass and cvtColor turned it
    // back (1.67 ms a photo against 0.6 for libjpeg-turbo alone).
    if (auto h = read_jpeg_header(s.encoded); h && region_decodable(*h)) {
      auto whole = decode_jpeg_region(
        s.encoded, cv::Rect2d(0, 0, h->width, h->height), h->width,
        h->height, gray);
      if (!whole)
        return std::move(whole.error());
      s.pixels = std::move(whole->pixels);
      s.encoded = {};
      return caf::none;
    }
    s.pixels = decode_image(s.encoded, gray);
    if (s.pixels.empty())
      return make_error(errc::io_failure,
                        "not a decodable image ("
                          + std::to_string(s.encoded.size()) + " bytes)");
    s.encoded = {};
  } else if (gray && s.pixels.channels() == 3) {
    cv::Mat out;
    cv::cvtColor(s.pixels, out, cv::COLOR_RGB2GRAY);
    s.pixels = out;
  }
  return caf::none;
}

// resize(S) / resize(H, W) and center-crop(S) / center-crop(H, W).
caf::error check_sized(const entry_spec& t, chain_state& st) {
  auto& a = t.args;
  auto& shape = st.shape;
  if (!size_arg(t, 0) || (a.size() == 2 && !size_arg(t, 1)))
    return transform_error(t, "sizes must be whole numbers from 1 to 16384");
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
  return caf::none;
}

caf::error check_random_resized(const entry_spec& t, chain_state& st) {
  auto& a = t.args;
  if (!size_arg(t, 0))
    return transform_error(t, "SIZE must be a whole number from 1 to 16384");
  if (a.size() == 2 || a.size() == 4)
    return transform_error(t, "give both SCALE_MIN and SCALE_MAX (and both "
                              "ratios)");
  if (a.size() >= 3 && !(a[1] > 0 && a[1] <= a[2] && a[2] <= 1))
    return transform_error(t, "expected 0 < SCALE_MIN <= SCALE_MAX <= 1");
  if (a.size() == 5 && !(a[3] > 0 && a[3] <= a[4]))
    return transform_error(t, "expected 0 < RATIO_MIN <= RATIO_MAX");
  st.shape.height = st.shape.width = u32(a[0]);
  return caf::none;
}

caf::error check_random_crop(const entry_spec& t, chain_state& st) {
  auto& a = t.args;
  auto& shape = st.shape;
  if (!size_arg(t, 0) || (a.size() == 2 && !whole(a[1], 0, 4096)))
    return transform_error(t, "SIZE from 1 to 16384, PADDING a whole number "
                              "from 0");
  uint32_t pad = a.size() == 2 ? u32(a[1]) : 0;
  if (shape.height != 0 && shape.width != 0
      && (shape.height + 2 * pad < u32(a[0])
          || shape.width + 2 * pad < u32(a[0])))
    return transform_error(t, "the padded image ("
                                + std::to_string(shape.height) + "x"
                                + std::to_string(shape.width) + " + "
                                + std::to_string(pad)
                                + " on each side) is smaller than the crop");
  shape.height = shape.width = u32(a[0]);
  return caf::none;
}

caf::error check_normalize(const entry_spec& t, chain_state& st) {
  auto& a = t.args;
  if (!st.is_float)
    return transform_error(t, "normalize works on float pixels; put it "
                              "after to-tensor");
  if (a.size() != 2 && a.size() != 2 * size_t{st.shape.channels})
    return transform_error(t, "expected one MEAN and STD for all channels "
                              "or one of each per channel ("
                                + std::to_string(st.shape.channels) + ")");
  for (size_t i = a.size() / 2; i < a.size(); ++i)
    if (!(a[i] > 0))
      return transform_error(t, "every STD must be above 0");
  return caf::none;
}

caf::error check_blur(const entry_spec& t, chain_state& st) {
  auto& a = t.args;
  if (!st.is_float)
    return transform_error(t, "gaussian-blur works on float pixels; put it "
                              "after to-tensor");
  if (!whole(a[0], 1, 99) || u32(a[0]) % 2 == 0)
    return transform_error(t, "KERNEL must be odd, from 1 to 99");
  double lo = a.size() > 1 ? a[1] : 0.1;
  double hi = a.size() > 2 ? a[2] : (a.size() > 1 ? a[1] : 2.0);
  if (!(lo > 0 && lo <= hi && hi <= 100))
    return transform_error(t, "expected 0 < SIGMA_MIN <= SIGMA_MAX <= 100");
  if (a.size() == 4 && !whole(a[3], 1, 1000))
    return transform_error(t, "REPEAT must be a whole number from 1 to 1000");
  return caf::none;
}

cv::Mat apply_blur(const std::vector<double>& a, const cv::Mat& img,
                   const counter_rng& rng) {
  double lo = a.size() > 1 ? a[1] : 0.1;
  double hi = a.size() > 2 ? a[2] : (a.size() > 1 ? a[1] : 2.0);
  uint32_t repeat = a.size() > 3 ? u32(a[3]) : 1;
  uint32_t kernel = u32(a[0]);
  std::vector<float> taps;
  taps.reserve(size_t{repeat} * kernel);
  for (uint32_t call = 0; call < repeat; ++call) {
    auto sigma = static_cast<float>(lo + (hi - lo) * rng.uniform(call));
    auto k = gaussian_kernel(sigma, kernel);
    taps.insert(taps.end(), k.begin(), k.end());
  }
  // The hand-written chain (the article's stage's) on the widest ISA here:
  // every call on the image in one buffer, OpenCV's numbers to 1e-5, and
  // the same bits on every worker whatever its ISA (scalar included).
  cv::Mat out = img.clone(); // the input may be a source's memory
  blur_scratch scratch;
  blur_image_chain(out.ptr<float>(), static_cast<uint32_t>(out.rows),
                   static_cast<uint32_t>(out.cols),
                   static_cast<uint32_t>(out.channels()), taps.data(), repeat,
                   kernel, best_cpu_isa(), scratch);
  return out;
}

} // namespace

void add_builtin_transforms(registry& reg) {
  // Each definition by name: what it is called and takes, then its parts.
  auto define = define_transform;
  auto decode = define("decode", 0, 1, "decode or decode(1) for grayscale");
  decode.check = check_decode;
  decode.apply = apply_decode;
  decode.takes_files = true;
  must_add(reg.add(std::move(decode)));

  auto resize = define("resize", 1, 2,
                       "resize(SHORTER_SIDE) or resize(HEIGHT, WIDTH)");
  resize.check = check_sized;
  resize.apply = pixels([](auto& a, const cv::Mat& img, auto&) {
    return a.size() == 2 ? resize_image(img, u32(a[0]), u32(a[1]))
                         : resize_image(img, 0, u32(a[0]));
  });
  must_add(reg.add(std::move(resize)));

  auto center = define("center-crop", 1, 2,
                       "center-crop(SIZE) or center-crop(HEIGHT, WIDTH)");
  center.check = check_sized;
  center.apply = pixels([](auto& a, const cv::Mat& img, auto&) {
    return center_crop(img, u32(a[0]), u32(a.size() == 2 ? a[1] : a[0]));
  });
  must_add(reg.add(std::move(center)));

  auto rrc = define("random-resized-crop", 1, 5,
                    "random-resized-crop(SIZE[, SCALE_MIN, SCALE_MAX[, "
                    "RATIO_MIN, RATIO_MAX]])");
  rrc.check = check_random_resized;
  rrc.apply = pixels([](auto& a, const cv::Mat& img, const counter_rng& rng) {
    auto box = random_resized_box(img.rows, img.cols,
                                  a.size() > 1 ? a[1] : 0.08,
                                  a.size() > 2 ? a[2] : 1.0,
                                  a.size() > 3 ? a[3] : 3.0 / 4.0,
                                  a.size() > 4 ? a[4] : 4.0 / 3.0, rng);
    return resize_image(img(box), u32(a[0]), u32(a[0]));
  });
  rrc.eval = [](const entry_spec& t) { // resize(S) then center-crop(S)
    return std::vector<entry_spec>{make_entry("resize", {t.args[0]}),
                                   make_entry("center-crop", {t.args[0]})};
  };
  must_add(reg.add(std::move(rrc)));

  auto crop = define("random-crop", 1, 2, "random-crop(SIZE[, PADDING])");
  crop.check = check_random_crop;
  crop.apply = pixels([](auto& a, const cv::Mat& img, const counter_rng& rng) {
    return random_crop(img, u32(a[0]), a.size() == 2 ? u32(a[1]) : 0, rng);
  });
  crop.eval = [](const entry_spec& t) { // center-crop(S)
    return std::vector<entry_spec>{make_entry("center-crop", {t.args[0]})};
  };
  must_add(reg.add(std::move(crop)));

  auto flip = define("horizontal-flip", 0, 1,
                     "horizontal-flip([P]) with 0 <= P <= 1");
  flip.check = [](const entry_spec& t, chain_state&) {
    if (!t.args.empty() && !(t.args[0] >= 0 && t.args[0] <= 1))
      return transform_error(t, "expected a probability from 0 to 1");
    return caf::error{};
  };
  flip.apply = pixels([](auto& a, const cv::Mat& img, const counter_rng& rng) {
    return horizontal_flip(img, a.empty() ? 0.5 : a[0], rng);
  });
  flip.eval = dropped_in_eval;
  must_add(reg.add(std::move(flip)));

  add_builtin_augments(reg); // trivial-augment-wide ... random-erasing


  auto tensor = define("to-tensor", 0, 0, "to-tensor");
  tensor.check = [](const entry_spec&, chain_state& st) {
    st.is_float = true;
    return caf::error{};
  };
  tensor.apply = pixels(
    [](auto&, const cv::Mat& img, auto&) { return to_float(img); });
  must_add(reg.add(std::move(tensor)));

  auto normalize = define("normalize", 2, 8,
                          "normalize(MEAN, STD) or normalize(M1..Mc, "
                          "S1..Sc)");
  normalize.check = check_normalize;
  normalize.apply = pixels([](auto& a, const cv::Mat& img, auto&) {
    auto half = a.size() / 2;
    return normalize_image(img, {a.begin(), a.begin() + half},
                           {a.begin() + half, a.end()});
  });
  must_add(reg.add(std::move(normalize)));

  auto blur = define("gaussian-blur", 1, 4,
                     "gaussian-blur(KERNEL[, SIGMA_MIN[, SIGMA_MAX[, "
                     "REPEAT]]])");
  blur.check = check_blur;
  blur.apply = pixels(apply_blur);
  blur.eval = dropped_in_eval;
  must_add(reg.add(std::move(blur)));

  // The user's function, in processes of its own (transforms/
  // python_stage.hpp): the chain a worker binds gives it its processes.
  auto python = define("python", 0, 0, "python(MODULE:CALLABLE)");
  python.takes_ref = true;
  python.check = [](const entry_spec& t, chain_state& st) {
    if (st.encoded)
      return transform_error(t, "expected decoded pixels: put it after "
                                "decode");
    return caf::error{}; // the same shape and dtype come out (checked)
  };
  auto unbound = [](const entry_spec& t, sample_input&, const counter_rng&) {
    return make_error(errc::io_failure,
                      t.text + " runs only in a chain bound with a node's "
                               "python settings (a worker's)");
  };
  python.apply = unbound;
  python.eval = dropped_in_eval; // an augmentation, as flips and blurs
  must_add(reg.add(std::move(python)));

  // The same on a PIL image (torchvision's PIL backend, the reference
  // recipe's: its uint8 ops are 2-3x faster there than on tensors).
  auto pil = define("python-pil", 0, 0, "python-pil(MODULE:CALLABLE)");
  pil.takes_ref = true;
  pil.check = [](const entry_spec& t, chain_state& st) {
    if (st.encoded)
      return transform_error(t, "expected decoded pixels: put it after "
                                "decode");
    if (st.is_float)
      return transform_error(t, "expected 8-bit pixels (a PIL image): put "
                                "it before to-tensor");
    auto c = st.shape.channels;
    if (c != 0 && c != 1 && c != 3 && c != 4)
      return transform_error(t, "expected 1, 3 or 4 channels (PIL's modes "
                                "L, RGB, RGBA); the chain has "
                                + std::to_string(c));
    return caf::error{};
  };
  pil.apply = unbound;
  pil.eval = dropped_in_eval;
  must_add(reg.add(std::move(pil)));

  // The user's function on the whole batch (images float32 NCHW and the
  // labels), after every per-sample entry: MixUp, CutMix.
  auto batch = define("python-batch", 0, 0, "python-batch(MODULE:CALLABLE)");
  batch.takes_ref = true;
  batch.per_batch = true;
  batch.check = [](const entry_spec& t, chain_state& st) {
    if (st.encoded)
      return transform_error(t, "expected decoded pixels: put it after "
                                "decode");
    return caf::error{}; // the batch's shape stays (checked per call)
  };
  batch.apply = [](const entry_spec& t, sample_input&, const counter_rng&) {
    return make_error(errc::io_failure,
                      t.text + " runs on a whole batch, not on a sample");
  };
  batch.eval = dropped_in_eval;
  must_add(reg.add(std::move(batch)));
}

} // namespace stoker::detail
