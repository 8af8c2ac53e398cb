#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/half.hpp"

#if defined(__x86_64__)
#  include <immintrin.h>
#endif

using namespace stoker;

namespace {

float from_bits(uint32_t b) {
  float x;
  std::memcpy(&x, &b, sizeof x);
  return x;
}

uint32_t bits_of(float x) {
  uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

#if defined(__x86_64__)
__attribute__((target("f16c"))) uint16_t f16c_half(float x) {
  return static_cast<uint16_t>(_mm_extract_epi16(
    _mm_cvtps_ph(_mm_set_ss(x), _MM_FROUND_TO_NEAREST_INT), 0));
}

__attribute__((target("f16c"))) float f16c_float(uint16_t h) {
  return _mm_cvtss_f32(_mm_cvtph_ps(_mm_set1_epi16(static_cast<short>(h))));
}
#endif

} // namespace

BOOST_AUTO_TEST_SUITE(half)

BOOST_AUTO_TEST_CASE(known_values_convert_exactly) {
  BOOST_TEST(float_to_half(1.0f) == 0x3C00u);
  BOOST_TEST(float_to_half(-2.0f) == 0xC000u);
  BOOST_TEST(float_to_half(65504.0f) == 0x7BFFu); // largest half
  BOOST_TEST(float_to_half(65520.0f) == 0x7C00u); // rounds to infinity
  BOOST_TEST(float_to_half(5.9604644775390625e-8f) == 0x0001u); // 2^-24
  BOOST_TEST(float_to_half(2.9802322387695312e-8f) == 0x0000u); // tie to 0
  BOOST_TEST(float_to_half(1.0f + 1.0f / 2048) == 0x3C00u); // tie to even
  BOOST_TEST(float_to_half(1.0f + 3.0f / 2048) == 0x3C02u); // tie to even
  BOOST_TEST(half_to_float(0x3555u) == 0.333251953125f);
  BOOST_TEST(std::isinf(half_to_float(0xFC00u)));
  BOOST_TEST(std::isnan(half_to_float(float_to_half(std::nanf("")))));
  BOOST_TEST(float_to_bfloat16(1.0f) == 0x3F80u);
  BOOST_TEST(bfloat16_to_float(0x4049u) == 3.140625f);
  BOOST_TEST(float_to_bfloat16(from_bits(0x3F808000u)) == 0x3F80u); // tie
  BOOST_TEST(float_to_bfloat16(from_bits(0x3F818000u)) == 0x3F82u); // tie
  BOOST_TEST(std::isnan(bfloat16_to_float(float_to_bfloat16(std::nanf("")))));
}

BOOST_AUTO_TEST_CASE(every_half_decodes_as_the_f16c_instruction_does) {
#if defined(__x86_64__)
  if (!__builtin_cpu_supports("f16c")) {
    BOOST_TEST_MESSAGE("no F16C on this CPU: compared against nothing");
    return;
  }
  for (uint32_t h = 0; h < 65536; ++h)
    BOOST_REQUIRE(bits_of(half_to_float(static_cast<uint16_t>(h)))
                  == bits_of(f16c_float(static_cast<uint16_t>(h))));
#endif
}

BOOST_AUTO_TEST_CASE(floats_round_to_half_as_the_f16c_instruction_does) {
#if defined(__x86_64__)
  if (!__builtin_cpu_supports("f16c")) {
    BOOST_TEST_MESSAGE("no F16C on this CPU: compared against nothing");
    return;
  }
  // Every 97th bit pattern: 44 million floats over every exponent.
  size_t mismatches = 0;
  for (uint64_t b = 0; b <= 0xFFFFFFFFull; b += 97) {
    float x = from_bits(static_cast<uint32_t>(b));
    uint16_t mine = float_to_half(x), hw = f16c_half(x);
    if (std::isnan(x))
      mismatches += (mine & 0x7C00u) == 0x7C00u && (mine & 0x3FFu) ? 0 : 1;
    else
      mismatches += mine == hw ? 0 : 1;
  }
  BOOST_TEST(mismatches == 0u);
#endif
}

BOOST_AUTO_TEST_CASE(bfloat16_keeps_eight_significant_bits) {
  for (float x : {0.1f, -3.7f, 1e-30f, 123456.0f}) {
    float back = bfloat16_to_float(float_to_bfloat16(x));
    BOOST_TEST(std::abs(back - x) <= std::abs(x) * (1.0f / 256));
  }
}

BOOST_AUTO_TEST_SUITE_END()
