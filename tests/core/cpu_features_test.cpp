#include <boost/test/unit_test.hpp>

#include "stoker/counter_rng.hpp"
#include "core/cpu_features.hpp"
#include "kernels/blur.hpp"
#include "kernels/region_resample.hpp"

// The one reading of this CPU's features, and every ISA choice made from
// it: a path is chosen only where its features are there.

using namespace stoker;

BOOST_AUTO_TEST_SUITE(cpu_features)

BOOST_AUTO_TEST_CASE(the_feature_sets_imply_their_parts) {
  auto& f = this_cpu();
  BOOST_TEST(&f == &this_cpu()); // read once
  if (f.avx512_skx || f.avx512_vbmi)
    BOOST_TEST(f.avx512f);
#if defined(__x86_64__)
  BOOST_TEST(f.avx2 == static_cast<bool>(__builtin_cpu_supports("avx2")));
  BOOST_TEST(f.avx512_vbmi
             == (__builtin_cpu_supports("avx512f")
                 && __builtin_cpu_supports("avx512bw")
                 && __builtin_cpu_supports("avx512vbmi")));
#endif
  BOOST_TEST_MESSAGE("avx2 " << f.avx2 << ", fma " << f.fma << ", avx512f "
                             << f.avx512f << ", skx " << f.avx512_skx
                             << ", vbmi " << f.avx512_vbmi);
}

BOOST_AUTO_TEST_CASE(every_isa_choice_follows_the_features) {
  auto& f = this_cpu();
  BOOST_TEST(supports(simd_path::portable));
  BOOST_TEST(supports(simd_path::avx2) == f.avx2);
  BOOST_TEST(supports(simd_path::avx512) == f.avx512_skx);
  BOOST_TEST(cpu_supports(cpu_isa::scalar));
  BOOST_TEST(cpu_supports(cpu_isa::avx2) == (f.avx2 && f.fma));
  BOOST_TEST(cpu_supports(cpu_isa::avx512) == f.avx512f);
  BOOST_TEST(supports_byte_permutes() == f.avx512_vbmi);
  // The widest supported is the one chosen.
  BOOST_TEST(supports(best_simd_path()));
  if (f.avx512_skx)
    BOOST_TEST((best_simd_path() == simd_path::avx512));
  BOOST_TEST(cpu_supports(best_cpu_isa()));
}

BOOST_AUTO_TEST_SUITE_END()
