#include <boost/test/unit_test.hpp>

#include <array>
#include <cmath>
#include <cstdlib>
#include <initializer_list>
#include <map>
#include <random>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <cstdio>

#include <jpeglib.h>

#include "stoker/errors.hpp"
#include "kernels/image_ops.hpp"
#include "kernels/jpeg_region.hpp"

using namespace stoker;

namespace {

// A photo-like test image: smooth gradients, edges and fine texture (the
// parts a DCT-scaled decode gets wrong first), the same every run.
cv::Mat photo_like(int height, int width) {
  cv::Mat img(height, width, CV_8UC3);
  std::mt19937 gen{7};
  std::uniform_int_distribution<int> noise{-6, 6};
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) {
      double r = 128 + 90 * std::sin(x * 0.031) * std::cos(y * 0.017);
      double g = 60 + 150.0 * y / height + 20 * std::sin((x + y) * 0.2);
      double b = ((x / 23 + y / 31) % 2 ? 200 : 40) + 10 * std::sin(x * 0.9);
      auto px = [&](double v) {
        return cv::saturate_cast<uint8_t>(v + noise(gen));
      };
      img.at<cv::Vec3b>(y, x) = {px(b), px(g), px(r)}; // BGR for imencode
    }
  return img;
}

std::vector<char> encode(const cv::Mat& img, std::vector<int> params = {}) {
  std::vector<uchar> out;
  params.insert(params.begin(), {cv::IMWRITE_JPEG_QUALITY, 90});
  BOOST_REQUIRE(cv::imencode(".jpg", img, out, params));
  return {out.begin(), out.end()};
}

// What OpenCV's decoder (the unfused path) makes of the whole file.
cv::Mat full_decode(const std::vector<char>& bytes, bool gray = false) {
  return decode_image(bytes, gray);
}

// A CMYK JPEG (as print workflows write them, with libjpeg's Adobe
// marker: inverted ink values), filled with `cmyk`.
std::vector<char> cmyk_jpeg(int height, int width,
                            std::array<unsigned char, 4> cmyk) {
  jpeg_compress_struct c;
  jpeg_error_mgr err;
  c.err = jpeg_std_error(&err);
  jpeg_create_compress(&c);
  unsigned char* mem = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&c, &mem, &size);
  c.image_width = static_cast<JDIMENSION>(width);
  c.image_height = static_cast<JDIMENSION>(height);
  c.input_components = 4;
  c.in_color_space = JCS_CMYK;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, 95, TRUE);
  jpeg_start_compress(&c, TRUE);
  std::vector<unsigned char> row(static_cast<size_t>(width) * 4);
  for (int x = 0; x < width; ++x)
    for (int k = 0; k < 4; ++k)
      row[static_cast<size_t>(x) * 4 + k] = cmyk[k];
  while (c.next_scanline < c.image_height) {
    JSAMPROW rows[] = {row.data()};
    jpeg_write_scanlines(&c, rows, 1);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  std::vector<char> out(reinterpret_cast<char*>(mem),
                        reinterpret_cast<char*>(mem) + size);
  std::free(mem);
  return out;
}

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

const std::string skimage_photos = "/usr/lib/python3/dist-packages/skimage/data";

double max_abs_diff(const cv::Mat& a, const cv::Mat& b) {
  double worst = 0;
  cv::Mat diff;
  cv::absdiff(a, b, diff);
  cv::minMaxLoc(diff.reshape(1), nullptr, &worst);
  return worst;
}

double psnr(const cv::Mat& a, const cv::Mat& b) {
  return cv::PSNR(a, b);
}

// The region's box at full scale, as whole pixels of the region.
cv::Mat box_of(const jpeg_region& r) {
  return r.pixels(cv::Rect{static_cast<int>(r.box.x),
                           static_cast<int>(r.box.y),
                           static_cast<int>(r.box.width),
                           static_cast<int>(r.box.height)});
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

BOOST_AUTO_TEST_SUITE(jpeg_region)

BOOST_AUTO_TEST_CASE(reads_the_header_without_decoding) {
  auto bytes = encode(photo_like(301, 397),
                      {cv::IMWRITE_JPEG_PROGRESSIVE, 1});
  auto h = read_jpeg_header(bytes);
  BOOST_REQUIRE(h);
  BOOST_TEST(h->width == 397);
  BOOST_TEST(h->height == 301);
  BOOST_TEST(h->components == 3);
  BOOST_TEST(h->progressive);
  BOOST_TEST(h->orientation == 1);
  BOOST_TEST(region_decodable(*h));
  std::vector<uchar> png;
  cv::imencode(".png", photo_like(8, 8), png);
  BOOST_TEST(!read_jpeg_header({png.begin(), png.end()}));
  BOOST_TEST(!read_jpeg_header({}));
}

BOOST_AUTO_TEST_CASE(dct_scaling_picks_the_largest_reduction_that_keeps_the_output) {
  // The reduced box stays at least three times the output.
  BOOST_TEST(dct_scale_for(2400, 2400, 100, 100) == 1); // 2400/8 = 3 x 100
  BOOST_TEST(dct_scale_for(2399, 2400, 100, 100) == 2);
  BOOST_TEST(dct_scale_for(900, 900, 64, 64) == 2);   // 225 >= 192 > 112
  BOOST_TEST(dct_scale_for(900, 600, 64, 64) == 4);   // the short side
  BOOST_TEST(dct_scale_for(600, 300, 64, 64) == 8);   // 6/8 would do: no SIMD
  BOOST_TEST(dct_scale_for(380, 380, 64, 64) == 8);   // 4/8: 190 < 192
  BOOST_TEST(dct_scale_for(224, 224, 224, 224) == 8);
  BOOST_TEST(dct_scale_for(100, 100, 224, 224) == 8); // upscaling: full size
}

BOOST_AUTO_TEST_CASE(at_full_scale_the_region_is_the_full_decode_cropped) {
  auto img = photo_like(301, 397);
  struct variant {
    const char* name;
    std::vector<int> params;
    bool gray;
  };
  std::vector<variant> variants{
    {"baseline", {}, false},
    {"progressive", {cv::IMWRITE_JPEG_PROGRESSIVE, 1}, false},
    {"restart markers", {cv::IMWRITE_JPEG_RST_INTERVAL, 2}, false},
    {"grayscale output", {}, true},
  };
  // Inside, touching every edge, each corner, one pixel.
  // Crops that start on an iMCU edge (x, y multiples of 16) too.
  std::vector<cv::Rect> boxes{{50, 40, 200, 150}, {0, 0, 397, 301},
                              {208, 48, 150, 200}, {144, 32, 200, 96},
                              {0, 0, 90, 70},     {300, 230, 97, 71},
                              {0, 150, 397, 20},  {190, 0, 17, 301},
                              {396, 300, 1, 1}};
  for (auto& v : variants) {
    auto bytes = encode(img, v.params);
    auto full = full_decode(bytes, v.gray);
    for (auto& box : boxes) {
      // An output as large as the box: no reduction.
      auto r = decode_jpeg_region(bytes, box, box.width, box.height, v.gray);
      BOOST_REQUIRE_MESSAGE(r, v.name << ": " << (r ? "" : describe(r.error())));
      BOOST_TEST(r->scale == 8);
      BOOST_TEST(r->box.width == box.width);
      auto got = box_of(*r);
      BOOST_TEST(max_abs_diff(got, full(box)) <= 1.0,
                 v.name << " box " << box << ": max diff "
                        << max_abs_diff(got, full(box)));
      // Whole rows and columns were skipped where the box allows.
      BOOST_TEST(r->pixels.rows <= box.height + 4);
      BOOST_TEST(r->pixels.cols < box.width + 32);
    }
  }
  // A grayscale file comes out as RGB for an RGB chain, as OpenCV's.
  cv::Mat gray;
  cv::cvtColor(img, gray, cv::COLOR_BGR2GRAY);
  auto bytes = encode(gray);
  auto h = read_jpeg_header(bytes);
  BOOST_REQUIRE(h);
  BOOST_TEST(h->components == 1);
  auto r = decode_jpeg_region(bytes, {10, 10, 100, 80}, 100, 80, false);
  BOOST_REQUIRE(r);
  BOOST_TEST(r->pixels.channels() == 3);
  BOOST_TEST(max_abs_diff(box_of(*r), full_decode(bytes)({10, 10, 100, 80}))
             <= 1.0);
  // A 1x1 image.
  auto dot = encode(photo_like(1, 1));
  auto one = decode_jpeg_region(dot, {0, 0, 1, 1}, 1, 1, false);
  BOOST_REQUIRE(one);
  BOOST_TEST(max_abs_diff(box_of(*one), full_decode(dot)) <= 1.0);
}

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

BOOST_AUTO_TEST_CASE(a_truncated_or_foreign_file_is_an_error_naming_it) {
  auto bytes = encode(photo_like(200, 200));
  auto cut = std::vector<char>(bytes.begin(), bytes.begin() + bytes.size() / 2);
  auto r = decode_jpeg_region(cut, {0, 150, 200, 50}, 200, 50, false);
  BOOST_REQUIRE(!r);
  BOOST_TEST(is(r.error(), errc::io_failure), describe(r.error()));
  BOOST_TEST(describe(r.error()).find("truncated") != std::string::npos,
             describe(r.error()));
  auto junk = std::vector<char>(100, 'x');
  auto j = decode_jpeg_region(junk, {0, 0, 1, 1}, 1, 1, false);
  BOOST_REQUIRE(!j);
  BOOST_TEST(describe(j.error()).find("not a JPEG (100 bytes)")
               != std::string::npos,
             describe(j.error()));
  auto outside = decode_jpeg_region(bytes, {150, 150, 100, 10}, 10, 10, false);
  BOOST_REQUIRE(!outside);
  BOOST_TEST(describe(outside.error()).find("is not inside the 200x200 image")
               != std::string::npos,
             describe(outside.error()));
}

BOOST_AUTO_TEST_CASE(an_exif_turned_file_is_left_to_opencv) {
  auto bytes = encode(photo_like(64, 48));
  // APP1 "Exif": a little-endian TIFF header, IFD0 with one entry:
  // Orientation (0x0112), SHORT, 1 value: 6 (turned 90 degrees).
  const unsigned char app1[] = {
    0xFF, 0xE1, 0x00, 0x22, 'E', 'x', 'i', 'f', 0, 0, 'I', 'I', 0x2A, 0,
    8, 0, 0, 0, 1, 0, 0x12, 0x01, 3, 0, 1, 0, 0, 0, 6, 0, 0, 0, 0, 0, 0, 0};
  bytes.insert(bytes.begin() + 2, reinterpret_cast<const char*>(app1),
               reinterpret_cast<const char*>(app1) + sizeof(app1));
  auto h = read_jpeg_header(bytes);
  BOOST_REQUIRE(h);
  BOOST_TEST(h->orientation == 6);
  BOOST_TEST(!region_decodable(*h));
  auto r = decode_jpeg_region(bytes, {0, 0, 48, 64}, 48, 64, false);
  BOOST_REQUIRE(!r);
  BOOST_TEST(describe(r.error()).find("EXIF orientation 6")
               != std::string::npos,
             describe(r.error()));
  // OpenCV turns it: 48 rows of 64.
  BOOST_TEST(full_decode(bytes).rows == 48);
}

BOOST_AUTO_TEST_CASE(a_cmyk_file_is_left_to_opencv_which_converts_it) {
  // Red ink: no cyan, full magenta and yellow, no black; stored inverted.
  auto bytes = cmyk_jpeg(40, 56, {255, 0, 0, 255});
  auto h = read_jpeg_header(bytes);
  BOOST_REQUIRE(h);
  BOOST_TEST(h->components == 4);
  BOOST_TEST(!region_decodable(*h));
  auto r = decode_jpeg_region(bytes, {0, 0, 56, 40}, 56, 40, false);
  BOOST_REQUIRE(!r);
  BOOST_TEST(describe(r.error()).find("4 components") != std::string::npos,
             describe(r.error()));
  auto rgb = full_decode(bytes);
  BOOST_REQUIRE(rgb.channels() == 3);
  auto px = rgb.at<cv::Vec3b>(20, 28);
  BOOST_TEST_MESSAGE("CMYK red decodes to RGB " << px);
  BOOST_TEST(px[0] >= 200); // RGB: red
  BOOST_TEST(px[1] <= 55);
  BOOST_TEST(px[2] <= 55);
}

BOOST_AUTO_TEST_SUITE_END()
