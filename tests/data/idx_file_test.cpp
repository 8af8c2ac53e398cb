#include <boost/test/unit_test.hpp>

#include <fstream>

#include <unistd.h>
#include <zlib.h>

#include "stoker/errors.hpp"
#include "data/idx_file.hpp"

#include "support/real_data.hpp"

using namespace stoker;
using namespace stoker_test;

namespace {

std::string header(uint8_t rank, std::vector<uint32_t> dims) {
  std::string out{'\0', '\0', '\x08', static_cast<char>(rank)};
  for (auto d : dims)
    for (int shift = 24; shift >= 0; shift -= 8)
      out += static_cast<char>((d >> shift) & 0xff);
  return out;
}

std::string write(const scratch_dir& dir, const std::string& name,
                  const std::string& bytes) {
  auto path = dir.path + "/" + name;
  std::ofstream{path, std::ios::binary} << bytes;
  return path;
}

std::string error_of(const std::string& path, uint32_t rank) {
  auto r = read_idx(path, rank);
  BOOST_REQUIRE(!r);
  BOOST_TEST(is(r.error(), errc::invalid_config));
  return describe(r.error());
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

} // namespace

BOOST_AUTO_TEST_SUITE(idx_file)

BOOST_AUTO_TEST_CASE(reads_fashion_mnist_as_installed) {
  require_fashion_mnist();
  auto train = read_idx(fashion_mnist_dir + "/train-images-idx3-ubyte.gz", 3);
  BOOST_REQUIRE_MESSAGE(train, why(train));
  BOOST_TEST(train->dims == (std::vector<uint32_t>{60000, 28, 28}));
  BOOST_TEST(train->item_size() == 784u);
  BOOST_TEST(train->data.size() == 60000u * 784u);
  auto labels = read_idx(fashion_mnist_dir + "/t10k-labels-idx1-ubyte.gz", 1);
  BOOST_REQUIRE(labels);
  BOOST_TEST(labels->dims[0] == 10000u);
  std::vector<int> per_class(10);
  for (auto l : labels->data) {
    BOOST_REQUIRE(l < 10);
    ++per_class[l];
  }
  for (auto n : per_class)
    BOOST_TEST(n == 1000); // the test split is balanced
  auto dims = read_idx_dims(fashion_mnist_dir + "/t10k-images-idx3-ubyte.gz", 3);
  BOOST_REQUIRE(dims);
  BOOST_TEST(*dims == (std::vector<uint32_t>{10000, 28, 28}));
}

BOOST_AUTO_TEST_CASE(reads_plain_and_gzip_files_alike) {
  scratch_dir dir{"idx"};
  auto bytes = header(3, {2, 2, 3}) + std::string{"abcdefghijkl"};
  auto plain = write(dir, "plain", bytes);
  auto gz = dir.path + "/packed.gz";
  auto* f = gzopen(gz.c_str(), "wb");
  gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(f);
  for (auto& path : {plain, gz}) {
    auto r = read_idx(path, 3);
    BOOST_REQUIRE(r);
    BOOST_TEST(r->dims == (std::vector<uint32_t>{2, 2, 3}));
    BOOST_TEST(std::string(r->data.begin(), r->data.end()) == "abcdefghijkl");
  }
}

BOOST_AUTO_TEST_CASE(bad_files_are_refused_with_what_is_wrong) {
  scratch_dir dir{"idx-bad"};
  BOOST_TEST(has(error_of(dir.path + "/nothing", 3), "cannot open"));
  BOOST_TEST(has(error_of(write(dir, "short", "\0\0"), 3), "magic number"));
  auto wrong_magic = header(3, {1, 1, 1}) + "x";
  wrong_magic[2] = '\x0d'; // floats, not unsigned bytes
  auto msg = error_of(write(dir, "floats", wrong_magic), 3);
  BOOST_TEST(has(msg, "magic number 0x00000d03"), msg);
  BOOST_TEST(has(msg, "expected 0x00000803"), msg);
  BOOST_TEST(has(error_of(write(dir, "labels", header(1, {1}) + "x"), 3),
                 "magic number 0x00000801"));
  BOOST_TEST(has(error_of(write(dir, "zero", header(3, {0, 2, 2})), 3),
                 "dimension 1 is 0"));
  msg = error_of(write(dir, "truncated", header(3, {4, 2, 2}) + "abc"), 3);
  BOOST_TEST(has(msg, "truncated: 3 bytes of data, expected 16"), msg);
  BOOST_TEST(has(error_of(write(dir, "long", header(1, {2}) + "abc"), 1),
                 "more data than the header's 2 bytes"));
  BOOST_TEST(has(error_of(write(dir, "huge",
                                header(3, {0xffffffff, 0xffffff, 2})),
                          3),
                 "claims more than"));
  BOOST_TEST(has(error_of(write(dir, "cut", header(3, {4, 2})), 3),
                 "the header ends inside dimension 3"));
}

BOOST_AUTO_TEST_SUITE_END()
