#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include <xmmintrin.h>

#include "stoker/errors.hpp"
#include "kernels/blur.hpp"
#include "transport/batch_check.hpp"
#include "support/blur_batches.hpp"

// The hand-written blur chain against the plain-loop reference, on every
// instruction set this machine runs.

using namespace stoker;

namespace {

// ToTensor, then every blur call through blur_plane_reference (double
// accumulation): what the stage must compute.
image_batch reference_stage(const blur_params& p, image_batch batch) {
  std::vector<float> hwc(batch.image_elements());
  std::vector<float> tmp(size_t{batch.height} * batch.width);
  size_t plane = tmp.size();
  for (size_t i = 0; i < batch.size(); ++i) {
    float* img = batch.image(i);
    std::memcpy(hwc.data(), img, hwc.size() * sizeof(float));
    hwc_to_chw(hwc.data(), img, batch.height, batch.width, batch.channels);
    for (uint32_t call = 0; call < p.repeat; ++call) {
      auto kernel = gaussian_kernel(
        blur_sigma(p, batch.epoch, batch.sample_ids[i], call), p.kernel_size);
      for (uint32_t c = 0; c < batch.channels; ++c) {
        float* pl = img + c * plane;
        blur_plane_reference(pl, tmp.data(), batch.height, batch.width,
                             kernel);
        std::memcpy(pl, tmp.data(), plane * sizeof(float));
      }
    }
  }
  batch.order = layout::chw;
  return batch;
}

std::vector<cpu_isa> runnable_isas() {
  std::vector<cpu_isa> out;
  for (auto isa : {cpu_isa::avx512, cpu_isa::avx2, cpu_isa::scalar})
    if (cpu_supports(isa))
      out.push_back(isa);
    else
      BOOST_TEST_MESSAGE("this CPU does not run " << to_string(isa)
                                                  << ": not tested here");
  return out;
}

struct shape {
  uint32_t h, w;
};

float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  float diff = 0.0f;
  for (size_t i = 0; i < a.size(); ++i)
    diff = std::max(diff, std::abs(a[i] - b[i]));
  return diff;
}

// The first ISA's result is kept in `first`; every later one must be the
// same bits.
void check_same_bits(std::vector<float>& first, const std::vector<float>& got,
                     cpu_isa isa) {
  if (first.empty()) {
    first = got;
    return;
  }
  BOOST_TEST(std::memcmp(first.data(), got.data(), got.size() * sizeof(float))
               == 0,
             to_string(isa) << " differs from the widest ISA's bits");
}

const shape shapes[] = {{1, 1},  {5, 7},   {37, 53}, {2, 300},
                        {300, 2}, {17, 16}, {224, 224}};

} // namespace

BOOST_AUTO_TEST_SUITE(blur_stoker)

BOOST_AUTO_TEST_CASE(parses_impl_and_isa_names_and_rejects_others) {
  BOOST_TEST((parse_enum<blur_impl>("stoker") == blur_impl::stoker));
  BOOST_TEST((parse_enum<blur_impl>("opencv") == blur_impl::opencv));
  BOOST_TEST((parse_enum<blur_impl>("auto") == blur_impl::automatic));
  BOOST_TEST(!parse_enum<blur_impl>("fast").has_value());
  BOOST_TEST((parse_enum<cpu_isa>("avx512") == cpu_isa::avx512));
  BOOST_TEST((parse_enum<cpu_isa>("scalar") == cpu_isa::scalar));
  BOOST_TEST(!parse_enum<cpu_isa>("sse2").has_value());
}

BOOST_AUTO_TEST_CASE(every_runnable_isa_equals_the_reference) {
  uint64_t seed = 100;
  for (auto isa : runnable_isas())
    for (auto [h, w] : shapes)
      for (uint32_t c = 1; c <= 4; ++c)
        for (uint32_t kernel : {1u, 3u, 11u, 17u}) {
          if (h * w > 1000 && (c != 3 || kernel != 11))
            continue; // the big image once, with the article's settings
          blur_params p{++seed, kernel, 0.1f, 2.0f, 10, blur_impl::stoker,
                        isa};
          auto input = test::random_hwc_batch(h, w, c, 2, seed, 1);
          auto want = reference_stage(p, input);
          apply_blur_stage(p, input);
          auto diff = test::max_abs_diff(want, input);
          BOOST_TEST(diff <= 1e-5f, to_string(isa)
                                      << " " << h << "x" << w << "x" << c
                                      << ", kernel " << kernel
                                      << ": max abs diff " << diff);
        }
}

BOOST_AUTO_TEST_CASE(sigmas_at_both_ends_of_the_range_match_too) {
  for (auto isa : runnable_isas())
    for (float sigma : {0.1f, 2.0f}) {
      blur_params p{5, 11, sigma, sigma, 10, blur_impl::stoker, isa};
      auto input = test::random_hwc_batch(37, 53, 3, 1, 5);
      auto want = reference_stage(p, input);
      apply_blur_stage(p, input);
      BOOST_TEST(test::max_abs_diff(want, input) <= 1e-5f,
                 to_string(isa) << ", sigma " << sigma);
    }
}

BOOST_AUTO_TEST_CASE(all_isas_agree_bit_for_bit) {
  auto isas = runnable_isas();
  for (auto [h, w] : shapes) {
    blur_params p{9, 11, 0.1f, 2.0f, 10, blur_impl::stoker, cpu_isa::scalar};
    auto base = test::random_hwc_batch(h, w, 3, 1, 9);
    auto scalar = base;
    apply_blur_stage(p, scalar);
    for (auto isa : isas) {
      p.isa = isa;
      auto other = base;
      apply_blur_stage(p, other);
      BOOST_TEST(std::memcmp(scalar.data.data(), other.data.data(),
                             scalar.data.size())
                   == 0,
                 to_string(isa) << " vs scalar, " << h << "x" << w);
    }
  }
}

BOOST_AUTO_TEST_CASE(agrees_with_the_opencv_path) {
  blur_params p;
  p.seed = 3;
  auto stoker = test::random_hwc_batch(224, 224, 3, 2, 3);
  auto opencv = stoker;
  p.impl = blur_impl::stoker;
  apply_blur_stage(p, stoker);
  p.impl = blur_impl::opencv;
  apply_blur_stage(p, opencv);
  BOOST_TEST(test::max_abs_diff(stoker, opencv) <= 1e-5f);
}

BOOST_AUTO_TEST_CASE(auto_picks_the_chain_on_the_widest_isa_here) {
  auto choice = resolve_blur(blur_params{});
  BOOST_REQUIRE(choice);
  BOOST_TEST_MESSAGE("auto: " << to_string(choice->impl) << " on "
                              << to_string(choice->isa));
  BOOST_TEST((choice->isa == best_cpu_isa()));
  BOOST_TEST((choice->impl
              == (best_cpu_isa() == cpu_isa::scalar ? blur_impl::opencv
                                                    : blur_impl::stoker)));
  blur_params forced;
  forced.impl = blur_impl::stoker;
  forced.isa = cpu_isa::scalar;
  choice = resolve_blur(forced);
  BOOST_REQUIRE(choice);
  BOOST_TEST((choice->isa == cpu_isa::scalar));
  BOOST_TEST((choice->impl == blur_impl::stoker));
}

BOOST_AUTO_TEST_CASE(refuses_an_isa_with_opencv_or_one_the_cpu_lacks) {
  blur_params p;
  p.impl = blur_impl::opencv;
  p.isa = cpu_isa::avx2;
  auto choice = resolve_blur(p);
  BOOST_REQUIRE(!choice);
  BOOST_TEST(describe(choice.error()).find("pipeline.blur-isa = \"avx2\"")
             != std::string::npos);
  for (auto isa : {cpu_isa::avx512, cpu_isa::avx2})
    if (!cpu_supports(isa)) {
      blur_params q;
      q.isa = isa;
      auto lacking = resolve_blur(q);
      BOOST_REQUIRE(!lacking);
      BOOST_TEST(describe(lacking.error()).find("does not run it")
                 != std::string::npos);
    }
}

BOOST_AUTO_TEST_CASE(an_interleaved_image_through_the_chain_matches_opencv) {
  // What the gaussian-blur transform runs: HWC in, HWC out, every call's
  // taps; OpenCV's per-channel result call after call to 1e-5, and the
  // same bits on every ISA.
  uint64_t seed = 500;
  for (auto [h, w] : shapes)
    for (uint32_t c = 1; c <= 4; ++c)
      for (uint32_t kernel : {1u, 3u, 11u, 17u}) {
        if (h * w > 1000 && (c != 3 || kernel != 11))
          continue;
        auto input = test::random_hwc_batch(h, w, c, 1, ++seed, 1);
        std::vector<float> taps;
        for (float sigma : {0.7f, 1.9f}) {
          auto k = gaussian_kernel(sigma, kernel);
          taps.insert(taps.end(), k.begin(), k.end());
        }
        std::vector<float> want(input.data.size() / sizeof(float));
        std::memcpy(want.data(), input.data.data(), input.data.size());
        std::vector<float> tmp(want.size());
        for (uint32_t call = 0; call < 2; ++call) {
          blur_image_opencv(want.data(), tmp.data(), h, w, c,
                            std::vector<float>(taps.begin() + call * kernel,
                                               taps.begin()
                                                 + (call + 1) * kernel));
          want.swap(tmp);
        }
        std::vector<float> first;
        for (auto isa : runnable_isas()) {
          std::vector<float> got(want.size());
          std::memcpy(got.data(), input.data.data(), input.data.size());
          blur_scratch scratch;
          blur_image_chain(got.data(), h, w, c, taps.data(), 2, kernel, isa,
                           scratch);
          float diff = max_abs_diff(got, want);
          BOOST_TEST(diff <= 1e-5f, to_string(isa) << " " << h << "x" << w
                                                    << "x" << c << ", kernel "
                                                    << kernel << ": " << diff);
          check_same_bits(first, got, isa);
        }
      }
}

BOOST_AUTO_TEST_CASE(the_chain_stamps_the_checksums_of_what_it_wrote) {
  for (auto isa : runnable_isas()) {
    blur_params p{21, 11, 0.1f, 2.0f, 10, blur_impl::stoker, isa};
    auto batch = test::random_hwc_batch(37, 53, 3, 3, 21);
    apply_blur_stage(p, batch);
    BOOST_REQUIRE_EQUAL(batch.checksums.size(), batch.size());
    auto stamped = batch.checksums;
    stamp_checksums(batch); // over the data as it is now
    BOOST_TEST(stamped == batch.checksums, to_string(isa));
  }
}

BOOST_AUTO_TEST_CASE(subnormal_taps_match_and_leave_the_float_mode_as_found) {
  // Sigma 0.36 puts the outer taps below FLT_MIN: the chain flushes them
  // (and any subnormal product) to zero while it runs, which must change
  // nothing the 1e-5 agreement sees and must not leak to the caller.
  auto kernel = gaussian_kernel(0.36f, 11);
  BOOST_REQUIRE(std::fpclassify(kernel.front()) == FP_SUBNORMAL);
  const unsigned before = _mm_getcsr();
  BOOST_REQUIRE((before & 0x8040u) == 0); // FTZ and DAZ off, as by default
  auto input = test::random_hwc_batch(37, 53, 3, 1, 33, 1);
  std::vector<float> want(input.data.size() / sizeof(float));
  std::vector<float> src(want.size());
  std::memcpy(src.data(), input.data.data(), input.data.size());
  blur_image_opencv(src.data(), want.data(), 37, 53, 3, kernel);
  std::vector<float> first;
  for (auto isa : runnable_isas()) {
    auto got = src;
    blur_scratch scratch;
    blur_image_chain(got.data(), 37, 53, 3, kernel.data(), 1, 11, isa,
                     scratch);
    BOOST_TEST(_mm_getcsr() == before, to_string(isa));
    float diff = max_abs_diff(got, want);
    BOOST_TEST(diff <= 1e-5f, to_string(isa) << ": " << diff);
    check_same_bits(first, got, isa);
  }
}

BOOST_AUTO_TEST_SUITE_END()
