#include <boost/test/unit_test.hpp>

#include <array>
#include <cmath>
#include <cstdlib>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

#include "kernels/augment_ops.hpp"
#include "support/torchvision_scratch.hpp"

// The augment policies' spaces and draws against python3-torchvision's:
// RandAugment's, AutoAugment's ImageNet policy, RandomErasing's boxes.

using namespace stoker;
using stoker_test::bytes_equal;
using stoker_test::scratch;
using stoker_test::test_image;

BOOST_AUTO_TEST_SUITE(augment_policies)

BOOST_AUTO_TEST_CASE(rand_augments_space_and_draws_are_torchvisions) {
  // Its tables on a 29 x 37 image (the translations scale with the size).
  scratch s;
  auto script = s.write("rand.py", R"PY(
import sys
from torchvision.transforms import RandAugment
space = RandAugment()._augmentation_space(31, (29, 37))
with open(sys.argv[1], 'w') as f:
    for name, (magnitudes, signed) in space.items():
        f.write(' '.join([name, str(int(signed))]
                         + [repr(float(v)) for v in
                            magnitudes.reshape(-1).tolist()]) + '\n')
)PY");
  BOOST_REQUIRE(std::system(("/usr/bin/python3 " + script.string() + " "
                             + (s.dir / "rand.txt").string())
                              .c_str())
                == 0);
  auto rows = stoker_test::read_space(s.read("rand.txt"));
  BOOST_REQUIRE_EQUAL(rows.size(), augment_op_count);
  for (size_t k = 0; k < rows.size(); ++k) {
    auto op = static_cast<augment_op>(k);
    auto& r = rows[k];
    BOOST_TEST(r.name == augment_op_name(op));
    if (r.values.size() == 1)
      continue;
    BOOST_REQUIRE_EQUAL(r.values.size(), 31u);
    for (size_t bin = 0; bin < r.values.size(); ++bin) {
      double mine = rand_augment_magnitude(op, bin, 31, 29, 37);
      BOOST_TEST(std::abs(mine - r.values[bin])
                   <= 1.2e-7 * std::abs(r.values[bin]),
                 r.name << " bin " << bin << ": " << mine << " against "
                        << r.values[bin]);
    }
  }
  // Two ops a sample, each uniform over the 14, signs with even odds.
  std::array<double, augment_op_count> ops{};
  double negative = 0;
  double signed_draws = 0;
  for (uint64_t i = 0; i < 50'000; ++i)
    for (auto& d : draw_rand_augment(2, 9, 31, 224, 224,
                                     counter_rng{{6, 0, i,
                                                  rng_stage::transforms}})) {
      ops[static_cast<size_t>(d.op)] += 1;
      if (augment_op_signed(d.op)) {
        signed_draws += 1;
        negative += std::signbit(d.magnitude);
      }
    }
  double expected = 100'000.0 / augment_op_count;
  double x = 0;
  for (double c : ops)
    x += (c - expected) * (c - expected) / expected;
  BOOST_TEST(x < 34.53); // 13 degrees of freedom, p = 0.001
  BOOST_TEST(std::abs(negative / signed_draws - 0.5) < 0.01);
}

BOOST_AUTO_TEST_CASE(auto_augments_imagenet_policy_is_torchvisions) {
  scratch s;
  auto script = s.write("auto.py", R"PY(
import sys
from torchvision.transforms import AutoAugment, AutoAugmentPolicy
with open(sys.argv[1], 'w') as f:
    for policy in AutoAugment()._get_policies(AutoAugmentPolicy.IMAGENET):
        for name, p, magnitude in policy:
            f.write(f'{name} {p!r} {-1 if magnitude is None else magnitude}'
                    '\n')
    space = AutoAugment()._augmentation_space(10, (29, 37))
    for name in ('Posterize', 'Solarize', 'Rotate', 'ShearX', 'Color',
                 'Contrast', 'Sharpness'):
        f.write(name + ' ' + ' '.join(repr(float(v)) for v in
                                      space[name][0].tolist()) + '\n')
)PY");
  BOOST_REQUIRE(std::system(("/usr/bin/python3 " + script.string() + " "
                             + (s.dir / "auto.txt").string())
                              .c_str())
                == 0);
  std::istringstream lines{s.read("auto.txt")};
  for (auto& policy : auto_augment_imagenet())
    for (auto& step : policy) {
      std::string name;
      double p = 0;
      int bin = 0;
      lines >> name >> p >> bin;
      BOOST_TEST(name == augment_op_name(step.op));
      BOOST_TEST(p == step.p);
      BOOST_TEST(bin == step.magnitude_bin);
    }
  std::string line;
  std::getline(lines, line); // the end of the last policy's line
  while (std::getline(lines, line)) { // its space's tables, 10 bins
    std::istringstream words{line};
    std::string name;
    words >> name;
    std::vector<double> values{std::istream_iterator<double>(words), {}};
    BOOST_REQUIRE_EQUAL(values.size(), 10u);
    augment_op op = augment_op::identity;
    for (size_t k = 0; k <= augment_op_count; ++k)
      if (augment_op_name(static_cast<augment_op>(k)) == name)
        op = static_cast<augment_op>(k);
    for (size_t bin = 0; bin < 10; ++bin)
      BOOST_TEST(std::abs(rand_augment_magnitude(op, bin, 10, 29, 37)
                          - values[bin])
                   <= 1.2e-7 * std::abs(values[bin]),
                 name << " bin " << bin);
  }
  // Invert, AutoAugment's own op, is torchvision's 255 - x.
  auto img = test_image(5, 6, 3);
  cv::Mat inverted = cv::Scalar::all(255) - img;
  BOOST_TEST(bytes_equal(apply_augment_op(img, augment_op::invert, 0),
                         inverted));
  // The draws: a sub-policy uniform over 25 (its first step's share is
  // its p once the sub-policies are even), each step with its p.
  std::array<double, augment_op_count + 1> applied{};
  double draws = 200'000;
  for (uint64_t i = 0; i < draws; ++i)
    for (auto& d :
         draw_auto_augment(224, 224, counter_rng{{8, 0, i,
                                                  rng_stage::transforms}}))
      applied[static_cast<size_t>(d.op)] += 1;
  std::array<double, augment_op_count + 1> expected{};
  for (auto& policy : auto_augment_imagenet())
    for (auto& step : policy)
      expected[static_cast<size_t>(step.op)] += draws / 25 * step.p;
  for (size_t k = 0; k <= augment_op_count; ++k)
    BOOST_TEST(std::abs(applied[k] - expected[k])
                 <= 4 * std::sqrt(expected[k]) + 1,
               augment_op_name(static_cast<augment_op>(k))
                 << ": " << applied[k] << " against " << expected[k]);
}

BOOST_AUTO_TEST_CASE(random_erasing_boxes_follow_torchvisions_get_params) {
  // 20,000 boxes on 224 x 160 from each: the erased area's share, the log
  // of h / w and how often no box fits, against torchvision's own draws.
  scratch s;
  auto script = s.write("erasing.py", R"PY(
import math, sys, torch
from torchvision.transforms import RandomErasing
torch.manual_seed(0)
img = torch.zeros(3, 224, 160)
area, log_ratio, fits = 0.0, 0.0, 0
for _ in range(20000):
    i, j, h, w, v = RandomErasing.get_params(img, (0.02, 0.33), (0.3, 3.3),
                                             [0])
    if h == 224 and w == 160:
        continue  # no box fitted: the image as it is
    fits += 1
    area += h * w / (224 * 160)
    log_ratio += math.log(h / w)
open(sys.argv[1], 'w').write(f'{area / fits} {log_ratio / fits} {fits}')
)PY");
  BOOST_REQUIRE(std::system(("/usr/bin/python3 " + script.string() + " "
                             + (s.dir / "erasing.txt").string())
                              .c_str())
                == 0);
  std::istringstream theirs{s.read("erasing.txt")};
  double their_area = 0, their_log_ratio = 0, their_fits = 0;
  theirs >> their_area >> their_log_ratio >> their_fits;
  erasing_options o;
  o.p = 1.0;
  double area = 0, log_ratio = 0, fits = 0;
  for (uint64_t i = 0; i < 20'000; ++i) {
    auto box = random_erasing_box(224, 160, o,
                                  counter_rng{{3, 1, i, rng_stage::transforms}});
    if (box.empty())
      continue;
    BOOST_REQUIRE(box.x >= 0);
    BOOST_REQUIRE(box.y >= 0);
    BOOST_REQUIRE(box.x + box.width <= 160);
    BOOST_REQUIRE(box.y + box.height <= 224);
    BOOST_REQUIRE(box.width < 160);
    BOOST_REQUIRE(box.height < 224);
    fits += 1;
    area += box.area() / (224.0 * 160.0);
    log_ratio += std::log(static_cast<double>(box.height) / box.width);
  }
  BOOST_TEST(std::abs(area / fits - their_area) < 0.005,
             area / fits << " against " << their_area);
  BOOST_TEST(std::abs(log_ratio / fits - their_log_ratio) < 0.03,
             log_ratio / fits << " against " << their_log_ratio);
  BOOST_TEST(std::abs(fits - their_fits) < 200, fits << " against "
                                                      << their_fits);
  // P: the share of samples erased at all.
  o.p = 0.25;
  double erased = 0;
  for (uint64_t i = 0; i < 20'000; ++i)
    erased += !random_erasing_box(224, 160, o,
                                  counter_rng{{4, 1, i, rng_stage::transforms}})
                 .empty();
  BOOST_TEST(std::abs(erased / 20'000 - 0.25) < 0.015, erased);
  // The box takes the value in every channel; the rest stays.
  cv::Mat img(6, 5, CV_32FC3, cv::Scalar(0.5, -1.0, 2.0));
  auto out = erase_box(img, cv::Rect{1, 2, 3, 2}, 0.0);
  for (int y = 0; y < 6; ++y)
    for (int x = 0; x < 5; ++x) {
      bool inside = x >= 1 && x < 4 && y >= 2 && y < 4;
      auto px = out.at<cv::Vec3f>(y, x);
      BOOST_TEST((px == (inside ? cv::Vec3f(0, 0, 0)
                                : cv::Vec3f(0.5f, -1.0f, 2.0f))));
    }
}

BOOST_AUTO_TEST_SUITE_END()
