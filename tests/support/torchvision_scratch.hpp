#pragma once

// A scratch folder for the files a test hands python3-torchvision and
// reads back, and a photo-like test image (the augment suites).

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include <unistd.h>

#include <opencv2/core.hpp>

namespace stoker_test {

namespace fs = std::filesystem;

/// A folder of its own under the temp dir, removed with it.
struct scratch {
  fs::path dir = fs::temp_directory_path()
                 / ("stoker-augment-" + std::to_string(::getpid()));
  scratch() { fs::create_directories(dir); }
  ~scratch() {
    std::error_code ignored;
    fs::remove_all(dir, ignored);
  }
  fs::path write(const std::string& name, const std::string& text) const {
    std::ofstream{dir / name, std::ios::binary} << text;
    return dir / name;
  }
  std::string read(const std::string& name) const {
    std::ifstream f{dir / name, std::ios::binary};
    return {std::istreambuf_iterator<char>(f), {}};
  }
};

/// A photo-like image: smooth gradients, an edge and some noise, so every
/// op (equalize, autocontrast, sharpness) has something to do.
inline cv::Mat test_image(int h, int w, int c) {
  cv::Mat m(h, w, CV_8UC(c));
  cv::RNG noise{7};
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int k = 0; k < c; ++k) {
        int v = 40 + (x * 3 + y * 2 + k * 50) % 150 + (x > w / 2 ? 30 : 0)
                + noise.uniform(0, 12);
        m.ptr<uint8_t>(y)[x * c + k] = static_cast<uint8_t>(v);
      }
  return m;
}

/// The same type, size and bytes.
inline bool bytes_equal(const cv::Mat& a, const cv::Mat& b) {
  return a.type() == b.type() && a.size() == b.size()
         && std::equal(a.datastart, a.dataend, b.datastart);
}

/// One line of a dumped augmentation space: "NAME SIGNED V0 V1 ...".
struct space_row {
  std::string name;
  int is_signed = 0;
  std::vector<double> values;
};

/// The rows of a dumped space, in order.
inline std::vector<space_row> read_space(const std::string& text) {
  std::vector<space_row> rows;
  std::istringstream lines{text};
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words{line};
    space_row r;
    words >> r.name >> r.is_signed;
    r.values.assign(std::istream_iterator<double>(words), {});
    rows.push_back(std::move(r));
  }
  return rows;
}

} // namespace stoker_test
