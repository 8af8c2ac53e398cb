#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstring>
#include <vector>

#include "stoker/counter_rng.hpp"

using namespace stoker;

BOOST_AUTO_TEST_SUITE(counter_rng)

// Known-answer vectors from Random123's kat_vectors for philox4x32_10.
BOOST_AUTO_TEST_CASE(philox_matches_random123_known_answers) {
  using block = std::array<uint32_t, 4>;
  BOOST_TEST((philox4x32_10({0, 0, 0, 0}, {0, 0})
              == block{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  BOOST_TEST((philox4x32_10({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
                            {0xffffffff, 0xffffffff})
              == block{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  BOOST_TEST((philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
                            {0xa4093822, 0x299f31d0})
              == block{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

BOOST_AUTO_TEST_CASE(same_key_gives_same_stream) {
  stream_key key{42, 3, 1234, rng_stage::sample_pixels};
  std::vector<float> a(1000), b(1000);
  stoker::counter_rng{key}.fill_standard_normal(a.data(), a.size());
  stoker::counter_rng{key}.fill_standard_normal(b.data(), b.size());
  BOOST_TEST(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

BOOST_AUTO_TEST_CASE(every_key_field_changes_the_stream) {
  stream_key base{42, 3, 1234, rng_stage::sample_pixels};
  auto first_word = [](stream_key k) { return stoker::counter_rng{k}.block(0)[0]; };
  auto w = first_word(base);
  auto k = base;
  k.seed = 43;
  BOOST_TEST(first_word(k) != w);
  k = base;
  k.epoch = 4;
  BOOST_TEST(first_word(k) != w);
  k = base;
  k.sample = 1235;
  BOOST_TEST(first_word(k) != w);
  k = base;
  k.stage = rng_stage::blur_sigma;
  BOOST_TEST(first_word(k) != w);
}

BOOST_AUTO_TEST_CASE(a_shorter_fill_is_a_prefix_of_a_longer_one) {
  stoker::counter_rng rng{{7, 0, 9, rng_stage::sample_pixels}};
  std::vector<float> longer(1100);
  rng.fill_standard_normal(longer.data(), longer.size());
  // Across the widest path's 4-chunk groups (256 floats) and the tails.
  for (size_t n : {1u, 5u, 63u, 64u, 65u, 129u, 255u, 256u, 257u, 511u,
                   1000u}) {
    std::vector<float> shorter(n);
    rng.fill_standard_normal(shorter.data(), n);
    BOOST_TEST(std::memcmp(shorter.data(), longer.data(), n * sizeof(float))
               == 0);
  }
}

BOOST_AUTO_TEST_CASE(every_supported_simd_path_gives_identical_bits) {
  stoker::counter_rng rng{{11, 2, 77, rng_stage::sample_pixels}};
  constexpr size_t n = 224 * 224 * 3 + 5;
  std::vector<float> reference(n);
  rng.fill_standard_normal(reference.data(), n, simd_path::portable);
  for (auto path : {simd_path::avx2, simd_path::avx512}) {
    if (!supports(path)) {
      BOOST_TEST_MESSAGE("simd path not supported here, skipped");
      continue;
    }
    std::vector<float> out(n);
    rng.fill_standard_normal(out.data(), n, path);
    BOOST_TEST(std::memcmp(out.data(), reference.data(), n * sizeof(float))
               == 0);
  }
  std::vector<float> best(n);
  rng.fill_standard_normal(best.data(), n);
  BOOST_TEST(std::memcmp(best.data(), reference.data(), n * sizeof(float))
             == 0);
}

BOOST_AUTO_TEST_CASE(normals_have_zero_mean_and_unit_variance) {
  constexpr size_t n = 1 << 20;
  std::vector<float> z(n);
  stoker::counter_rng{{1, 0, 0, rng_stage::sample_pixels}}.fill_standard_normal(z.data(),
                                                                        n);
  double sum = 0, sum_sq = 0, beyond_2 = 0, max_abs = 0;
  for (float x : z) {
    sum += x;
    sum_sq += double{x} * x;
    beyond_2 += std::abs(x) > 2.0f ? 1 : 0;
    max_abs = std::max(max_abs, double{std::abs(x)});
  }
  double mean = sum / n;
  double var = sum_sq / n - mean * mean;
  // Standard errors: mean 1/sqrt(n) ~ 0.001, variance ~0.0014.
  BOOST_TEST(std::abs(mean) < 0.005);
  BOOST_TEST(std::abs(var - 1.0) < 0.01);
  // P(|Z| > 2) = 0.0455.
  BOOST_TEST(std::abs(beyond_2 / n - 0.0455) < 0.002);
  BOOST_TEST(max_abs < 5.78);
}

BOOST_AUTO_TEST_CASE(uniform_stays_in_unit_interval_and_is_spread) {
  stoker::counter_rng rng{{5, 1, 2, rng_stage::blur_sigma}};
  double sum = 0;
  for (uint32_t i = 0; i < 10000; ++i) {
    float u = rng.uniform(i);
    BOOST_TEST((u >= 0.0f && u < 1.0f));
    sum += u;
  }
  BOOST_TEST(std::abs(sum / 10000 - 0.5) < 0.02);
}

BOOST_AUTO_TEST_SUITE_END()
