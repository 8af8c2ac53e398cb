#pragma once

// What this CPU can run: the one place Stoker asks (CPUID, through GCC's
// CPU model, which also checks that the OS saves the vector state). Every
// ISA choice stands on it: counter_rng's and the checksum's simd_path, the
// blur chain's cpu_isa (pipeline.blur-isa), the resample's byte permutes.
// The convention: a kernel with ISA twins takes the path as an argument
// (the tests run every twin this CPU supports and compare their bits); its
// caller chooses the widest the CPU supports, best_simd_path() or
// best_cpu_isa(), from these features.

namespace stoker {

/// The vector extensions of this CPU that Stoker's twins use.
struct cpu_features {
  bool avx2 = false;
  bool fma = false;
  bool avx512f = false;
  /// AVX-512 F, VL, DQ and BW (Skylake-server and later): the normal
  /// generator's and the checksum's avx512 path.
  bool avx512_skx = false;
  /// AVX-512 F, BW and VBMI (Ice Lake, Zen 4 and later): byte permutes,
  /// the resample's table lookups.
  bool avx512_vbmi = false;
};

/// This CPU's features, read once per process (they cannot change while
/// it runs). Safe from any thread.
const cpu_features& this_cpu() noexcept;

} // namespace stoker
