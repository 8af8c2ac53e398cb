#include "stoker/checksum.hpp"

#include <cstring>

#include "stoker/counter_rng.hpp"

namespace stoker {

namespace {

constexpr uint64_t prime1 = 0x9E3779B185EBCA87ull;
constexpr uint64_t prime2 = 0xC2B2AE3D27D4EB4Full;

inline uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

inline uint64_t lane_step(uint64_t acc, uint64_t word) {
  return rotl(acc + word * prime2, 31) * prime1;
}

} // namespace

uint64_t checksum64(const void* data, size_t n) noexcept {
  auto bytes = static_cast<const unsigned char*>(data);
  uint64_t acc[4] = {prime1 + prime2, prime2, 0, 0 - prime1};
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    uint64_t w[4];
    std::memcpy(w, bytes + i, sizeof w);
    for (int l = 0; l < 4; ++l)
      acc[l] = lane_step(acc[l], w[l]);
  }
  uint64_t h = rotl(acc[0], 1) + rotl(acc[1], 7) + rotl(acc[2], 12)
               + rotl(acc[3], 18) + n;
  for (; i < n; ++i)
    h = lane_step(h, bytes[i]);
  return mix64(h);
}

} // namespace stoker
