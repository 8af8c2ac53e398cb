#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <map>
#include <utility>
#include <vector>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "kernels/image_ops.hpp"
#include "kernels/jpeg_region.hpp"
#include "kernels/region_resample.hpp"
#include "support/photo_jpegs.hpp"

using namespace stoker;
using namespace stoker_test;

namespace {

// torchvision's antialiased bilinear resize (resize(..., antialias=True),
// PIL's filter): a triangle filter widened by the shrink factor, along
// x then y, in double, no rounding between. The reference the fused
// start's DCT-scaled decode is held to.
cv::Mat antialiased_resize(const cv::Mat& rgb8, cv::Rect2d box, int out_w,
                           int out_h) {
  // Taps over [start, start + length) of a dimension of `size` pixels:
  // clamped to the box where it is whole pixels (the crop torchvision
  // resizes), else to the image.
  auto weights = [](double start, double length, int size, int out) {
    std::vector<std::vector<std::pair<int, double>>> taps(
      static_cast<size_t>(out));
    double scale = length / out;
    double support = scale >= 1.0 ? scale : 1.0;
    int first = std::max(0, static_cast<int>(std::floor(start)));
    int last = std::min(size, static_cast<int>(std::ceil(start + length)));
    for (int i = 0; i < out; ++i) {
      double center = start + (i + 0.5) * scale;
      int lo = std::max(static_cast<int>(std::floor(center - support)), first);
      int hi = std::min(static_cast<int>(std::ceil(center + support)), last);
      double sum = 0;
      auto& t = taps[static_cast<size_t>(i)];
      for (int x = lo; x < hi; ++x) {
        double w = std::max(0.0, 1.0 - std::abs((x + 0.5 - center) / support));
        if (w > 0) {
          t.push_back({x, w});
          sum += w;
        }
      }
      for (auto& tap : t)
        tap.second /= sum;
    }
    return taps;
  };
  auto xs = weights(box.x, box.width, rgb8.cols, out_w);
  auto ys = weights(box.y, box.height, rgb8.rows, out_h);
  cv::Mat wide(rgb8.rows, out_w, CV_64FC3);
  for (int y = 0; y < rgb8.rows; ++y)
    for (int x = 0; x < out_w; ++x) {
      cv::Vec3d acc{0, 0, 0};
      for (auto [sx, w] : xs[static_cast<size_t>(x)])
        acc += cv::Vec3d(rgb8.at<cv::Vec3b>(y, sx)) * w;
      wide.at<cv::Vec3d>(y, x) = acc;
    }
  cv::Mat out(out_h, out_w, CV_32FC3);
  for (int y = 0; y < out_h; ++y)
    for (int x = 0; x < out_w; ++x) {
      cv::Vec3d acc{0, 0, 0};
      for (auto [sy, w] : ys[static_cast<size_t>(y)])
        acc += wide.at<cv::Vec3d>(sy, x) * w;
      out.at<cv::Vec3f>(y, x) = cv::Vec3f(acc / 255.0);
    }
  return out;
}

double psnr(const cv::Mat& a, const cv::Mat& b) {
  return cv::PSNR(a, b);
}

// The full-scale resample of `box` at each size in `outs` is the unfused
// chain's resize of the full decode's box (PIL's filter, 8-bit) to one
// 8-bit level, shrinking or enlarging (PIL rounds twice, half a level
// each time: float noise may take a pixel a hair past one level).
void expect_unfused_resize_to_one_level(const std::vector<char>& bytes,
                                        cv::Rect box,
                                        std::initializer_list<cv::Size> outs) {
  auto full = full_decode(bytes);
  for (cv::Size out : outs) {
    auto r = decode_jpeg_region(bytes, box, out.width, out.height, false);
    BOOST_REQUIRE(r);
    BOOST_TEST(r->scale == 8);
    cv::Mat want_f;
    resize_image(full(box), static_cast<uint32_t>(out.height),
                 static_cast<uint32_t>(out.width))
      .convertTo(want_f, CV_32F, 1.0 / 255.0);
    auto got = resample_region(*r, out.width, out.height);
    BOOST_TEST(max_abs_diff(got, want_f) <= 1.001 / 255.0,
               box << " to " << out << ": "
                   << max_abs_diff(got, want_f) * 255 << " levels");
  }
}

} // namespace

BOOST_AUTO_TEST_SUITE(region_resample)

BOOST_AUTO_TEST_CASE(a_reduced_decode_resized_is_close_to_the_full_one) {
  auto img = photo_like(480, 640);
  auto bytes = encode(img);
  auto full = full_decode(bytes);
  for (cv::Rect box : {cv::Rect{0, 0, 640, 480}, cv::Rect{100, 60, 460, 400},
                       cv::Rect{13, 7, 401, 357}}) {
    const int out = 56;
    auto r = decode_jpeg_region(bytes, box, out, out, false);
    BOOST_REQUIRE(r);
    BOOST_TEST(r->scale < 8);
    cv::Mat want, got;
    resample_region(*r, out, out).convertTo(got, CV_8U, 255.0);
    cv::resize(full(box), want, {out, out}, 0, 0, cv::INTER_AREA);
    BOOST_TEST(psnr(got, want) >= 30.0,
               "box " << box << " at " << r->scale << "/8: PSNR "
                      << psnr(got, want));
    BOOST_TEST_MESSAGE("box " << box << " at " << r->scale
                              << "/8: PSNR " << psnr(got, want) << " dB");
  }
}


BOOST_AUTO_TEST_CASE(at_full_scale_resampling_is_the_unfused_resize_to_one_level) {
  expect_unfused_resize_to_one_level(encode(photo_like(301, 397)),
                                     {21, 33, 250, 190},
                                     {{250, 190}, {224, 224}, {400, 300},
                                      {224, 160}, {97, 61}});
}


BOOST_AUTO_TEST_CASE(planes_hold_the_same_numbers_as_the_interleaved_image) {
  auto bytes = encode(photo_like(240, 320));
  pixel_finish finish;
  finish.flip = true;
  finish.mean = {0.485f, 0.456f, 0.406f};
  finish.stddev = {0.229f, 0.224f, 0.225f};
  // A full-scale whole-pixel box, and a reduced fractional one.
  for (cv::Rect2d box : {cv::Rect2d{10, 20, 200, 150},
                         cv::Rect2d{3.5, 7.25, 300.5, 220.75}}) {
    const int w = 64;
    const int h = 48;
    auto r = decode_jpeg_region(bytes, box, w, h, false);
    BOOST_REQUIRE(r);
    auto hwc = resample_region(*r, w, h, finish);
    std::vector<float> planes(static_cast<size_t>(3 * w * h), -7.0f);
    resample_region_planes(*r, w, h, finish, planes.data());
    int differ = 0;
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x)
        for (int c = 0; c < 3; ++c)
          differ += hwc.at<cv::Vec3f>(y, x)[c]
                    != planes[static_cast<size_t>((c * h + y) * w + x)];
    BOOST_TEST(differ == 0, "box " << box << " at " << r->scale << "/8");
  }
}


BOOST_AUTO_TEST_CASE(the_simd_resamples_give_the_portable_bits_at_every_edge) {
  // Boxes that shrink (by 1.3, by 2.7: past the VBMI antialiased pass's
  // table for three channels, and by 8: reduced by the IDCT), enlarge,
  // touch the right and bottom edges, start at a fraction or are one
  // pixel wide, with taps within the box or reading beyond it; outputs
  // whose width is not a multiple of the 8 or 16 pixels the vector passes
  // make at once.
  auto bytes = encode(photo_like(240, 320));
  std::vector<simd_path> paths;
  for (auto path : {simd_path::avx2, simd_path::avx512})
    if (supports(path))
      paths.push_back(path);
  // What each comparison really compared: an AVX-512 request runs a VBMI
  // x pass only where the CPU permutes bytes and a block's taps fit its
  // table (else AVX2's bilinear x pass, or the portable antialiased one).
  std::map<resample_pass, int> compared;
  for (bool gray : {false, true})
    for (bool beyond : {false, true})
      for (cv::Rect2d box : {cv::Rect2d{10, 20, 300, 200},
                             cv::Rect2d{100, 60, 57, 41},
                             cv::Rect2d{250, 180, 70, 60},
                             cv::Rect2d{0.5, 3.25, 180.5, 99.75},
                             cv::Rect2d{319, 0, 1, 240}})
        for (cv::Size out : {cv::Size{224, 224}, cv::Size{400, 300},
                             cv::Size{37, 29}, cv::Size{112, 80},
                             cv::Size{8, 1}})
          for (bool flip : {false, true}) {
            auto r = decode_jpeg_region(bytes, box, out.width, out.height,
                                        gray, beyond);
            BOOST_REQUIRE(r);
            pixel_finish finish;
            finish.flip = flip;
            finish.mean = {0.485f, 0.456f, 0.406f};
            finish.stddev = {0.229f, 0.224f, 0.225f};
            auto n = static_cast<size_t>(r->pixels.channels() * out.area());
            std::vector<float> portable(n, -7.0f);
            auto base = resample_region_planes(*r, out.width, out.height,
                                               finish, portable.data(),
                                               simd_path::portable);
            BOOST_TEST((base == resample_pass::portable
                        || base == resample_pass::antialiased));
            for (auto path : paths) {
              std::vector<float> fast(n, -9.0f);
              auto used = resample_region_planes(*r, out.width, out.height,
                                                 finish, fast.data(), path);
              BOOST_TEST(portable == fast,
                         "box " << box << " to " << out
                                << (flip ? ", flipped" : "")
                                << (gray ? ", gray" : "")
                                << (beyond ? ", beyond the box" : "")
                                << ", pass " << static_cast<int>(used));
              ++compared[used];
            }
          }
  for (auto& [pass, n] : compared)
    BOOST_TEST_MESSAGE("pass " << static_cast<int>(pass) << ": " << n
                               << " comparison(s) with the portable path");
  // Every vector code this CPU has was compared, not only asked for: the
  // AVX2 row loops (gray), the AVX2 x pass (colour), the antialiased
  // pass's vector y loops, and the VBMI passes where the CPU permutes
  // bytes.
  if (supports(simd_path::avx2)) {
    BOOST_TEST(compared[resample_pass::avx2_rows] >= 10);
    BOOST_TEST(compared[resample_pass::avx2] >= 10);
    BOOST_TEST(compared[resample_pass::antialiased] >= 10);
  }
  if (supports(simd_path::avx512) && supports_byte_permutes()) {
    BOOST_TEST(compared[resample_pass::avx512] >= 10);
    BOOST_TEST(compared[resample_pass::antialiased_avx512] >= 10);
  }
}


BOOST_AUTO_TEST_CASE(a_box_at_the_images_corner_resamples_like_the_unfused_resize) {
  // The last column and row have no neighbour after them: the taps clamp
  // there as the unfused resize's do, and what lies past the image counts
  // for nothing.
  expect_unfused_resize_to_one_level(encode(photo_like(240, 320)),
                                     {200, 150, 120, 90}, // right, bottom
                                     {{224, 224}, {61, 45}});
}


BOOST_AUTO_TEST_CASE(on_real_photos_a_reduced_decode_is_within_40_db_of_the_reference) {
  // python3-skimage's photos (tools/setup installs them) as JPEGs of
  // quality 90; boxes the decoder reduces by 1/8 to 4/8; against the full
  // decode, the same box and torchvision's antialiased resize.
  double worst = 1e9;
  int reduced = 0;
  for (auto name : {"astronaut.png", "coffee.png", "chelsea.png",
                    "motorcycle_left.png", "rocket.jpg"}) {
    auto path = skimage_photos + "/" + name;
    cv::Mat photo = cv::imread(path, cv::IMREAD_COLOR);
    BOOST_REQUIRE_MESSAGE(!photo.empty(),
                          path << " is missing (apt-get install "
                                  "python3-skimage; tools/setup does)");
    auto bytes = encode(photo);
    auto full = full_decode(bytes);
    const int w = photo.cols;
    const int h = photo.rows;
    for (cv::Rect box : {cv::Rect{0, 0, w, h},
                         cv::Rect{w / 10, h / 8, w * 7 / 10, h * 3 / 4},
                         cv::Rect{w / 3, h / 4, w / 2, h / 2}}) {
      for (int out : {28, 56, 112}) {
        auto r = decode_jpeg_region(bytes, box, out, out, false);
        BOOST_REQUIRE(r);
        if (r->scale == 8)
          continue; // full scale: held to one level elsewhere
        ++reduced;
        auto got = resample_region(*r, out, out);
        auto want = antialiased_resize(full, box, out, out);
        auto db = cv::PSNR(got, want, 1.0);
        worst = std::min(worst, db);
        BOOST_TEST(db >= 40.0, name << " box " << box << " to " << out
                                    << " at " << r->scale << "/8: PSNR "
                                    << db << " dB");
      }
    }
  }
  BOOST_TEST(reduced >= 10);
  BOOST_TEST_MESSAGE(reduced << " reduced decodes, worst PSNR " << worst
                             << " dB");
}

BOOST_AUTO_TEST_SUITE_END()
