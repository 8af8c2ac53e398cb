// The built-in transforms as registry entries: each one's argument checks,
// what it makes of the chain's shape, and its per-sample function (the
// image operations themselves are in transforms.cpp).

#include <cmath>

#include <opencv2/imgproc.hpp>

#include "stoker/errors.hpp"
#include "stoker/registry.hpp"
#include "kernels/augment_ops.hpp"
#include "kernels/blur.hpp"
#include "kernels/image_ops.hpp"
#include "kernels/jpeg_region.hpp"
#include "registry/builtins.hpp"

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

// Every built-in replaces the pixels; none can fail on a decoded image.
template <class F>
auto pixels(F f) {
  return [f](const entry_spec& t, sample_input& s, const counter_rng& rng) {
    s.pixels = f(t.args, s.pixels, rng);
    return caf::error{};
  };
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

std::vector<entry_spec> dropped_in_eval(const entry_spec&) {
  return {};
}

} // namespace

void add_builtin_transforms(registry& reg) {
  // Each definition by name: what it is called and takes, then its parts.
  auto define = [](const char* name, size_t min_args, size_t max_args,
                   const char* usage) {
    transform_def def;
    def.name = name;
    def.min_args = min_args;
    def.max_args = max_args;
    def.usage = usage;
    return def;
  };
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
    auto d = draw_trivial_wide(rng);
    bool bilinear = !a.empty() && a[0] == 1;
    // Right after the fused crop the pass's [0, 1] floats: the bytes the
    // unfused chain has there.
    cv::Mat bytes = img;
    if (img.depth() == CV_32F)
      img.convertTo(bytes, CV_8U, 255.0);
    return apply_augment_op(bytes, d.op, d.magnitude,
                            bilinear ? augment_sampling::bilinear
                                     : augment_sampling::nearest);
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
    bool bilinear = a.size() > 3 && a[3] == 1;
    cv::Mat out = img;
    if (img.depth() == CV_32F) // the fused pass's floats: their bytes
      img.convertTo(out, CV_8U, 255.0);
    for (auto& d : draw_rand_augment(count, magnitude, bins, img.rows,
                                     img.cols, rng))
      out = apply_augment_op(out, d.op, d.magnitude,
                             bilinear ? augment_sampling::bilinear
                                      : augment_sampling::nearest);
    return out;
  });
  rand.eval = dropped_in_eval;
  must_add(reg.add(std::move(rand)));

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
    cv::Mat bytes = img;
    if (img.depth() == CV_32F) // the fused pass's floats: their bytes
      img.convertTo(bytes, CV_8U, 255.0);
    return rotate_filled(bytes, random_rotation_angle(a[0], rng),
                         a.size() > 1 && a[1] == 1
                           ? augment_sampling::bilinear
                           : augment_sampling::nearest);
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
