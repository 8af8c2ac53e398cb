#include "stoker/counter_rng.hpp"

#include "core/cpu_features.hpp"
#include "core/philox.hpp"

#include <cstring>

namespace stoker {

namespace {

using detail::philox_stream;
using chunk_fn = void (*)(const philox_stream&, uint32_t, float*) noexcept;

inline uint32_t hi32(uint64_t x) { return static_cast<uint32_t>(x >> 32); }
inline uint32_t lo32(uint64_t x) { return static_cast<uint32_t>(x); }

chunk_fn chunk_for(simd_path path) {
  switch (path) {
    case simd_path::avx512:
      return detail::normal_chunk_avx512;
    case simd_path::avx2:
      return detail::normal_chunk_avx2;
    case simd_path::portable:
      break;
  }
  return detail::normal_chunk_portable;
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
  detail::philox_block(counter[0], counter[1], counter[2], counter[3], key[0],
                       key[1]);
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
      return this_cpu().avx512_skx;
    case simd_path::avx2:
      return this_cpu().avx2;
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
  fill_range(out, 0, n, path);
}

void counter_rng::fill_standard_normal_at(float* out, size_t first,
                                          size_t n) const noexcept {
  static const simd_path best = best_simd_path();
  fill_range(out, first, n, best);
}

void counter_rng::fill_range(float* out, size_t from, size_t n,
                             simd_path path) const noexcept {
  auto chunk_of = chunk_for(path);
  const philox_stream s{key_[0], key_[1], stage_, counter_hi_[0],
                        counter_hi_[1]};
  constexpr size_t chunk = 4 * detail::normal_lanes;
  static_assert(chunk == normal_chunk_floats, "chunks as the header says");
  auto first = static_cast<uint32_t>(from / chunk * detail::normal_lanes);
  size_t done = 0;
  if (path == simd_path::avx512)
    for (; done + 4 * chunk <= n;
         done += 4 * chunk, first += 4 * detail::normal_lanes)
      detail::normal_chunks4_avx512(s, first, out + done);
  for (; done + chunk <= n; done += chunk, first += detail::normal_lanes)
    chunk_of(s, first, out + done);
  if (done < n) {
    float tail[chunk];
    chunk_of(s, first, tail);
    std::memcpy(out + done, tail, (n - done) * sizeof(float));
  }
}

} // namespace stoker
