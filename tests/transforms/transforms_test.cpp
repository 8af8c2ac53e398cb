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
#include "kernels/augment_ops.hpp"
#include "kernels/blur.hpp"
#include "kernels/jpeg_region.hpp"
#include "transforms/transform_chain.hpp"
#include "support/transform_chains.hpp"

using namespace stoker;
using namespace stoker_test;

namespace {

const registry& builtins = chain_registry();

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

BOOST_AUTO_TEST_CASE(a_pil_stage_takes_bytes_of_1_3_or_4_channels) {
  auto ok = check_chain(chain_of({"python-pil(my_aug:wide)", "to-tensor"}),
                        {28, 28, 3}, false, builtins);
  BOOST_TEST(static_cast<bool>(ok));
  BOOST_TEST(has(chain_error({"to-tensor", "python-pil(my_aug:wide)"},
                             {28, 28, 3}),
                 "expected 8-bit pixels (a PIL image): put it before "
                 "to-tensor"));
  BOOST_TEST(has(chain_error({"python-pil(my_aug:wide)"}, {28, 28, 2}),
                 "expected 1, 3 or 4 channels (PIL's modes L, RGB, RGBA); "
                 "the chain has 2"));
  auto eval = eval_chain_of(chain_of({"python-pil(my_aug:wide)",
                                      "to-tensor"}),
                            builtins);
  BOOST_REQUIRE_EQUAL(eval.size(), 1u); // an augmentation: not in eval
}

BOOST_AUTO_TEST_CASE(trivial_augment_wide_draws_its_op_from_the_samples_key) {
  BOOST_TEST(has(chain_error({"to-tensor", "trivial-augment-wide"},
                             {28, 28, 3}),
                 "expected 8-bit pixels: put it before to-tensor"));
  BOOST_TEST(has(chain_error({"trivial-augment-wide(2)"}, {28, 28, 3}),
                 "expected 0 (nearest) or 1 (bilinear) sampling"));
  BOOST_TEST(has(chain_error({"trivial-augment-wide"}, {28, 28, 4}),
                 "expected 1 or 3 channels; the chain has 4"));
  BOOST_TEST(eval_chain_of(chain_of({"trivial-augment-wide", "to-tensor"}),
                           builtins)
               .size()
             == 1u); // an augmentation: not in eval
  cv::Mat img(16, 20, CV_8UC3);
  cv::randu(img, cv::Scalar::all(0), cv::Scalar::all(255));
  auto chain = chain_of({"trivial-augment-wide(1)", "to-tensor"});
  size_t real_ops = 0;
  for (uint64_t id = 0; id < 40; ++id) {
    draw_key key{5, 1, id};
    sample_input in;
    in.pixels = img;
    auto out = apply_chain(chain, in, key, builtins);
    BOOST_REQUIRE(out);
    // Entry 0's own generator picks the op, as any worker would.
    auto d = draw_trivial_wide(counter_rng{{5, 1, id, rng_stage::transforms}});
    cv::Mat expected;
    apply_augment_op(img, d.op, d.magnitude, augment_sampling::bilinear)
      .convertTo(expected, CV_32F, 1.0 / 255.0);
    BOOST_TEST(values(*out) == values(expected));
    real_ops += cv::norm(*out, expected, cv::NORM_INF) == 0
               && d.op != augment_op::identity;
  }
  BOOST_TEST(real_ops > 30u); // most draws are not the identity
}

BOOST_AUTO_TEST_CASE(rand_and_auto_augment_run_their_drawn_ops_in_a_row) {
  BOOST_TEST(has(chain_error({"rand-augment(2, 31)"}, {28, 28, 3}),
                 "expected M a whole number below BINS (31)"));
  BOOST_TEST(has(chain_error({"rand-augment(1.5)"}, {28, 28, 3}),
                 "expected N, the ops a sample gets"));
  BOOST_TEST(has(chain_error({"to-tensor", "rand-augment"}, {28, 28, 3}),
                 "expected 8-bit pixels"));
  BOOST_TEST(has(chain_error({"rand-augment(2, 9, 31, 3)"}, {28, 28, 3}),
                 "expected 0 (nearest) or 1 (bilinear) sampling"));
  cv::Mat img(16, 20, CV_8UC3);
  cv::randu(img, cv::Scalar::all(0), cv::Scalar::all(255));
  // rand-augment's N drawn ops in a row, and auto-augment's sub-policy.
  auto rand = chain_of({"rand-augment(3, 12, 31, 1)"});
  auto autoaug = chain_of({"auto-augment(1)"});
  for (uint64_t id = 0; id < 20; ++id) {
    counter_rng rng{{5, 1, id, rng_stage::transforms}};
    for (bool is_rand : {true, false}) {
      sample_input in;
      in.pixels = img;
      auto out = apply_chain(is_rand ? rand : autoaug, in,
                             draw_key{5, 1, id}, builtins);
      BOOST_REQUIRE(out);
      cv::Mat expected = img;
      for (auto& d : is_rand ? draw_rand_augment(3, 12, 31, 16, 20, rng)
                             : draw_auto_augment(16, 20, rng))
        expected = apply_augment_op(expected, d.op, d.magnitude,
                                    augment_sampling::bilinear);
      cv::Mat floats;
      expected.convertTo(floats, CV_32F, 1.0 / 255.0);
      BOOST_TEST(values(*out) == values(floats));
    }
  }
}

BOOST_AUTO_TEST_CASE(grayscale_sets_the_channels_and_rotation_draws_its_angle) {
  auto one = check_chain(chain_of({"grayscale", "to-tensor"}), {28, 28, 3},
                         false, builtins);
  BOOST_REQUIRE(one);
  BOOST_TEST(one->channels == 1u);
  auto three = check_chain(chain_of({"grayscale(3)"}), {28, 28, 3}, false,
                           builtins);
  BOOST_REQUIRE(three);
  BOOST_TEST(three->channels == 3u);
  BOOST_TEST(has(chain_error({"grayscale(2)"}, {28, 28, 3}),
                 "expected CHANNELS 1 or 3"));
  BOOST_TEST(has(chain_error({"random-rotation(0)"}, {28, 28, 3}),
                 "expected 0 < DEGREES <= 180"));
  BOOST_TEST(has(chain_error({"to-tensor", "random-rotation(10)"},
                             {28, 28, 3}),
                 "expected 8-bit pixels"));
  cv::Mat img(16, 20, CV_8UC3);
  cv::randu(img, cv::Scalar::all(0), cv::Scalar::all(255));
  auto chain = chain_of({"random-rotation(30, 1)"});
  for (uint64_t id = 0; id < 10; ++id) {
    sample_input in;
    in.pixels = img;
    auto out = apply_chain(chain, in, draw_key{2, 0, id}, builtins);
    BOOST_REQUIRE(out);
    double angle = random_rotation_angle(
      30, counter_rng{{2, 0, id, rng_stage::transforms}});
    BOOST_TEST(std::abs(angle) <= 30);
    cv::Mat expected;
    rotate_filled(img, angle, augment_sampling::bilinear)
      .convertTo(expected, CV_32F, 1.0 / 255.0);
    BOOST_TEST(values(*out) == values(expected));
  }
}

BOOST_AUTO_TEST_CASE(random_erasing_checks_its_arguments_and_erases_a_box) {
  BOOST_TEST(has(chain_error({"random-erasing(1.5)"}, {28, 28, 3}),
                 "expected a probability P from 0 to 1"));
  BOOST_TEST(has(chain_error({"random-erasing(0.5, 0.2)"}, {28, 28, 3}),
                 "SCALE_MIN and SCALE_MAX together"));
  BOOST_TEST(has(chain_error({"random-erasing(0.5, 0.4, 0.2)"}, {28, 28, 3}),
                 "expected 0 < SCALE_MIN <= SCALE_MAX < 1"));
  BOOST_TEST(has(chain_error({"random-erasing(0.5, 0.1, 0.2, 2, 1)"},
                             {28, 28, 3}),
                 "expected 0 < RATIO_MIN <= RATIO_MAX"));
  // After normalize, as the recipe has it: a box of zeros, the same one
  // for the same key.
  auto chain = chain_of({"to-tensor", "normalize(0.5, 0.25)",
                         "random-erasing(1, 0.1, 0.2, 0.5, 2, 0)"});
  sample_input in;
  in.pixels = cv::Mat(40, 30, CV_8UC1, cv::Scalar(200));
  auto a = apply_chain(chain, in, draw_key{1, 0, 9}, builtins);
  auto b = apply_chain(chain, in, draw_key{1, 0, 9}, builtins);
  BOOST_REQUIRE(a);
  BOOST_REQUIRE(b);
  BOOST_TEST(values(*a) == values(*b));
  auto zeros = static_cast<double>(cv::countNonZero(*a == 0.0f));
  BOOST_TEST(zeros >= 0.1 * 1200 * 0.8); // about the area drawn
  BOOST_TEST(zeros <= 0.2 * 1200 * 1.2);
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

BOOST_AUTO_TEST_CASE(normalize_is_the_per_channel_formula_at_every_pixel) {
  // 37 x 5 pixels: whole 16-pixel blocks and a tail, 1, 3 and 4 channels,
  // a row view (not continuous) too.
  for (int c : {1, 3, 4}) {
    cv::Mat img(5, 37, CV_32FC(c));
    cv::randu(img, cv::Scalar::all(-2.0), cv::Scalar::all(2.0));
    std::vector<double> mean{0.485, 0.456, 0.406, 0.3};
    std::vector<double> stddev{0.229, 0.224, 0.225, 0.7};
    mean.resize(static_cast<size_t>(c));
    stddev.resize(static_cast<size_t>(c));
    for (const cv::Mat& in : {img, img(cv::Rect{3, 1, 30, 3})}) {
      auto got = values(normalize_image(in, mean, stddev));
      auto x = values(in.clone());
      BOOST_REQUIRE_EQUAL(got.size(), x.size());
      for (size_t i = 0; i < x.size(); ++i) {
        auto k = i % static_cast<size_t>(c);
        BOOST_TEST(got[i] == (x[i] - static_cast<float>(mean[k]))
                               / static_cast<float>(stddev[k]));
      }
    }
  }
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

BOOST_AUTO_TEST_SUITE_END()
