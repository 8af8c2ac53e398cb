#pragma once

#include <cstdint>
#include <cstring>

namespace stoker::detail {

/// The IEEE 754 bits of `x` (std::bit_cast before C++20).
inline uint32_t bits_of(float x) noexcept {
  uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

/// The float with IEEE 754 bits `b`.
inline float float_of(uint32_t b) noexcept {
  float x;
  std::memcpy(&x, &b, sizeof x);
  return x;
}

} // namespace stoker::detail
