#include <boost/test/unit_test.hpp>

#include <cmath>
#include <random>
#include <vector>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "stoker/errors.hpp"
#include "kernels/image_ops.hpp"
#include "kernels/jpeg_region.hpp"
#include "transforms/transform_chain.hpp"
#include "support/transform_chains.hpp"

// How a chain that starts with decode reads a file: a JPEG through
// libjpeg-turbo (fused with the crop where the chain allows it, whole
// otherwise), other files through OpenCV; the fused start's numbers are
// the unfused chain's.

using namespace stoker;
using namespace stoker_test;

namespace {

const registry& builtins = chain_registry();

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

BOOST_AUTO_TEST_SUITE(decode_paths)

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
