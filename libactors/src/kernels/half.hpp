#pragma once

#include <cstddef>
#include <cstdint>

namespace stoker {

/// float32 -> IEEE 754 binary16, round to nearest even; overflow gives
/// infinity, NaN stays NaN (quiet), tiny values become subnormals or zero.
/// The same bits as the F16C instruction (tested against it).
uint16_t float_to_half(float x) noexcept;

/// IEEE 754 binary16 -> float32 (exact).
float half_to_float(uint16_t h) noexcept;

/// float32 -> bfloat16 (the top half of a float32), round to nearest even;
/// NaN stays NaN (quiet).
uint16_t float_to_bfloat16(float x) noexcept;

/// bfloat16 -> float32 (exact).
float bfloat16_to_float(uint16_t b) noexcept;

/// Array forms, any thread; `out` must not overlap `in`.
void floats_to_halves(const float* in, uint16_t* out, size_t n) noexcept;
void halves_to_floats(const uint16_t* in, float* out, size_t n) noexcept;
void floats_to_bfloat16s(const float* in, uint16_t* out, size_t n) noexcept;
void bfloat16s_to_floats(const uint16_t* in, float* out, size_t n) noexcept;

} // namespace stoker
