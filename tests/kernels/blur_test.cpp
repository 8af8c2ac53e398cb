#include <boost/test/unit_test.hpp>

#include <cmath>
#include <utility>
#include <vector>

#include "stoker/counter_rng.hpp"
#include "data/synthetic_mapper.hpp"
#include "kernels/blur.hpp"

using namespace stoker;

namespace {

std::vector<float> random_plane(uint32_t h, uint32_t w, uint64_t seed) {
  std::vector<float> v(size_t{h} * w);
  counter_rng{{seed, 0, 0, rng_stage::sample_pixels}}.fill_standard_normal(
    v.data(), v.size());
  return v;
}

float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  float m = 0;
  for (size_t i = 0; i < a.size(); ++i)
    m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

} // namespace

BOOST_AUTO_TEST_SUITE(blur)

BOOST_AUTO_TEST_CASE(kernel_is_the_normalized_gaussian) {
  for (float sigma : {0.1f, 0.7f, 2.0f}) {
    auto k = gaussian_kernel(sigma, 11);
    BOOST_REQUIRE(k.size() == 11u);
    double sum = 0;
    for (float x : k)
      sum += x;
    BOOST_TEST(sum == 1.0, boost::test_tools::tolerance(1e-6));
    for (int i = 0; i < 5; ++i)
      BOOST_TEST(k[static_cast<size_t>(i)] == k[static_cast<size_t>(10 - i)]);
    // Ratio of neighbours follows exp(-x^2 / (2 sigma^2)).
    double ratio = double{k[6]} / k[5];
    BOOST_TEST(ratio == std::exp(-1.0 / (2.0 * sigma * sigma)),
               boost::test_tools::tolerance(1e-5));
  }
  // sigma 0.1 is (numerically) the identity.
  auto k = gaussian_kernel(0.1f, 11);
  BOOST_TEST(k[5] == 1.0f, boost::test_tools::tolerance(1e-6f));
}

BOOST_AUTO_TEST_CASE(reflect_padding_does_not_repeat_the_edge) {
  // dcba|abcd -> cb|abcd: index -1 is 1, -2 is 2; at the far end likewise.
  BOOST_TEST(reflect101(-1, 4) == 1);
  BOOST_TEST(reflect101(-2, 4) == 2);
  BOOST_TEST(reflect101(4, 4) == 2);
  BOOST_TEST(reflect101(5, 4) == 1);
  BOOST_TEST(reflect101(-5, 3) == 1); // reflects twice on tiny images
  BOOST_TEST(reflect101(7, 1) == 0);
}

BOOST_AUTO_TEST_CASE(opencv_blur_equals_the_reference_loop) {
  struct shape {
    uint32_t h, w;
  };
  for (auto s : {shape{1, 1}, shape{5, 7}, shape{37, 53}, shape{224, 224},
                 shape{2, 30}}) {
    for (float sigma : {0.1f, 0.55f, 2.0f}) {
      auto src = random_plane(s.h, s.w, s.h * 1000 + s.w);
      auto k = gaussian_kernel(sigma, 11);
      std::vector<float> ref(src.size()), cv(src.size());
      blur_plane_reference(src.data(), ref.data(), s.h, s.w, k);
      blur_plane_opencv(src.data(), cv.data(), s.h, s.w, k);
      BOOST_TEST_CONTEXT(s.h << "x" << s.w << " sigma " << sigma) {
        BOOST_TEST(max_abs_diff(ref, cv) <= 1e-5f);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(edges_are_blurred_with_reflect_101) {
  // One row (the vertical pass is then the identity), an impulse at x = 1.
  // With reflect-101 the tap at x = -1 reads pixel 1 again, so
  // out[0] = k[-1] + k[+1]; BORDER_REFLECT would read pixel 0 there and
  // pixel 1 at x = -2 instead (k[+1] + k[-2]).
  std::vector<float> src(7, 0.0f), out(7), ref(7);
  src[1] = 1.0f;
  auto k = gaussian_kernel(2.0f, 11);
  blur_plane_opencv(src.data(), out.data(), 1, 7, k);
  blur_plane_reference(src.data(), ref.data(), 1, 7, k);
  BOOST_TEST(out[0] == k[4] + k[6], boost::test_tools::tolerance(1e-6f));
  BOOST_TEST(ref[0] == k[4] + k[6], boost::test_tools::tolerance(1e-6f));
  BOOST_TEST(max_abs_diff(out, ref) <= 1e-6f);
}

BOOST_AUTO_TEST_CASE(to_tensor_reorders_hwc_to_chw) {
  // 2x2 image, 3 channels: value = 100 * c + pixel.
  std::vector<float> hwc, chw(12);
  for (int px = 0; px < 4; ++px)
    for (int c = 0; c < 3; ++c)
      hwc.push_back(static_cast<float>(100 * c + px));
  hwc_to_chw(hwc.data(), chw.data(), 2, 2, 3);
  BOOST_TEST(chw == (std::vector<float>{0, 1, 2, 3, 100, 101, 102, 103, 200,
                                        201, 202, 203}));
}

BOOST_AUTO_TEST_CASE(reorders_any_pixel_count_and_channels_both_ways) {
  // Three channels take 16 pixels at a time where the CPU has AVX-512: the
  // counts around a vector and the article's image check its tail too.
  for (uint32_t c = 1; c <= 4; ++c)
    for (auto [h, w] : {std::pair{1u, 1u}, {1u, 15u}, {1u, 16u}, {1u, 17u},
                        {3u, 11u}, {37u, 53u}, {224u, 224u}}) {
      size_t pixels = size_t{h} * w;
      std::vector<float> hwc(pixels * c), chw(hwc.size()), back(hwc.size());
      for (size_t i = 0; i < hwc.size(); ++i)
        hwc[i] = static_cast<float>(i);
      hwc_to_chw(hwc.data(), chw.data(), h, w, c);
      bool ok = true;
      for (size_t p = 0; p < pixels; ++p)
        for (uint32_t ch = 0; ch < c; ++ch)
          ok = ok && chw[ch * pixels + p] == hwc[p * c + ch];
      BOOST_TEST(ok, h << "x" << w << "x" << c << " to CHW");
      chw_to_hwc(chw.data(), back.data(), h, w, c);
      BOOST_TEST((back == hwc), h << "x" << w << "x" << c << " back to HWC");
    }
}

BOOST_AUTO_TEST_CASE(sigmas_are_drawn_in_range_and_deterministically) {
  blur_params p;
  p.seed = 3;
  double lo = 10, hi = 0;
  for (uint32_t call = 0; call < 2000; ++call) {
    float s = blur_sigma(p, 1, 77, call);
    lo = std::min(lo, double{s});
    hi = std::max(hi, double{s});
    BOOST_REQUIRE(s == blur_sigma(p, 1, 77, call));
  }
  BOOST_TEST(lo >= 0.1);
  BOOST_TEST(hi <= 2.0);
  BOOST_TEST(lo < 0.15); // the whole range is used
  BOOST_TEST(hi > 1.95);
  BOOST_TEST(blur_sigma(p, 1, 77, 0) != blur_sigma(p, 2, 77, 0));
}

BOOST_AUTO_TEST_CASE(stage_equals_totensor_then_reference_blurs) {
  synthetic_spec data;
  data.height = 37;
  data.width = 53;
  data.channels = 3;
  blur_params p;
  p.seed = data.seed;
  p.repeat = 10;
  work_item item;
  item.epoch = 2;
  item.sample_ids = {5, 6};
  auto batch = map_synthetic(data, item);
  auto raw = batch;
  apply_blur_stage(p, batch);
  BOOST_TEST((batch.order == layout::chw));
  size_t plane = size_t{data.height} * data.width;
  for (size_t i = 0; i < 2; ++i) {
    std::vector<float> chw(batch.image_elements()), tmp(plane);
    hwc_to_chw(raw.image(i), chw.data(), data.height, data.width, 3);
    for (uint32_t call = 0; call < p.repeat; ++call) {
      auto k = gaussian_kernel(blur_sigma(p, 2, item.sample_ids[i], call), 11);
      for (size_t c = 0; c < 3; ++c) {
        blur_plane_reference(chw.data() + c * plane, tmp.data(), data.height,
                             data.width, k);
        std::copy(tmp.begin(), tmp.end(), chw.begin() + c * plane);
      }
    }
    std::vector<float> got(batch.image(i), batch.image(i) + chw.size());
    BOOST_TEST(max_abs_diff(got, chw) <= 1e-5f);
  }
}

BOOST_AUTO_TEST_CASE(stage_with_no_blur_is_just_to_tensor) {
  synthetic_spec data;
  data.height = 4;
  data.width = 3;
  work_item item;
  item.sample_ids = {1};
  auto batch = map_synthetic(data, item);
  std::vector<float> expected(batch.image_elements());
  hwc_to_chw(batch.image(0), expected.data(), 4, 3, 3);
  blur_params p;
  p.repeat = 0;
  apply_blur_stage(p, batch);
  BOOST_TEST(std::vector<float>(batch.image(0), batch.image(0) + 36)
             == expected);
}

BOOST_AUTO_TEST_CASE(stage_rejects_a_batch_already_in_chw) {
  synthetic_spec data;
  data.height = data.width = 8;
  work_item item;
  item.sample_ids = {1};
  auto batch = map_synthetic(data, item);
  batch.order = layout::chw;
  BOOST_CHECK_THROW(apply_blur_stage(blur_params{}, batch),
                    std::invalid_argument);
  // What a worker reports when it stops on such a batch.
  try {
    apply_blur_stage(blur_params{}, batch);
  } catch (const std::invalid_argument& e) {
    BOOST_TEST(std::string{e.what()}.find("must be float32 HWC")
               != std::string::npos);
  }
}

BOOST_AUTO_TEST_SUITE_END()
