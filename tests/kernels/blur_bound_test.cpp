#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <vector>

#include "kernels/blur.hpp"
#include "kernels/blur_chain.hpp"

// The bound tools/bench/bench-blur prints ("chain alone / FMA bound"): the
// operations it assumes are the ones the chain issues, counted by running
// the chain's own body (blur_chain_impl.hpp) over a vector type that
// counts, and the bound is the slowest unit for that mix. It once counted
// the textbook 2K FLOP a tap window on the FMA units alone, and the chain
// beat it (1.12-1.18 on an AMD Zen 5).

namespace stoker::detail::counting {

// 8 lanes of plain floats, each operation counted; the same arithmetic as
// the scalar path (so the two must agree bit for bit).
struct vec {
  struct type {
    float v[8];
  };
  static constexpr int lanes = 8;
  static inline uint64_t muls = 0;
  static inline uint64_t fmas = 0;
  static inline uint64_t adds = 0;
  static type load(const float* p) {
    type t;
    for (int i = 0; i < lanes; ++i)
      t.v[i] = p[i];
    return t;
  }
  static void store(float* p, type t) {
    for (int i = 0; i < lanes; ++i)
      p[i] = t.v[i];
  }
  static type set1(float x) {
    type t;
    for (auto& v : t.v)
      v = x;
    return t;
  }
  static type add(type a, type b) {
    ++adds;
    for (int i = 0; i < lanes; ++i)
      a.v[i] += b.v[i];
    return a;
  }
  static type mul(type a, type b) {
    ++muls;
    for (int i = 0; i < lanes; ++i)
      a.v[i] *= b.v[i];
    return a;
  }
  static type fma(type a, type b, type c) {
    ++fmas;
    for (int i = 0; i < lanes; ++i)
      c.v[i] = __builtin_fmaf(a.v[i], b.v[i], c.v[i]);
    return c;
  }
  static void transpose(type* rows) {
    for (int i = 0; i < lanes; ++i)
      for (int j = i + 1; j < lanes; ++j) {
        float t = rows[i].v[j];
        rows[i].v[j] = rows[j].v[i];
        rows[j].v[i] = t;
      }
  }
};

} // namespace stoker::detail::counting

#define STOKER_BLUR_NS counting
#include "kernels/blur_chain_impl.hpp"
#undef STOKER_BLUR_NS

using namespace stoker;
using namespace stoker::detail;

namespace {

struct counted {
  uint64_t muls = 0, fmas = 0, adds = 0;
  std::vector<float> plane;
};

// `calls` blurs of kernel_size taps over an h x w plane, through the
// counting vector type.
counted run_counted(uint32_t h, uint32_t w, uint32_t calls,
                    uint32_t kernel_size) {
  counted out;
  out.plane.resize(size_t{h} * w);
  for (size_t i = 0; i < out.plane.size(); ++i)
    out.plane[i] = static_cast<float>((i * 37) % 251) / 251.0f;
  std::vector<float> taps;
  for (uint32_t c = 0; c < calls; ++c) {
    auto k = gaussian_kernel(1.0f + 0.5f * static_cast<float>(c),
                             kernel_size);
    taps.insert(taps.end(), k.begin(), k.end());
  }
  std::vector<float> scratch(
    blur_chain_scratch(h, w, (kernel_size - 1) / 2));
  counting::vec::muls = counting::vec::fmas = counting::vec::adds = 0;
  counting::run_chain(out.plane.data(), h, w, taps.data(), calls,
                      (kernel_size - 1) / 2, scratch.data());
  out.muls = counting::vec::muls;
  out.fmas = counting::vec::fmas;
  out.adds = counting::vec::adds;
  // The scalar path over the same input: the counted run is the chain.
  std::vector<float> expected(out.plane.size());
  for (size_t i = 0; i < expected.size(); ++i)
    expected[i] = static_cast<float>((i * 37) % 251) / 251.0f;
  blur_chain_scalar(expected.data(), h, w, taps.data(), calls,
                    (kernel_size - 1) / 2, scratch.data());
  BOOST_TEST(out.plane == expected, boost::test_tools::per_element());
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(blur_bound)

BOOST_AUTO_TEST_CASE(the_bound_counts_the_operations_the_chain_issues) {
  // The article's chain (10 blurs of 11 taps) on planes whose sides are
  // and are not multiples of the lanes, and a radius with no unrolled
  // kernel (the general loop).
  struct shape {
    uint32_t h, w, calls, kernel_size;
  };
  for (auto s : {shape{32, 32, 10, 11}, shape{24, 37, 3, 11},
                 shape{19, 16, 2, 5}, shape{40, 40, 1, 19}}) {
    auto c = run_counted(s.h, s.w, s.calls, s.kernel_size);
    auto vectors = chain_output_vectors(s.h, s.w, s.calls, 8);
    auto issue = chain_issue_per_output((s.kernel_size - 1) / 2);
    BOOST_TEST(c.muls + c.fmas == issue.fma_unit * vectors,
               s.h << "x" << s.w << ", " << s.calls << " x "
                   << s.kernel_size << " taps");
    BOOST_TEST(c.adds == issue.adds * vectors,
               s.h << "x" << s.w << ", " << s.calls << " x "
                   << s.kernel_size << " taps");
    // One multiply per output vector: the centre tap.
    BOOST_TEST(c.muls == vectors);
  }
  // Per output and pass of an 11-tap blur: 16 FLOP a lane (a multiply,
  // 5 FMAs of 2, 5 adds), not the textbook 22.
  auto issue = chain_issue_per_output(5);
  BOOST_TEST(issue.fma_unit == 6u);
  BOOST_TEST(issue.adds == 5u);
}

BOOST_AUTO_TEST_CASE(the_bound_is_the_slowest_unit_for_the_chains_mix) {
  // 1e9 output vectors of an 11-tap blur: 6e9 on the FMA units, 5e9 adds.
  fp_peaks zen; // adds on units of their own: the mixed rate is twice
  zen.lanes = 16;
  zen.fma_per_s = 4e9;
  zen.add_per_s = 4e9;
  zen.mixed_per_s = 8e9;
  BOOST_TEST(chain_seconds_bound(zen, 1e9, 5) == 1.5,
             boost::test_tools::tolerance(1e-12)); // the FMA units
  fp_peaks shared = zen; // adds share the FMA ports
  shared.mixed_per_s = 4e9;
  BOOST_TEST(chain_seconds_bound(shared, 1e9, 5) == 11.0 / 4.0,
             boost::test_tools::tolerance(1e-12)); // both kinds on them
  fp_peaks slow_adds = zen;
  slow_adds.add_per_s = 2e9;
  BOOST_TEST(chain_seconds_bound(slow_adds, 1e9, 5) == 2.5,
             boost::test_tools::tolerance(1e-12)); // the add units
  fp_peaks unmeasured;
  BOOST_TEST(chain_seconds_bound(unmeasured, 1e9, 5) == 0.0);
}

BOOST_AUTO_TEST_CASE(output_vectors_count_whole_strips) {
  // 224 x 224 with 16 lanes: 14 strips of 224 positions a half.
  BOOST_TEST(chain_output_vectors(224, 224, 10, 16) == 10u * 2 * 14 * 224);
  // A 37-column plane still costs 5 strips of 8 for its vertical half.
  BOOST_TEST(chain_output_vectors(24, 37, 1, 8) == 5u * 24 + 3u * 37);
  BOOST_TEST(chain_output_vectors(24, 37, 1, 0) == 0u);
}

BOOST_AUTO_TEST_SUITE_END()
