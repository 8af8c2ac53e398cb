#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <vector>

#include "core/checksum.hpp"

using namespace stoker;

namespace {

std::vector<unsigned char> bytes(size_t n) {
  std::vector<unsigned char> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = static_cast<unsigned char>(mix64(i));
  return v;
}

} // namespace

BOOST_AUTO_TEST_SUITE(checksum)

BOOST_AUTO_TEST_CASE(every_supported_simd_path_gives_the_same_sum) {
  for (size_t n : {0u, 1u, 63u, 64u, 65u, 1000u, 602112u}) {
    auto v = bytes(n);
    auto reference = checksum64(v.data(), n, simd_path::portable);
    for (auto path : {simd_path::avx2, simd_path::avx512})
      if (supports(path))
        BOOST_TEST(checksum64(v.data(), n, path) == reference);
    BOOST_TEST(checksum64(v.data(), n) == reference);
  }
}

BOOST_AUTO_TEST_CASE(any_flipped_bit_changes_the_sum) {
  auto v = bytes(1000);
  auto sum = checksum64(v.data(), v.size());
  for (size_t i : {0u, 7u, 63u, 64u, 500u, 959u, 960u, 999u}) {
    for (int bit : {0, 7}) {
      v[i] ^= static_cast<unsigned char>(1 << bit);
      BOOST_TEST(checksum64(v.data(), v.size()) != sum);
      v[i] ^= static_cast<unsigned char>(1 << bit);
    }
  }
  BOOST_TEST(checksum64(v.data(), v.size()) == sum);
}

BOOST_AUTO_TEST_CASE(length_is_part_of_the_sum) {
  std::vector<unsigned char> zeros(128, 0);
  BOOST_TEST(checksum64(zeros.data(), 64) != checksum64(zeros.data(), 128));
  BOOST_TEST(checksum64(zeros.data(), 0) != checksum64(zeros.data(), 1));
}

BOOST_AUTO_TEST_CASE(swapped_blocks_change_the_sum) {
  auto v = bytes(256);
  auto sum = checksum64(v.data(), v.size());
  std::swap_ranges(v.begin(), v.begin() + 64, v.begin() + 64);
  BOOST_TEST(checksum64(v.data(), v.size()) != sum);
}

BOOST_AUTO_TEST_CASE(a_copy_that_checksums_copies_and_sums_the_same) {
  for (size_t n : {0u, 1u, 63u, 64u, 65u, 1000u, 602112u}) {
    auto v = bytes(n);
    for (auto path : {simd_path::portable, simd_path::avx2, simd_path::avx512})
      if (supports(path)) {
        std::vector<unsigned char> out(n + 1, 0xAB);
        auto sum = copy_checksum64(out.data(), v.data(), n, path);
        BOOST_TEST(sum == checksum64(v.data(), n), n);
        BOOST_TEST(std::equal(v.begin(), v.end(), out.begin()), n);
        BOOST_TEST(out[n] == 0xAB); // nothing past the end
      }
    std::vector<unsigned char> out(n);
    BOOST_TEST(copy_checksum64(out.data(), v.data(), n)
               == checksum64(v.data(), n));
  }
}

BOOST_AUTO_TEST_SUITE_END()
