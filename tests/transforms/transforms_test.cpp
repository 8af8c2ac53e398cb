#include <boost/test/unit_test.hpp>

#include <cmath>

#include <random>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "stoker/errors.hpp"
#include "kernels/blur.hpp"
#include "kernels/jpeg_region.hpp"
#include "transforms/transform_chain.hpp"

using namespace stoker;

namespace {

const registry builtins = builtin_registry();

// An entry parsed and checked as a config file's pipeline.transforms is.
caf::expected<transform_spec> parse_transform(const std::string& text) {
  auto parsed = parse_entry(text);
  if (!parsed)
    return std::move(parsed.error());
  if (auto err = builtins.check_transform(*parsed, "pipeline.transforms"))
    return err;
  return parsed;
}

std::vector<transform_spec> chain_of(std::vector<std::string> texts) {
  std::vector<transform_spec> out;
  for (auto& t : texts) {
    auto parsed = parse_transform(t);
    BOOST_REQUIRE_MESSAGE(parsed, t);
    out.push_back(*parsed);
  }
  return out;
}

std::string chain_error(std::vector<std::string> texts, image_shape in,
                        bool encoded = false) {
  auto r = check_chain(chain_of(std::move(texts)), in, encoded, builtins);
  BOOST_REQUIRE(!r);
  return describe(r.error());
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A float image of `rows` x `cols` holding 0, 1, 2, ... row by row.
cv::Mat counting(int rows, int cols, int type = CV_32FC1) {
  cv::Mat m(rows, cols, type);
  for (int i = 0; i < rows * cols * m.channels(); ++i) {
    if (m.depth() == CV_32F)
      m.ptr<float>()[i] = static_cast<float>(i);
    else
      m.ptr<uint8_t>()[i] = static_cast<uint8_t>(i);
  }
  return m;
}

std::vector<float> values(const cv::Mat& m) {
  cv::Mat f;
  m.convertTo(f, CV_32F);
  f = f.clone();
  return {f.ptr<float>(), f.ptr<float>() + f.total() * f.channels()};
}

std::string read_text(const std::string& path) {
  std::ifstream in{path};
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

counter_rng rng(uint64_t sample) {
  return counter_rng{{0, 0, sample, rng_stage::transforms}};
}

} // namespace

BOOST_AUTO_TEST_SUITE(transforms)

BOOST_AUTO_TEST_CASE(entries_parse_into_names_and_numbers) {
  auto t = parse_transform(" random-crop( 28, 4 ) ");
  BOOST_REQUIRE(t);
  BOOST_TEST(t->name == "random-crop");
  BOOST_TEST(t->args == (std::vector<double>{28, 4}));
  BOOST_TEST(parse_transform("to-tensor")->args.empty());
  auto msg = [](const char* text) {
    auto r = parse_transform(text);
    BOOST_REQUIRE(!r);
    return describe(r.error());
  };
  BOOST_TEST(has(msg("sharpen(2)"), "unknown transform 'sharpen'"));
  BOOST_TEST(has(msg("resize(a)"), "argument 'a' is not a number"));
  BOOST_TEST(has(msg("resize(1, 2, 3)"), "usage: resize(SHORTER_SIDE)"));
  BOOST_TEST(has(msg("resize(3"), "closing parenthesis"));
  BOOST_TEST(has(msg("to-tensor(1)"), "\"to-tensor(1)\""));
  // A Python stage names its function: MODULE:CALLABLE, dotted.
  auto py = parse_transform("python(my_aug.policies:Trivial.wide)");
  BOOST_REQUIRE(py);
  BOOST_TEST(py->ref == "my_aug.policies:Trivial.wide");
  BOOST_TEST(py->args.empty());
  BOOST_TEST(has(msg("python"), "expected python(MODULE:CALLABLE)"));
  BOOST_TEST(has(msg("python(1st:fn)"),
                 "argument '1st:fn' is not a number (nor MODULE:CALLABLE)"));
  BOOST_TEST(has(msg("python(a:b:c)"), "is not a number"));
  BOOST_TEST(has(msg("python(m:f, 2)"), "usage: python(MODULE:CALLABLE)"));
  BOOST_TEST(has(msg("resize(my_aug:fn)"),
                 "'my_aug:fn' is not a number; usage: resize("));
}

BOOST_AUTO_TEST_CASE(a_per_batch_stage_comes_last_and_keeps_the_shape) {
  auto out = check_chain(chain_of({"to-tensor", "python-batch(mix:up)"}),
                         {28, 28, 1}, false, builtins);
  BOOST_REQUIRE(out);
  BOOST_TEST(out->height == 28u);
  BOOST_TEST(has(chain_error({"python-batch(mix:up)", "to-tensor"},
                             {28, 28, 1}),
                 "expected it last in pipeline.transforms"));
  // Dropped from the evaluation chain, as an augmentation.
  auto eval = eval_chain_of(chain_of({"to-tensor", "python-batch(mix:up)"}),
                            builtins);
  BOOST_REQUIRE_EQUAL(eval.size(), 1u);
  BOOST_TEST(eval[0].name == "to-tensor");
}

BOOST_AUTO_TEST_CASE(a_chain_says_what_shape_comes_out) {
  auto out = check_chain(chain_of({"random-crop(28, 4)", "horizontal-flip",
                                   "to-tensor", "normalize(0.28, 0.35)"}),
                         {28, 28, 1}, false, builtins);
  BOOST_REQUIRE(out);
  BOOST_TEST(out->height == 28u);
  BOOST_TEST(out->channels == 1u);
  auto folder = check_chain(chain_of({"decode", "resize(40)",
                                      "center-crop(32)", "to-tensor"}),
                            {}, true, builtins);
  BOOST_REQUIRE(folder);
  BOOST_TEST(folder->width == 32u);
  BOOST_TEST(folder->channels == 3u);
  auto gray = check_chain(chain_of({"decode(1)", "resize(16, 8)"}), {}, true, builtins);
  BOOST_REQUIRE(gray);
  BOOST_TEST(gray->channels == 1u);
  BOOST_TEST(gray->width == 8u);
  auto shorter = check_chain(chain_of({"resize(14)"}), {28, 56, 1}, false, builtins);
  BOOST_REQUIRE(shorter);
  BOOST_TEST(shorter->width == 28u);
}

BOOST_AUTO_TEST_CASE(bad_chains_name_the_entry_and_what_was_expected) {
  BOOST_TEST(has(chain_error({"resize(32, 32)"}, {}, true),
                 "expected \"decode\" as the first transform"));
  BOOST_TEST(has(chain_error({"decode", "to-tensor"}, {}, true),
                 "size varies"));
  BOOST_TEST(has(chain_error({"normalize(0.5, 0.5)"}, {28, 28, 1}),
                 "put it after to-tensor"));
  BOOST_TEST(has(chain_error({"to-tensor", "normalize(1, 2, 3, 4)"},
                             {28, 28, 1}),
                 "one of each per channel (1)"));
  BOOST_TEST(has(chain_error({"to-tensor", "normalize(0.5, 0)"}, {8, 8, 1}),
                 "every STD must be above 0"));
  BOOST_TEST(has(chain_error({"to-tensor", "gaussian-blur(4)"}, {8, 8, 1}),
                 "KERNEL must be odd"));
  BOOST_TEST(has(chain_error({"random-crop(40, 2)"}, {28, 28, 1}),
                 "smaller than the crop"));
  BOOST_TEST(has(chain_error({"horizontal-flip(2)"}, {8, 8, 1}),
                 "probability"));
  BOOST_TEST(has(chain_error({"random-resized-crop(8, 0.5, 0.2)"}, {8, 8, 1}),
                 "SCALE_MIN <= SCALE_MAX"));
}

BOOST_AUTO_TEST_CASE(eval_chain_drops_augmentation) {
  auto eval = eval_chain_of(chain_of(
    {"decode", "random-resized-crop(24)", "random-crop(24, 2)",
     "horizontal-flip", "to-tensor", "gaussian-blur(3)",
     "normalize(0.5, 0.2)"}),
    builtins);
  std::vector<std::string> names;
  for (auto& t : eval)
    names.push_back(t.name);
  BOOST_TEST(names
             == (std::vector<std::string>{"decode", "resize", "center-crop",
                                          "center-crop", "to-tensor",
                                          "normalize"}));
}

BOOST_AUTO_TEST_CASE(center_crop_takes_the_middle_and_pads_small_images) {
  auto img = counting(4, 4);
  BOOST_TEST(values(center_crop(img, 2, 2)) == (std::vector<float>{5, 6, 9, 10}));
  // 2x2 into 4x4: one row and column of zeros on each side.
  auto padded = values(center_crop(counting(2, 2), 4, 4));
  BOOST_TEST(padded == (std::vector<float>{0, 0, 0, 0, 0, 0, 1, 0,
                                           0, 2, 3, 0, 0, 0, 0, 0}));
  // An odd margin: torchvision's offset is Python's round((W - w) / 2),
  // halves to even: 257 -> 224 starts at column 16 (round(16.5)), 259 ->
  // 224 at 18 (round(17.5)), both rows and columns.
  for (auto [side, start] : {std::pair{257, 16}, std::pair{259, 18}}) {
    cv::Mat cols(side, side, CV_32FC1);
    for (int y = 0; y < side; ++y)
      for (int x = 0; x < side; ++x)
        cols.at<float>(y, x) = static_cast<float>(1000 * y + x);
    auto crop = center_crop(cols, 224, 224);
    BOOST_TEST(crop.at<float>(0, 0) == static_cast<float>(1001 * start),
               side << ": " << crop.at<float>(0, 0));
  }
  BOOST_TEST(python_round(0.5) == 0);
  BOOST_TEST(python_round(1.5) == 2);
  BOOST_TEST(python_round(2.5) == 2);
  BOOST_TEST(python_round(-0.5) == 0);
}

BOOST_AUTO_TEST_CASE(resize_is_bilinear_with_half_pixel_centres) {
  cv::Mat row = (cv::Mat_<float>(1, 2) << 0.0f, 4.0f);
  // x_src = (x + 0.5) / 2 - 0.5: -0.25 (edge), 0.25, 0.75, 1.25 (edge).
  BOOST_TEST(values(resize_image(row, 1, 4)) == (std::vector<float>{0, 1, 3, 4}));
  auto wide = resize_image(counting(10, 20), 0, 5); // shorter side 10 -> 5
  BOOST_TEST(wide.rows == 5);
  BOOST_TEST(wide.cols == 10);
}

BOOST_AUTO_TEST_CASE(random_crop_is_a_window_of_the_padded_image) {
  auto img = counting(4, 4);
  int distinct = 0;
  std::vector<float> first;
  for (uint64_t s = 0; s < 20; ++s) {
    auto out = random_crop(img, 4, 1, rng(s)); // 6x6 padded, 3x3 positions
    BOOST_REQUIRE(out.rows == 4);
    cv::Mat padded;
    cv::copyMakeBorder(img, padded, 1, 1, 1, 1, cv::BORDER_CONSTANT, 0);
    bool found = false;
    for (int y = 0; y <= 2; ++y)
      for (int x = 0; x <= 2; ++x)
        found |= values(padded(cv::Rect{x, y, 4, 4})) == values(out);
    BOOST_TEST(found);
    if (s == 0)
      first = values(out);
    else
      distinct += values(out) != first;
    BOOST_TEST(values(random_crop(img, 4, 1, rng(s))) == values(out));
  }
  BOOST_TEST(distinct > 5); // positions vary with the sample
}

BOOST_AUTO_TEST_CASE(flip_mirrors_with_its_probability) {
  auto img = counting(1, 3);
  BOOST_TEST(values(horizontal_flip(img, 1.0, rng(0)))
             == (std::vector<float>{2, 1, 0}));
  BOOST_TEST(values(horizontal_flip(img, 0.0, rng(0)))
             == (std::vector<float>{0, 1, 2}));
  int flipped = 0;
  for (uint64_t s = 0; s < 1000; ++s)
    flipped += values(horizontal_flip(img, 0.5, rng(s)))[0] == 2.0f;
  BOOST_TEST(flipped > 430);
  BOOST_TEST(flipped < 570);
}

BOOST_AUTO_TEST_CASE(to_tensor_scales_bytes_and_normalize_shifts_channels) {
  cv::Mat bytes = (cv::Mat_<uint8_t>(1, 2) << 255, 51);
  auto f = to_float(bytes);
  BOOST_TEST(f.depth() == CV_32F);
  BOOST_TEST(values(f)[0] == 1.0f);
  BOOST_TEST(std::abs(values(f)[1] - 0.2f) < 1e-6f);
  cv::Mat rgb(1, 1, CV_32FC3, cv::Scalar(0.5, 0.25, 1.0));
  auto n = values(normalize_image(rgb, {0.5, 0.0, 0.5}, {0.5, 0.25, 0.25}));
  BOOST_TEST(n == (std::vector<float>{0.0f, 1.0f, 2.0f}));
}

BOOST_AUTO_TEST_CASE(random_resized_box_stays_inside_with_its_area_and_ratio) {
  for (uint64_t s = 0; s < 200; ++s) {
    auto box = random_resized_box(100, 60, 0.2, 0.6, 0.75, 1.333, rng(s));
    BOOST_REQUIRE(box.x >= 0);
    BOOST_REQUIRE(box.y >= 0);
    BOOST_REQUIRE(box.x + box.width <= 60);
    BOOST_REQUIRE(box.y + box.height <= 100);
    double area = static_cast<double>(box.area()) / 6000.0;
    double ratio = static_cast<double>(box.width) / box.height;
    BOOST_TEST(area > 0.18);
    BOOST_TEST(area < 0.63);
    BOOST_TEST(ratio > 0.7);
    BOOST_TEST(ratio < 1.4);
  }
}

BOOST_AUTO_TEST_CASE(random_resized_boxes_are_distributed_as_torchvisions) {
  // 100k boxes of a 375x500 image, ours and torchvision's
  // RandomResizedCrop.get_params (scale 0.08-1, ratio 3/4-4/3): the
  // histograms of area share and log aspect ratio, 20 bins each, must pass
  // a two-sample chi-square test at p = 0.001 (critical 43.8 for 19
  // degrees of freedom). Both sides are seeded: the outcome is fixed.
  const int n = 100000;
  const int height = 375;
  const int width = 500;
  std::string script =
    "import sys, torch\n"
    "from torchvision.transforms import RandomResizedCrop as R\n"
    "torch.manual_seed(1)\n"
    "img = torch.empty(3, 375, 500)\n"
    "out = [R.get_params(img, (0.08, 1.0), (3 / 4, 4 / 3)) for _ in "
    "range(100000)]\n"
    "sys.stdout.write(''.join(f'{h} {w}\\n' for _, _, h, w in out))\n";
  auto path = "/tmp/stoker-test-rrc-" + std::to_string(::getpid());
  std::ofstream{path + ".py"} << script;
  auto cmd = "/usr/bin/python3 " + path + ".py > " + path + ".txt 2>&1";
  BOOST_REQUIRE_MESSAGE(std::system(cmd.c_str()) == 0,
                        "torchvision's sampler did not run (tools/setup "
                        "installs python3-torchvision): "
                          << read_text(path + ".txt"));
  const int bins = 20;
  auto bin_of = [&](double h, double w) {
    double share = h * w / (height * width);
    double log_ratio = (std::log(w / h) - std::log(0.75))
                       / (std::log(4.0 / 3.0) - std::log(0.75));
    auto clamp = [&](double x) {
      return std::min(bins - 1, std::max(0, static_cast<int>(x * bins)));
    };
    return std::pair{clamp(share), clamp(log_ratio)};
  };
  std::vector<double> ours_share(bins), ours_ratio(bins);
  std::vector<double> theirs_share(bins), theirs_ratio(bins);
  for (int i = 0; i < n; ++i) {
    auto box = random_resized_box(height, width, 0.08, 1.0, 0.75, 4.0 / 3.0,
                                  rng(static_cast<uint64_t>(i)));
    auto [a, r] = bin_of(box.height, box.width);
    ++ours_share[a];
    ++ours_ratio[r];
  }
  std::ifstream in{path + ".txt"};
  int count = 0;
  for (double h, w; in >> h >> w; ++count) {
    auto [a, r] = bin_of(h, w);
    ++theirs_share[a];
    ++theirs_ratio[r];
  }
  std::remove((path + ".py").c_str());
  std::remove((path + ".txt").c_str());
  BOOST_REQUIRE(count == n);
  auto chi2 = [&](const std::vector<double>& a, const std::vector<double>& b) {
    double x = 0;
    for (int i = 0; i < bins; ++i)
      if (a[i] + b[i] > 0)
        x += (a[i] - b[i]) * (a[i] - b[i]) / (a[i] + b[i]);
    return x;
  };
  BOOST_TEST(chi2(ours_share, theirs_share) < 43.8);
  BOOST_TEST(chi2(ours_ratio, theirs_ratio) < 43.8);
  BOOST_TEST_MESSAGE("chi-square, area share " << chi2(ours_share, theirs_share)
                     << ", log ratio " << chi2(ours_ratio, theirs_ratio));
  // A box off by a little (scale from 0.10) is told apart.
  std::vector<double> off(bins);
  for (int i = 0; i < n; ++i) {
    auto box = random_resized_box(height, width, 0.10, 1.0, 0.75, 4.0 / 3.0,
                                  rng(static_cast<uint64_t>(i)));
    ++off[bin_of(box.height, box.width).first];
  }
  BOOST_TEST(chi2(off, theirs_share) > 43.8);
}

BOOST_AUTO_TEST_CASE(the_same_key_gives_the_same_box_on_every_machine) {
  // Scalar double arithmetic without contraction (STOKER's -ffp-contract=
  // off): these numbers are the same on every ISA and compiler setting.
  std::vector<std::array<int, 4>> got;
  for (uint64_t s : {0u, 1u, 77u, 123456u}) {
    auto b = random_resized_box(375, 500, 0.08, 1.0, 0.75, 4.0 / 3.0, rng(s));
    got.push_back({b.x, b.y, b.width, b.height});
  }
  const std::vector<std::array<int, 4>> want = {
    {309, 76, 177, 171}, {47, 11, 314, 351}, {15, 56, 267, 305},
    {105, 55, 262, 238}};
  for (size_t i = 0; i < got.size(); ++i)
    BOOST_TEST_CONTEXT("box " << i) {
      for (size_t k = 0; k < 4; ++k)
        BOOST_TEST(got[i][k] == want[i][k], "got " << got[i][0] << ", "
                                                   << got[i][1] << ", "
                                                   << got[i][2] << ", "
                                                   << got[i][3]);
    }
}

BOOST_AUTO_TEST_CASE(decode_gives_rgb_and_refuses_junk) {
  cv::Mat bgr(2, 2, CV_8UC3, cv::Scalar(10, 20, 30)); // B, G, R
  std::vector<uchar> png;
  BOOST_REQUIRE(cv::imencode(".png", bgr, png));
  auto rgb = decode_image(std::vector<char>(png.begin(), png.end()), false);
  BOOST_REQUIRE(!rgb.empty());
  BOOST_TEST(rgb.at<cv::Vec3b>(0, 0)[0] == 30); // R first
  auto gray = decode_image(std::vector<char>(png.begin(), png.end()), true);
  BOOST_TEST(gray.channels() == 1);
  BOOST_TEST(decode_image({'n', 'o', 'p', 'e'}, false).empty());
  auto chain = chain_of({"decode", "to-tensor"});
  auto r = apply_chain(chain, sample_input{{'n', 'o'}, {}}, draw_key{}, builtins);
  BOOST_REQUIRE(!r);
  BOOST_TEST(is(r.error(), errc::io_failure));
}

BOOST_AUTO_TEST_CASE(decode_of_a_jpeg_is_opencvs_pixels_through_libjpeg_turbo) {
  // A JPEG goes through libjpeg-turbo straight to RGB (the fused start's
  // decoder, whole): the same pixels as OpenCV's decoder turned to RGB,
  // 4:2:0 chroma and odd sizes included; gray as OpenCV's gray.
  std::mt19937 gen{11};
  cv::Mat noise(37, 53, CV_8UC3);
  for (auto it = noise.begin<cv::Vec3b>(); it != noise.end<cv::Vec3b>(); ++it)
    for (int k = 0; k < 3; ++k)
      (*it)[k] = static_cast<uchar>(gen() % 256);
  std::vector<uchar> jpeg;
  BOOST_REQUIRE(cv::imencode(".jpg", noise, jpeg, {cv::IMWRITE_JPEG_QUALITY,
                                                   85}));
  std::vector<char> bytes(jpeg.begin(), jpeg.end());
  for (bool gray : {false, true}) {
    auto decoded = apply_chain(chain_of({gray ? "decode(1)" : "decode"}),
                               sample_input{bytes, {}}, draw_key{}, builtins);
    BOOST_REQUIRE(decoded);
    auto want = decode_image(bytes, gray); // OpenCV's, as RGB
    cv::Mat want_float;
    want.convertTo(want_float, CV_32F, 1.0 / 255);
    BOOST_REQUIRE_EQUAL(decoded->rows, 37);
    BOOST_REQUIRE_EQUAL(decoded->cols, 53);
    BOOST_REQUIRE_EQUAL(decoded->channels(), gray ? 1 : 3);
    BOOST_TEST(cv::norm(*decoded, want_float, cv::NORM_INF) == 0.0,
               (gray ? "gray" : "rgb"));
  }
}

BOOST_AUTO_TEST_CASE(a_chain_is_a_pure_function_of_seed_epoch_and_sample) {
  auto chain = chain_of({"random-crop(6, 2)", "horizontal-flip", "to-tensor",
                         "gaussian-blur(3, 0.5, 1.5, 2)",
                         "normalize(0.5, 0.25)"});
  auto img = counting(6, 6, CV_8UC1);
  auto a = apply_chain(chain, sample_input{{}, img}, draw_key{1, 2, 3}, builtins);
  auto b = apply_chain(chain, sample_input{{}, img.clone()}, draw_key{1, 2, 3}, builtins);
  auto c = apply_chain(chain, sample_input{{}, img}, draw_key{1, 3, 3}, builtins);
  BOOST_REQUIRE(a);
  BOOST_REQUIRE(b);
  BOOST_REQUIRE(c);
  BOOST_TEST(values(*a) == values(*b));
  BOOST_TEST(values(*a) != values(*c)); // another epoch, other draws
  BOOST_TEST(values(img) == values(counting(6, 6, CV_8UC1))); // input intact
  // The blur entry's sigmas come from its own stage (entry 3).
  auto blur_only = chain_of({"to-tensor", "gaussian-blur(3, 0.5, 1.5)"});
  auto f = to_float(img);
  auto got = apply_chain(blur_only, sample_input{{}, img}, draw_key{0, 0, 7}, builtins);
  BOOST_REQUIRE(got);
  counter_rng stage{{0, 0, 7, static_cast<rng_stage>(
                                static_cast<uint32_t>(rng_stage::transforms)
                                + 1)}};
  auto sigma = static_cast<float>(0.5 + 1.0 * stage.uniform(0));
  cv::Mat want(6, 6, CV_32FC1);
  blur_image_opencv(f.ptr<float>(), want.ptr<float>(), 6, 6, 1,
                    gaussian_kernel(sigma, 3));
  // The transform runs the hand-written chain: OpenCV's numbers to 1e-5.
  auto a_values = values(*got);
  auto b_values = values(want);
  BOOST_REQUIRE_EQUAL(a_values.size(), b_values.size());
  for (size_t i = 0; i < a_values.size(); ++i)
    BOOST_TEST(std::abs(a_values[i] - b_values[i]) <= 1e-5, i);
}

namespace {

// A photo-like JPEG (gradients, edges, texture; OpenCV's encoder, q 90).
std::vector<char> photo_jpeg(int rows, int cols) {
  cv::Mat img(rows, cols, CV_8UC3);
  std::mt19937 gen{3};
  std::uniform_int_distribution<int> noise{-4, 4};
  for (int y = 0; y < rows; ++y)
    for (int x = 0; x < cols; ++x) {
      auto px = [&](double v) {
        return cv::saturate_cast<uint8_t>(v + noise(gen));
      };
      img.at<cv::Vec3b>(y, x) = {
        px(128 + 80 * std::sin(x * 0.05) * std::cos(y * 0.03)),
        px(40 + 170.0 * y / rows), px((x / 29 + y / 37) % 2 ? 190 : 60)};
    }
  std::vector<uchar> out;
  BOOST_REQUIRE(cv::imencode(".jpg", img, out, {cv::IMWRITE_JPEG_QUALITY, 90}));
  return {out.begin(), out.end()};
}

float max_diff(const cv::Mat& a, const cv::Mat& b) {
  auto x = values(a);
  auto y = values(b);
  BOOST_REQUIRE_EQUAL(x.size(), y.size());
  float worst = 0;
  for (size_t i = 0; i < x.size(); ++i)
    worst = std::max(worst, std::abs(x[i] - y[i]));
  return worst;
}

} // namespace

BOOST_AUTO_TEST_CASE(a_chain_starting_decode_and_a_crop_is_fused_for_jpegs) {
  auto rrc = chain_of({"decode", "random-resized-crop(224)", "to-tensor"});
  auto eval = chain_of({"decode", "resize(256)", "center-crop(224)",
                        "to-tensor"});
  auto other = chain_of({"decode", "horizontal-flip",
                         "random-resized-crop(224)"});
  auto bound = [&](auto& chain, bool on) {
    auto b = transform_chain::bind(chain, builtins, on);
    BOOST_REQUIRE(b);
    return b->fused_entries();
  };
  BOOST_TEST(bound(rrc, true) == 3u);  // with to-tensor
  BOOST_TEST(bound(eval, true) == 4u);
  BOOST_TEST(bound(other, true) == 0u);
  BOOST_TEST(bound(rrc, false) == 0u); // pipeline.decode-region = false
  auto recipe = chain_of({"decode", "random-resized-crop(224)",
                          "horizontal-flip", "to-tensor",
                          "normalize(0.5, 0.25)", "gaussian-blur(3)"});
  BOOST_TEST(bound(recipe, true) == 5u); // the blur runs after
  auto crop_only = chain_of({"decode", "random-resized-crop(224)"});
  BOOST_TEST(bound(crop_only, true) == 2u);
}

BOOST_AUTO_TEST_CASE(the_fused_start_gives_the_unfused_chains_numbers) {
  // Large enough that some boxes are reduced (three times 224 after M/8).
  auto jpeg = photo_jpeg(1800, 2400);
  // Flip and normalize after the fused start run on its float pixels.
  auto chain = chain_of({"decode", "random-resized-crop(224, 0.3, 1)",
                         "horizontal-flip", "to-tensor",
                         "normalize(0.5, 0.25)"});
  size_t full_scale = 0, reduced = 0;
  for (uint64_t sample = 0; sample < 40; ++sample) {
    draw_key key{5, 1, sample};
    auto fused = apply_chain(chain, sample_input{jpeg, {}}, key, builtins);
    auto plain = apply_chain(chain, sample_input{jpeg, {}}, key, builtins,
                             false);
    BOOST_REQUIRE(fused);
    BOOST_REQUIRE(plain);
    BOOST_REQUIRE(fused->size() == plain->size());
    // The crop box entry 1 draws, as the fused start draws it too.
    counter_rng stage{{5, 1, sample,
                       static_cast<rng_stage>(
                         static_cast<uint32_t>(rng_stage::transforms) + 1)}};
    auto box = random_resized_box(1800, 2400, 0.3, 1.0, 0.75, 4.0 / 3.0,
                                  stage);
    if (dct_scale_for(box.width, box.height, 224, 224) == 8) {
      // The same pixels and filter: one 8-bit level (the unfused resize
      // rounds to bytes twice; the fused one does not), times normalize's
      // 1 / 0.25.
      ++full_scale;
      BOOST_TEST(max_diff(*fused, *plain) <= 4.004f / 255.0f,
                 "sample " << sample << ": "
                           << max_diff(*fused, *plain) * 255 / 4
                           << " levels");
    } else {
      // Reduced: close to the unfused (the IDCT's block average first).
      ++reduced;
      cv::Mat a, b;
      fused->convertTo(a, CV_32F, 0.25 / 1.0, 0.5 * 1.0);
      plain->convertTo(b, CV_32F, 0.25 / 1.0, 0.5 * 1.0);
      BOOST_TEST(values(a) != values(b)); // decoded reduced: not unfused
      BOOST_TEST(cv::PSNR(a, b, 1.0) >= 28.0,
                 "sample " << sample << ": PSNR " << cv::PSNR(a, b, 1.0));
      BOOST_TEST_MESSAGE("sample " << sample << ": PSNR "
                                   << cv::PSNR(a, b, 1.0));
    }
  }
  BOOST_TEST(full_scale > 0u); // both cases were seen
  BOOST_TEST(reduced > 0u);
  // The evaluation chain: resize(S) and center-crop's box, at full scale
  // (a 240-row file to 224) and reduced (960 rows to 256, then 224).
  auto eval = chain_of({"decode", "resize(224)", "center-crop(224)",
                        "to-tensor"});
  auto small = photo_jpeg(240, 320);
  auto f = apply_chain(eval, sample_input{small, {}}, draw_key{}, builtins);
  auto u = apply_chain(eval, sample_input{small, {}}, draw_key{}, builtins,
                       false);
  BOOST_REQUIRE(f);
  BOOST_REQUIRE(u);
  BOOST_TEST(max_diff(*f, *u) <= 1.0f / 255.0f + 1e-6f,
             max_diff(*f, *u) * 255 << " levels");
  auto eval_256 = chain_of({"decode", "resize(256)", "center-crop(224)",
                            "to-tensor"});
  auto large = photo_jpeg(960, 1280);
  f = apply_chain(eval_256, sample_input{large, {}}, draw_key{}, builtins);
  u = apply_chain(eval_256, sample_input{large, {}}, draw_key{}, builtins,
                  false);
  BOOST_REQUIRE(f);
  BOOST_REQUIRE(u);
  BOOST_TEST(values(*f) != values(*u)); // reduced: the fused start ran
  BOOST_TEST(cv::PSNR(*f, *u, 1.0) >= 28.0, cv::PSNR(*f, *u, 1.0));
  BOOST_TEST_MESSAGE("eval, 960x1280 to 256 then 224: PSNR "
                     << cv::PSNR(*f, *u, 1.0));
}

BOOST_AUTO_TEST_CASE(files_the_fused_start_does_not_take_run_unfused) {
  auto chain = chain_of({"decode", "random-resized-crop(32)", "to-tensor"});
  // A PNG: OpenCV's decoder, the same numbers as unfused.
  cv::Mat img(48, 64, CV_8UC3, cv::Scalar(10, 120, 200));
  cv::line(img, {0, 0}, {63, 47}, cv::Scalar(255, 0, 0), 3);
  std::vector<uchar> png;
  BOOST_REQUIRE(cv::imencode(".png", img, png));
  std::vector<char> bytes{png.begin(), png.end()};
  auto f = apply_chain(chain, sample_input{bytes, {}}, draw_key{0, 0, 9},
                       builtins);
  auto u = apply_chain(chain, sample_input{bytes, {}}, draw_key{0, 0, 9},
                       builtins, false);
  BOOST_REQUIRE(f);
  BOOST_REQUIRE(u);
  BOOST_TEST(values(*f) == values(*u));
  // A truncated JPEG: an error (the sample is skipped and counted).
  auto jpeg = photo_jpeg(200, 200);
  jpeg.resize(jpeg.size() / 3);
  auto cut = apply_chain(chain_of({"decode", "resize(200)",
                                   "center-crop(200)"}),
                         sample_input{jpeg, {}}, draw_key{}, builtins);
  BOOST_REQUIRE(!cut);
  BOOST_TEST(is(cut.error(), errc::io_failure), describe(cut.error()));
}

BOOST_AUTO_TEST_SUITE_END()
