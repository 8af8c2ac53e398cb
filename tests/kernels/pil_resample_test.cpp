#include <boost/test/unit_test.hpp>

#include <random>
#include <vector>

#include <opencv2/core.hpp>

#include "kernels/region_resample.hpp"
#include "kernels/pil_resample.hpp"

using namespace stoker;

namespace {

// Noise over gradients and hard edges, `channels` channels, the same
// every run.
cv::Mat test_image(int rows, int cols, int channels) {
  cv::Mat img(rows, cols, CV_8UC(channels));
  std::mt19937 gen{11};
  std::uniform_int_distribution<int> noise{0, 40};
  for (int y = 0; y < rows; ++y) {
    auto* p = img.ptr<uint8_t>(y);
    for (int x = 0; x < cols; ++x)
      for (int c = 0; c < channels; ++c)
        *p++ = static_cast<uint8_t>(
          ((x / 7 + y / 5 + c) % 2 ? 180 : 20) + noise(gen));
  }
  return img;
}

std::vector<uint8_t> bytes_of(const cv::Mat& m) {
  std::vector<uint8_t> out;
  for (int y = 0; y < m.rows; ++y)
    out.insert(out.end(), m.ptr<uint8_t>(y),
               m.ptr<uint8_t>(y) + m.cols * m.elemSize());
  return out;
}

cv::Mat row_of(std::vector<uint8_t> v, bool column = false) {
  cv::Mat m(1, static_cast<int>(v.size()), CV_8UC1, v.data());
  return column ? m.t() : m.clone();
}

} // namespace

BOOST_AUTO_TEST_SUITE(pil_resample)

BOOST_AUTO_TEST_CASE(gives_pillows_bytes) {
  // What Pillow 9's Image.resize(..., BILINEAR) gives for these rows
  // (python3-pil): a 2x shrink, a 7/3 shrink, an enlargement, and the
  // same along y.
  auto two = pil_resize(row_of({0, 100, 200, 255}), 1, 2,
                        simd_path::portable);
  BOOST_TEST(bytes_of(two) == (std::vector<uint8_t>{71, 209}));
  const std::vector<uint8_t> ramp{0, 10, 40, 90, 160, 250, 255};
  BOOST_TEST(bytes_of(pil_resize(row_of(ramp), 1, 3, simd_path::portable))
             == (std::vector<uint8_t>{13, 99, 233}));
  BOOST_TEST(bytes_of(pil_resize(row_of(ramp), 1, 11, simd_path::portable))
             == (std::vector<uint8_t>{0, 5, 13, 32, 58, 90, 135, 185, 242,
                                      253, 255}));
  BOOST_TEST(bytes_of(pil_resize(row_of(ramp, true), 3, 1,
                                 simd_path::portable))
             == (std::vector<uint8_t>{13, 99, 233}));
}

BOOST_AUTO_TEST_CASE(every_path_gives_the_portable_bytes) {
  // Shrinks by 1.3, 1.9, 2.7 (past the VBMI table of interleaved pixels
  // for three channels: from planes) and 10 (past the planes' table too:
  // portable), enlargements, one axis each way, widths that are not a
  // multiple of the 16 outputs a VBMI step makes; whole images and a crop
  // (a view whose rows run on into the image: the unfused chain's crop
  // then resize), whose last rows have little memory after them.
  std::vector<simd_path> paths;
  for (auto path : {simd_path::avx2, simd_path::avx512})
    if (supports(path))
      paths.push_back(path);
  int compared = 0;
  int vbmi = 0;
  for (int channels : {1, 3, 4}) {
    auto whole = test_image(301, 397, channels);
    for (const cv::Mat& img :
         {whole, cv::Mat(whole, cv::Rect{40, 30, 300, 271})})
      for (cv::Size out : {cv::Size{300, 230}, cv::Size{210, 160},
                           cv::Size{147, 110}, cv::Size{40, 30},
                           cv::Size{500, 401},
                           cv::Size{224, 400}, cv::Size{37, 29},
                           cv::Size{8, 1}, cv::Size{1, 1}}) {
        auto portable = pil_resize(img, out.height, out.width,
                                   simd_path::portable);
        BOOST_REQUIRE(portable.size() == out);
        for (auto path : paths) {
          auto fast = pil_resize(img, out.height, out.width, path);
          BOOST_TEST(bytes_of(fast) == bytes_of(portable),
                     img.size() << " x" << channels << " to " << out
                                << ", path " << static_cast<int>(path));
          ++compared;
          vbmi += pil_resize_uses_vbmi(channels, img.cols, out.width, path);
        }
      }
  }
  BOOST_TEST_MESSAGE(compared << " comparisons, " << vbmi
                              << " through the VBMI x pass");
  if (supports(simd_path::avx512) && supports_byte_permutes())
    BOOST_TEST(vbmi >= 10);
  BOOST_TEST(!pil_resize_uses_vbmi(3, 397, 40, simd_path::avx512));
}

BOOST_AUTO_TEST_CASE(a_flat_image_stays_flat_and_the_same_size_is_kept) {
  cv::Mat flat(50, 70, CV_8UC3, cv::Scalar(7, 128, 255));
  for (auto path : {simd_path::portable, best_simd_path()}) {
    auto out = pil_resize(flat, 33, 41, path);
    BOOST_TEST(cv::norm(out, cv::Mat(33, 41, CV_8UC3,
                                     cv::Scalar(7, 128, 255)),
                        cv::NORM_INF) == 0.0);
  }
  auto same = pil_resize(flat, 50, 70, simd_path::portable);
  BOOST_TEST(same.data == flat.data);
}

BOOST_AUTO_TEST_SUITE_END()
