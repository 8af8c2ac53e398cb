#pragma once

// JPEGs for the suites of the fused start's units (jpeg_region,
// region_resample): a photo-like test image, its encoding, what the
// unfused path decodes from it, and python3-skimage's real photos.

#include <boost/test/unit_test.hpp>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include "kernels/image_ops.hpp"

namespace stoker_test {

// A photo-like test image: smooth gradients, edges and fine texture (the
// parts a DCT-scaled decode gets wrong first), the same every run.
inline cv::Mat photo_like(int height, int width) {
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

inline std::vector<char> encode(const cv::Mat& img, std::vector<int> params = {}) {
  std::vector<uchar> out;
  params.insert(params.begin(), {cv::IMWRITE_JPEG_QUALITY, 90});
  BOOST_REQUIRE(cv::imencode(".jpg", img, out, params));
  return {out.begin(), out.end()};
}

// What OpenCV's decoder (the unfused path) makes of the whole file.
inline cv::Mat full_decode(const std::vector<char>& bytes, bool gray = false) {
  return stoker::decode_image(bytes, gray);
}

// The largest difference between two images, any channel.
inline double max_abs_diff(const cv::Mat& a, const cv::Mat& b) {
  double worst = 0;
  cv::Mat diff;
  cv::absdiff(a, b, diff);
  cv::minMaxLoc(diff.reshape(1), nullptr, &worst);
  return worst;
}

// python3-skimage's photos (tools/setup installs them).
inline const std::string skimage_photos =
  "/usr/lib/python3/dist-packages/skimage/data";

} // namespace stoker_test
