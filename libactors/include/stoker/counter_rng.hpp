#pragma once

// stoker layer: core

#include <array>
#include <cstddef>
#include <cstdint>

namespace stoker {

/// Which random stream a draw belongs to. Every stage that draws random
/// numbers has its own, so adding a stage never changes what another draws.
enum class rng_stage : uint32_t {
  sample_pixels = 1, ///< pixels of a synthetic image
  blur_sigma = 2,    ///< sigma of each Gaussian blur call
  shuffle = 3,       ///< per-epoch permutation of sample ids
  /// Entry k of pipeline.transforms draws from stage `transforms + k`.
  transforms = 0x100,
};

/// Names one random stream: a pure function of (seed, epoch, sample id,
/// stage), so a sample is bit-identical whichever worker makes it.
struct stream_key {
  uint64_t seed = 0;
  uint64_t epoch = 0;
  uint64_t sample = 0;
  rng_stage stage = rng_stage::sample_pixels;
};

/// Instruction sets with their own code path (normals, checksums). Every
/// path gives the same bits: they use integer operations and correctly
/// rounded IEEE float operations, in the same order, without fused
/// multiply-add.
enum class simd_path { avx512, avx2, portable };

/// True if this CPU can run `path`.
bool supports(simd_path path) noexcept;

/// The widest path this CPU supports.
simd_path best_simd_path() noexcept;

/// One Philox4x32-10 block: the bijection of `counter` under `key`.
std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> counter,
                                      std::array<uint32_t, 2> key) noexcept;

/// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
/// 3", SC'11). Counter-based: block `i` of a stream is computed directly,
/// without drawing blocks 0..i-1, which is what makes draws independent of
/// which worker runs them and in what order. Plain value type, any thread.
class counter_rng {
public:
  using block_type = std::array<uint32_t, 4>;

  explicit counter_rng(const stream_key& key) noexcept;

  /// The four 32-bit words of block `index` of this stream.
  block_type block(uint32_t index) const noexcept;

  /// A float uniform in [0, 1) with 24 random bits, from word 0 of block
  /// `index`.
  float uniform(uint32_t index) const noexcept;

  /// Fills `out[0..n)` with standard normal floats (Box-Muller over blocks
  /// 0, 1, ...) through the best path for this CPU. The result is
  /// bit-identical on every CPU (see simd_path).
  /// |z| is bounded by sqrt(-2 ln 2^-24) ~ 5.77 (24-bit uniforms).
  void fill_standard_normal(float* out, size_t n) const noexcept;

  /// The same through a chosen path (tests compare the paths); requires
  /// supports(path).
  void fill_standard_normal(float* out, size_t n,
                            simd_path path) const noexcept;

  /// Values `first .. first + n` of the same sequence into `out[0..n)`:
  /// a stream made piece by piece (into a buffer small enough for L1) is
  /// the same as made whole. `first` must be a multiple of
  /// normal_chunk_floats.
  static constexpr size_t normal_chunk_floats = 64;
  void fill_standard_normal_at(float* out, size_t first,
                               size_t n) const noexcept;

private:
  void fill_range(float* out, size_t first, size_t n,
                  simd_path path) const noexcept;

  // Counter = (block index, stage, sample id low, sample id high).
  std::array<uint32_t, 2> key_;        // from (seed, epoch)
  std::array<uint32_t, 2> counter_hi_; // counter words 2-3: the sample id
  uint32_t stage_;                     // counter word 1
};

/// SplitMix64 finalizer: a bijective 64-bit mixer, used for keys and hashing.
constexpr uint64_t mix64(uint64_t x) noexcept {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

} // namespace stoker
