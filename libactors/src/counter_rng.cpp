#include "stoker/counter_rng.hpp"

#include <cmath>
#include <cstring>

namespace stoker {

namespace {

constexpr uint32_t philox_m0 = 0xD2511F53u;
constexpr uint32_t philox_m1 = 0xCD9E8D57u;
constexpr uint32_t philox_w0 = 0x9E3779B9u;
constexpr uint32_t philox_w1 = 0xBB67AE85u;
constexpr int philox_rounds = 10;

// Blocks per inner batch of the vector path: 16 blocks = 64 floats, enough
// lanes for AVX-512 and small enough to stay in registers/L1.
constexpr size_t lanes = 16;

inline uint32_t hi32(uint64_t x) { return static_cast<uint32_t>(x >> 32); }
inline uint32_t lo32(uint64_t x) { return static_cast<uint32_t>(x); }

// One Philox4x32-10 block, all rounds unrolled: called inside loops over
// independent counters, which the compiler then vectorizes across counters.
inline void philox_block(uint32_t& c0, uint32_t& c1, uint32_t& c2,
                         uint32_t& c3, uint32_t k0, uint32_t k1) {
#pragma GCC unroll 10
  for (int r = 0; r < philox_rounds; ++r) {
    // High and low halves written separately: the compiler recognizes the
    // high-part multiply and vectorizes it.
    uint32_t hi0 = hi32(static_cast<uint64_t>(philox_m0) * c0);
    uint32_t hi1 = hi32(static_cast<uint64_t>(philox_m1) * c2);
    uint32_t lo0 = philox_m0 * c0;
    uint32_t lo1 = philox_m1 * c2;
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += philox_w0;
    k1 += philox_w1;
  }
}

inline float bits_to_float(uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

inline uint32_t float_to_bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

// Natural log for x in (0, 1], Cephes logf polynomial (rel. error ~1e-7);
// only +, -, *, and bit moves, so every vector width gives the same bits.
inline float log_unit(float x) {
  uint32_t bits = float_to_bits(x);
  int32_t e = static_cast<int32_t>(bits >> 23) - 126;
  float m = bits_to_float((bits & 0x007FFFFFu) | 0x3F000000u); // [0.5, 1)
  // Move m into [sqrt(0.5), sqrt(2)) around 1.
  float small = m < 0.70710678f ? 1.0f : 0.0f;
  float ef = static_cast<float>(e) - small;
  float t = m + small * m - 1.0f;
  float z = t * t;
  float p = 7.0376836292e-2f;
  p = p * t - 1.1514610310e-1f;
  p = p * t + 1.1676998740e-1f;
  p = p * t - 1.2420140846e-1f;
  p = p * t + 1.4249322787e-1f;
  p = p * t - 1.6668057665e-1f;
  p = p * t + 2.0000714765e-1f;
  p = p * t - 2.4999993993e-1f;
  p = p * t + 3.3333331174e-1f;
  float y = t * z * p;
  y = y + ef * -2.12194440e-4f;
  y = y - 0.5f * z;
  return t + y + ef * 0.693359375f;
}

// Two standard normals from two 32-bit words (Box-Muller). The angle's
// quadrant comes from the top bits of `wa`, so sin/cos only need the
// polynomial on [-pi/4, pi/4] and a branch-free swap.
inline void box_muller(uint32_t wr, uint32_t wa, float& z0, float& z1) {
  constexpr float two_pow_m24 = 5.9604644775390625e-8f;
  // Conversions go through int32 (the values fit): unsigned-to-float has no
  // vector instruction before AVX-512.
  float u = static_cast<float>(static_cast<int32_t>((wr >> 8) + 1u))
            * two_pow_m24; // (0, 1]
  float r = std::sqrt(-2.0f * log_unit(u));
  uint32_t q = wa >> 30;
  float f = static_cast<float>(static_cast<int32_t>((wa >> 6) & 0xFFFFFFu))
              * two_pow_m24
            - 0.5f;
  float x = f * 1.57079632679489662f; // [-pi/4, pi/4)
  float x2 = x * x;
  float s = ((-1.9515295891e-4f * x2 + 8.3321608736e-3f) * x2
             - 1.6666654611e-1f) * x2 * x + x;
  float c = ((2.443315711809948e-5f * x2 - 1.388731625493765e-3f) * x2
             + 4.166664568298827e-2f) * x2 * x2 - 0.5f * x2 + 1.0f;
  // angle = q * pi/2 + x: rotate (c, s) by q quarter turns.
  float swap = static_cast<float>(static_cast<int32_t>(q & 1u));
  float sin_sign = 1.0f - 2.0f * static_cast<float>(static_cast<int32_t>(q >> 1));
  float cos_sign
    = 1.0f - 2.0f * static_cast<float>(static_cast<int32_t>((q ^ (q >> 1)) & 1u));
  float sin_a = sin_sign * (swap * c + (1.0f - swap) * s);
  float cos_a = cos_sign * (swap * s + (1.0f - swap) * c);
  z0 = r * cos_a;
  z1 = r * sin_a;
}

// One chunk of 4 * lanes floats starting at block `first`. Inlined into one
// wrapper per instruction set below, each vectorized for its own width.
__attribute__((always_inline)) inline void
normal_chunk(uint32_t first, uint32_t k0, uint32_t k1, uint32_t stage,
             uint32_t c2, uint32_t c3, float* out) {
  float z[4][lanes];
  for (size_t l = 0; l < lanes; ++l) {
    uint32_t a = first + static_cast<uint32_t>(l), b = stage, c = c2, d = c3;
    philox_block(a, b, c, d, k0, k1);
    box_muller(a, b, z[0][l], z[1][l]);
    box_muller(c, d, z[2][l], z[3][l]);
  }
  for (size_t l = 0; l < lanes; ++l)
    for (size_t w = 0; w < 4; ++w)
      out[4 * l + w] = z[w][l];
}

using chunk_fn = void (*)(uint32_t, uint32_t, uint32_t, uint32_t, uint32_t,
                          uint32_t, float*);

__attribute__((target("avx512f,avx512vl,avx512dq,avx512bw"))) void
normal_chunk_avx512(uint32_t first, uint32_t k0, uint32_t k1, uint32_t stage,
                    uint32_t c2, uint32_t c3, float* out) {
  normal_chunk(first, k0, k1, stage, c2, c3, out);
}

__attribute__((target("avx2"))) void
normal_chunk_avx2(uint32_t first, uint32_t k0, uint32_t k1, uint32_t stage,
                  uint32_t c2, uint32_t c3, float* out) {
  normal_chunk(first, k0, k1, stage, c2, c3, out);
}

// Baseline x86-64 (SSE2) or whatever the target's default is.
void normal_chunk_portable(uint32_t first, uint32_t k0, uint32_t k1,
                           uint32_t stage, uint32_t c2, uint32_t c3,
                           float* out) {
  normal_chunk(first, k0, k1, stage, c2, c3, out);
}

chunk_fn chunk_for(simd_path path) {
  switch (path) {
    case simd_path::avx512:
      return normal_chunk_avx512;
    case simd_path::avx2:
      return normal_chunk_avx2;
    case simd_path::portable:
      break;
  }
  return normal_chunk_portable;
}

} // namespace

counter_rng::counter_rng(const stream_key& key) noexcept {
  uint64_t k = mix64(key.seed ^ mix64(key.epoch + 0x632BE59BD9B4E019ull));
  key_ = {lo32(k), hi32(k)};
  counter_hi_ = {lo32(key.sample), hi32(key.sample)};
  stage_ = static_cast<uint32_t>(key.stage);
}

std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> counter,
                                      std::array<uint32_t, 2> key) noexcept {
  philox_block(counter[0], counter[1], counter[2], counter[3], key[0], key[1]);
  return counter;
}

counter_rng::block_type counter_rng::block(uint32_t index) const noexcept {
  return philox4x32_10({index, stage_, counter_hi_[0], counter_hi_[1]}, key_);
}

float counter_rng::uniform(uint32_t index) const noexcept {
  return static_cast<float>(block(index)[0] >> 8) * 5.9604644775390625e-8f;
}

bool supports(simd_path path) noexcept {
  switch (path) {
    case simd_path::avx512:
      return __builtin_cpu_supports("avx512f")
             && __builtin_cpu_supports("avx512vl")
             && __builtin_cpu_supports("avx512dq")
             && __builtin_cpu_supports("avx512bw");
    case simd_path::avx2:
      return __builtin_cpu_supports("avx2");
    case simd_path::portable:
      return true;
  }
  return false;
}

simd_path best_simd_path() noexcept {
  for (auto path : {simd_path::avx512, simd_path::avx2})
    if (supports(path))
      return path;
  return simd_path::portable;
}

void counter_rng::fill_standard_normal(float* out, size_t n) const noexcept {
  // Asked once per process: the answer cannot change while it runs.
  static const simd_path best = best_simd_path();
  fill_standard_normal(out, n, best);
}

void counter_rng::fill_standard_normal(float* out, size_t n,
                                       simd_path path) const noexcept {
  auto chunk_of = chunk_for(path);
  constexpr size_t chunk = 4 * lanes;
  uint32_t first = 0;
  size_t done = 0;
  for (; done + chunk <= n; done += chunk, first += lanes)
    chunk_of(first, key_[0], key_[1], stage_, counter_hi_[0], counter_hi_[1],
             out + done);
  if (done < n) {
    float tail[chunk];
    chunk_of(first, key_[0], key_[1], stage_, counter_hi_[0], counter_hi_[1],
             tail);
    std::memcpy(out + done, tail, (n - done) * sizeof(float));
  }
}

} // namespace stoker
