#include "kernels/half.hpp"

#include "core/float_bits.hpp"

namespace stoker {

using detail::bits_of;
using detail::float_of;

uint16_t float_to_half(float x) noexcept {
  uint32_t f = bits_of(x);
  uint32_t sign = (f >> 16) & 0x8000u;
  uint32_t abs = f & 0x7FFFFFFFu;
  if (abs >= 0x7F800000u) // inf or NaN
    return static_cast<uint16_t>(
      sign | 0x7C00u | (abs > 0x7F800000u ? 0x0200u | ((abs >> 13) & 0x3FFu) : 0u));
  if (abs >= 0x477FF000u) // rounds to >= 65520: overflow to infinity
    return static_cast<uint16_t>(sign | 0x7C00u);
  if (abs < 0x38800000u) { // below the smallest normal half (2^-14)
    if (abs < 0x33000000u) // below half the smallest subnormal: +-0
      return static_cast<uint16_t>(sign);
    // Subnormal: shift the full mantissa into place, round to nearest even.
    uint32_t exp = abs >> 23;
    uint32_t mant = (abs & 0x7FFFFFu) | 0x800000u;
    uint32_t shift = 126 - exp; // 14..24
    uint32_t half = mant >> shift;
    uint32_t rest = mant & ((1u << shift) - 1);
    uint32_t midpoint = 1u << (shift - 1);
    if (rest > midpoint || (rest == midpoint && (half & 1u)))
      ++half;
    return static_cast<uint16_t>(sign | half);
  }
  // Normal: rebias the exponent, round the 13 dropped bits to nearest even.
  uint32_t half = (abs - 0x38000000u) >> 13;
  uint32_t rest = abs & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u)))
    ++half; // may carry into the exponent, which is right
  return static_cast<uint16_t>(sign | half);
}

float half_to_float(uint16_t h) noexcept {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1Fu;
  uint32_t mant = h & 0x3FFu;
  if (exp == 0x1Fu) // inf, or NaN (made quiet, as the hardware does)
    return float_of(sign | 0x7F800000u | (mant << 13)
                    | (mant != 0 ? 0x400000u : 0u));
  if (exp != 0)
    return float_of(sign | ((exp + 112) << 23) | (mant << 13));
  if (mant == 0)
    return float_of(sign);
  // Subnormal half: value = mant * 2^-24, exactly representable.
  float value = static_cast<float>(mant) * 5.9604644775390625e-8f;
  return sign ? -value : value;
}

uint16_t float_to_bfloat16(float x) noexcept {
  uint32_t f = bits_of(x);
  if ((f & 0x7FFFFFFFu) > 0x7F800000u) // NaN: keep it a (quiet) NaN
    return static_cast<uint16_t>((f >> 16) | 0x0040u);
  uint32_t rounding = 0x7FFFu + ((f >> 16) & 1u);
  return static_cast<uint16_t>((f + rounding) >> 16);
}

float bfloat16_to_float(uint16_t b) noexcept {
  return float_of(static_cast<uint32_t>(b) << 16);
}

void floats_to_halves(const float* in, uint16_t* out, size_t n) noexcept {
  for (size_t i = 0; i < n; ++i)
    out[i] = float_to_half(in[i]);
}

void halves_to_floats(const uint16_t* in, float* out, size_t n) noexcept {
  for (size_t i = 0; i < n; ++i)
    out[i] = half_to_float(in[i]);
}

void floats_to_bfloat16s(const float* in, uint16_t* out, size_t n) noexcept {
  for (size_t i = 0; i < n; ++i)
    out[i] = float_to_bfloat16(in[i]);
}

void bfloat16s_to_floats(const uint16_t* in, float* out, size_t n) noexcept {
  for (size_t i = 0; i < n; ++i)
    out[i] = bfloat16_to_float(in[i]);
}

} // namespace stoker
