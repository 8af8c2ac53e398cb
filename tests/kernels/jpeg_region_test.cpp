#include <boost/test/unit_test.hpp>

#include <array>
#include <cmath>
#include <cstdlib>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <cstdio>

#include <jpeglib.h>

#include "stoker/errors.hpp"
#include "kernels/image_ops.hpp"
#include "kernels/jpeg_region.hpp"
#include "support/photo_jpegs.hpp"

using namespace stoker;
using namespace stoker_test;

namespace {

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

// The region's box at full scale, as whole pixels of the region.
cv::Mat box_of(const jpeg_region& r) {
  return r.pixels(cv::Rect{static_cast<int>(r.box.x),
                           static_cast<int>(r.box.y),
                           static_cast<int>(r.box.width),
                           static_cast<int>(r.box.height)});
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
