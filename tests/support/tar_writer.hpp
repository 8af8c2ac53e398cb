#pragma once

// WebDataset shards written byte by byte for the tests: ustar members, GNU
// long names and pax records, and shards damaged on purpose. (Real shards
// come from tools/data/make-shards, Python's tarfile.)

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

namespace stoker_test {

// One 512-byte ustar header with a valid checksum.
inline std::string tar_header(const std::string& name, size_t size,
                              char type = '0') {
  std::string h(512, '\0');
  std::memcpy(&h[0], name.data(), std::min<size_t>(name.size(), 100));
  std::snprintf(&h[100], 8, "%07o", 0644);
  std::snprintf(&h[108], 8, "%07o", 0);
  std::snprintf(&h[116], 8, "%07o", 0);
  std::snprintf(&h[124], 12, "%011zo", size);
  std::snprintf(&h[136], 12, "%011o", 0);
  h[156] = type;
  std::memcpy(&h[257], "ustar", 6);
  h[263] = '0';
  h[264] = '0';
  std::memset(&h[148], ' ', 8);
  unsigned sum = 0;
  for (unsigned char c : h)
    sum += c;
  std::snprintf(&h[148], 8, "%06o", sum);
  return h;
}

// A member: its header, its bytes, padding to the next 512.
inline std::string tar_member(const std::string& name, const std::string& data,
                              char type = '0') {
  auto out = tar_header(name, data.size(), type) + data;
  out.append((512 - data.size() % 512) % 512, '\0');
  return out;
}

// A pax record "LEN key=value\n", LEN counting itself.
inline std::string pax_record(const std::string& key, const std::string& value) {
  auto body = " " + key + "=" + value + "\n";
  auto len = body.size() + 1;
  while (std::to_string(len).size() + body.size() != len)
    ++len;
  return std::to_string(len) + body;
}

inline std::string tar_end() { return std::string(1024, '\0'); }

// A small PNG, its pixels a function of `seed`.
inline std::string png_bytes(int seed, int side = 16) {
  cv::Mat img(side, side, CV_8UC3);
  for (int y = 0; y < side; ++y)
    for (int x = 0; x < side; ++x)
      img.at<cv::Vec3b>(y, x) = cv::Vec3b(static_cast<uchar>(seed * 7 + x),
                                          static_cast<uchar>(seed * 3 + y),
                                          static_cast<uchar>(seed));
  std::vector<uchar> buf;
  cv::imencode(".png", img, buf);
  return std::string(buf.begin(), buf.end());
}

// The sample KEY.png + KEY.cls.
inline std::string sample_members(const std::string& key, int label) {
  return tar_member(key + ".png", png_bytes(label + 1))
         + tar_member(key + ".cls", std::to_string(label));
}

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream{path, std::ios::binary} << bytes;
}

// `shards` shards DIR/train-00000N.tar of `per_shard` samples each
// (labels i % classes, keys the sample's number, a side x side PNG per
// class); returns the brace pattern that names them.
inline std::string write_shards(const std::string& dir, int shards,
                                int per_shard, int classes, int side = 16) {
  std::vector<std::string> images;
  for (int c = 0; c < classes; ++c)
    images.push_back(png_bytes(c + 1, side));
  for (int s = 0; s < shards; ++s) {
    std::string bytes;
    for (int i = s * per_shard; i < (s + 1) * per_shard; ++i) {
      char key[16];
      std::snprintf(key, sizeof key, "%08d", i);
      bytes += tar_member(std::string{key} + ".png", images[i % classes])
               + tar_member(std::string{key} + ".cls",
                            std::to_string(i % classes));
    }
    char name[32];
    std::snprintf(name, sizeof name, "/train-%06d.tar", s);
    write_bytes(dir + name, bytes + tar_end());
  }
  char last[16];
  std::snprintf(last, sizeof last, "%06d", shards - 1);
  return dir + "/train-{000000.." + last + "}.tar";
}

} // namespace stoker_test
