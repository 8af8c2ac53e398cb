#include "core/cpu_features.hpp"

namespace stoker {

namespace {

cpu_features read_features() noexcept {
  cpu_features f;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  f.avx2 = __builtin_cpu_supports("avx2");
  f.fma = __builtin_cpu_supports("fma");
  f.avx512f = __builtin_cpu_supports("avx512f");
  f.avx512_skx = f.avx512f && __builtin_cpu_supports("avx512vl")
                 && __builtin_cpu_supports("avx512dq")
                 && __builtin_cpu_supports("avx512bw");
  f.avx512_vbmi = f.avx512f && __builtin_cpu_supports("avx512bw")
                  && __builtin_cpu_supports("avx512vbmi");
#endif
  return f;
}

} // namespace

const cpu_features& this_cpu() noexcept {
  static const cpu_features features = read_features();
  return features;
}

} // namespace stoker
