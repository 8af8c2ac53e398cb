#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <opencv2/core.hpp>

#include "kernels/augment_ops.hpp"
#include "support/torchvision_scratch.hpp"

// torchvision's augmentation ops against python3-torchvision's (0.14, its
// functional ops on uint8 tensors) on the same image and magnitude:
// TrivialAugmentWide's 14 with its tables and draws, rotation, grayscale,
// hue and ColorJitter (the other policies: augment_policies_test.cpp).

using namespace stoker;
using stoker_test::bytes_equal;
using stoker_test::scratch;
using stoker_test::test_image;

namespace {

// Runs the ops listed in `cases` ("NAME MAGNITUDE BILINEAR" lines) in
// torchvision on `img` (HWC bytes) and returns each result's HWC bytes.
const char* torchvision_script = R"PY(
import sys, torch
from torchvision.transforms import InterpolationMode, autoaugment
h, w, c = (int(v) for v in sys.argv[1:4])
pixels = open(sys.argv[4], 'rb').read()
img = torch.frombuffer(bytearray(pixels), dtype=torch.uint8)
img = img.view(h, w, c).permute(2, 0, 1).contiguous()
out = open(sys.argv[6], 'wb')
for line in open(sys.argv[5]):
    name, magnitude, bilinear = line.split()
    mode = (InterpolationMode.BILINEAR if bilinear == '1'
            else InterpolationMode.NEAREST)
    y = autoaugment._apply_op(img, name, float(magnitude), mode, None)
    out.write(y.permute(1, 2, 0).contiguous().numpy().tobytes())
)PY";

// TrivialAugmentWide's space: "NAME signed v0 v1 ..." per op, in order.
const char* space_script = R"PY(
import sys, torch
from torchvision.transforms import TrivialAugmentWide
space = TrivialAugmentWide()._augmentation_space(31)
with open(sys.argv[1], 'w') as f:
    for name, (magnitudes, signed) in space.items():
        values = magnitudes.reshape(-1).tolist()
        f.write(' '.join([name, str(int(signed))]
                         + [repr(float(v)) for v in values]) + '\n')
)PY";

struct op_case {
  augment_op op;
  double magnitude;
  bool bilinear;
};

bool geometric(augment_op op) {
  return op >= augment_op::shear_x && op <= augment_op::rotate;
}

} // namespace

BOOST_AUTO_TEST_SUITE(augment_ops)

BOOST_AUTO_TEST_CASE(each_op_is_torchvisions_on_the_same_image_and_magnitude) {
  scratch s;
  std::vector<op_case> cases;
  for (size_t k = 0; k < augment_op_count; ++k) {
    auto op = static_cast<augment_op>(k);
    for (size_t bin : {0u, 7u, 19u, 30u})
      for (double sign : {1.0, -1.0}) {
        if (sign < 0 && !augment_op_signed(op))
          continue;
        double m = sign * trivial_wide_magnitude(op, bin);
        cases.push_back({op, m, false});
        if (geometric(op))
          cases.push_back({op, m, true});
      }
  }
  std::ostringstream list;
  list.precision(17);
  for (auto& c : cases)
    list << augment_op_name(c.op) << ' ' << c.magnitude << ' '
         << (c.bilinear ? 1 : 0) << '\n';
  s.write("cases.txt", list.str());
  s.write("ops.py", torchvision_script);
  for (int channels : {3, 1}) {
    auto img = test_image(29, 37, channels);
    s.write("in.bin", std::string(reinterpret_cast<char*>(img.data),
                                  img.total() * img.elemSize()));
    auto command = "/usr/bin/python3 " + (s.dir / "ops.py").string() + " 29 37 "
                   + std::to_string(channels) + " " + (s.dir / "in.bin").string()
                   + " " + (s.dir / "cases.txt").string() + " "
                   + (s.dir / "out.bin").string();
    BOOST_REQUIRE(std::system(command.c_str()) == 0);
    auto expected = s.read("out.bin");
    size_t bytes = img.total() * img.elemSize();
    BOOST_REQUIRE_EQUAL(expected.size(), cases.size() * bytes);
    for (size_t i = 0; i < cases.size(); ++i) {
      auto& c = cases[i];
      auto got = apply_augment_op(img, c.op, c.magnitude,
                                  c.bilinear ? augment_sampling::bilinear
                                             : augment_sampling::nearest);
      BOOST_REQUIRE(got.type() == img.type());
      size_t off_by_one = 0;
      size_t further = 0;
      for (size_t b = 0; b < bytes; ++b) {
        int d = std::abs(int{got.data[b]}
                         - int{static_cast<uint8_t>(expected[i * bytes + b])});
        off_by_one += d == 1;
        further += d > 1;
      }
      auto what = std::string{augment_op_name(c.op)} + " "
                  + std::to_string(c.magnitude)
                  + (c.bilinear ? " bilinear" : "") + ", "
                  + std::to_string(channels) + " channel(s): "
                  + std::to_string(further) + " of " + std::to_string(bytes)
                  + " values off by more than 1";
      if (!geometric(c.op)) { // the same arithmetic: the same bytes
        BOOST_TEST(off_by_one + further == 0u, what);
        continue;
      }
      // A double position against torchvision's float32 grid: bilinear
      // weights may round the other way at a near tie (within 1 level);
      // a nearest pick could differ too, which has not happened here.
      BOOST_TEST(further == 0u, what);
      BOOST_TEST(off_by_one <= bytes / 100, what << ", " << off_by_one
                                                 << " by 1");
    }
  }
}

BOOST_AUTO_TEST_CASE(the_magnitude_tables_are_torchvisions) {
  scratch s;
  auto script = s.write("space.py", space_script);
  auto command = "/usr/bin/python3 " + script.string() + " "
                 + (s.dir / "space.txt").string();
  BOOST_REQUIRE(std::system(command.c_str()) == 0);
  auto rows = stoker_test::read_space(s.read("space.txt"));
  BOOST_REQUIRE_EQUAL(rows.size(), augment_op_count);
  for (size_t k = 0; k < rows.size(); ++k) {
    auto op = static_cast<augment_op>(k);
    auto& r = rows[k];
    BOOST_TEST(r.name == augment_op_name(op));
    BOOST_TEST(r.is_signed == int{augment_op_signed(op)}, r.name);
    if (r.values.size() == 1) { // no magnitude
      BOOST_TEST(trivial_wide_magnitude(op, 0) == 0.0, r.name);
      continue;
    }
    BOOST_REQUIRE_EQUAL(r.values.size(), trivial_wide_bins);
    for (size_t bin = 0; bin < r.values.size(); ++bin)
      BOOST_TEST(trivial_wide_magnitude(op, bin) == r.values[bin],
                 r.name << " bin " << bin);
  }
}

BOOST_AUTO_TEST_CASE(the_draws_follow_torchvisions_distributions) {
  // torchvision: an op uniform over 14, a bin uniform over 31, a sign with
  // even odds. Chi-square over 100,000 keyed draws, at p = 0.001.
  constexpr size_t draws = 100'000;
  std::array<double, augment_op_count> ops{};
  std::array<double, trivial_wide_bins> bins{};
  double negative = 0;
  double signed_draws = 0;
  for (uint64_t i = 0; i < draws; ++i) {
    auto d = draw_trivial_wide(counter_rng{{11, 2, i, rng_stage::transforms}});
    ops[static_cast<size_t>(d.op)] += 1;
    if (d.op == augment_op::rotate) { // its bin, from its magnitude
      for (size_t b = 0; b < trivial_wide_bins; ++b)
        if (std::abs(d.magnitude) == trivial_wide_magnitude(d.op, b))
          bins[b] += 1;
    }
    if (augment_op_signed(d.op)) {
      signed_draws += 1;
      negative += d.magnitude < 0 || (d.magnitude == 0 && std::signbit(
                                                           d.magnitude));
    }
  }
  auto chi_square = [](const auto& counts) {
    double total = 0;
    for (double c : counts)
      total += c;
    double expected = total / static_cast<double>(counts.size());
    double x = 0;
    for (double c : counts)
      x += (c - expected) * (c - expected) / expected;
    return x;
  };
  BOOST_TEST(chi_square(ops) < 34.53);  // 13 degrees of freedom
  BOOST_TEST(chi_square(bins) < 59.70); // 30
  double share = negative / signed_draws;
  BOOST_TEST(std::abs(share - 0.5) < 0.01, share);
}

BOOST_AUTO_TEST_CASE(rotation_and_grayscale_are_torchvisions) {
  scratch s;
  auto script = s.write("rotate.py", R"PY(
import sys, torch
from torchvision.transforms import InterpolationMode, functional as F
h, w, c = (int(v) for v in sys.argv[1:4])
img = torch.frombuffer(bytearray(open(sys.argv[4], 'rb').read()),
                       dtype=torch.uint8).view(h, w, c).permute(2, 0, 1)
img = img.contiguous()
out = open(sys.argv[5], 'wb')
def put(y):
    out.write(y.permute(1, 2, 0).contiguous().numpy().tobytes())
for angle in (-33.3, 12.0, 90.0, 170.5):
    for mode in (InterpolationMode.NEAREST, InterpolationMode.BILINEAR):
        put(F.rotate(img, angle, mode, fill=[0.0] * c))
floats = (img.double() / 255.0).float()  # as the test makes them
if c == 3:  # (a 1-channel image stays 1 channel in torchvision even for 3)
    for channels in (1, 3):
        put(F.rgb_to_grayscale(img, channels))
        put(F.rgb_to_grayscale(floats, channels))
)PY");
  for (int channels : {3, 1}) {
    auto img = test_image(23, 31, channels);
    s.write("in.bin", std::string(reinterpret_cast<char*>(img.data),
                                  img.total() * img.elemSize()));
    BOOST_REQUIRE(std::system(("/usr/bin/python3 " + script.string()
                               + " 23 31 " + std::to_string(channels) + " "
                               + (s.dir / "in.bin").string() + " "
                               + (s.dir / "out.bin").string())
                                .c_str())
                  == 0);
    auto expected = s.read("out.bin");
    size_t at = 0;
    auto next = [&](size_t bytes) {
      auto part = expected.substr(at, bytes);
      at += bytes;
      return part;
    };
    size_t bytes = img.total() * img.elemSize();
    for (double angle : {-33.3, 12.0, 90.0, 170.5})
      for (auto mode : {augment_sampling::nearest, augment_sampling::bilinear}) {
        auto got = rotate_filled(img, angle, mode);
        auto theirs = next(bytes);
        size_t further = 0;
        size_t by_one = 0;
        for (size_t b = 0; b < bytes; ++b) {
          int d = std::abs(int{got.data[b]} - int{static_cast<uint8_t>(
                                                theirs[b])});
          further += d > 1;
          by_one += d == 1;
        }
        BOOST_TEST(further == 0u, angle << " degrees, " << channels
                                        << " channel(s): " << further
                                        << " values off by more than 1");
        BOOST_TEST(by_one <= bytes / 50, by_one);
      }
    if (channels == 1) { // as it is, or 3 copies
      BOOST_TEST(at == expected.size()); // the rotations were all there
      BOOST_TEST(bytes_equal(to_grayscale(img, 1), img));
      cv::Mat three;
      cv::merge(std::vector<cv::Mat>{img, img, img}, three);
      BOOST_TEST(bytes_equal(to_grayscale(img, 3), three));
      continue;
    }
    cv::Mat floats(img.size(), CV_32FC3);
    for (size_t i = 0; i < bytes; ++i)
      floats.ptr<float>()[i] = static_cast<float>(img.data[i] / 255.0);
    for (int out : {1, 3}) {
      auto gray = to_grayscale(img, out);
      BOOST_TEST(next(img.total() * out)
                 == std::string(reinterpret_cast<char*>(gray.data),
                                gray.total() * gray.elemSize()));
      auto gray_f = to_grayscale(floats, out);
      BOOST_TEST(next(img.total() * out * 4)
                 == std::string(reinterpret_cast<char*>(gray_f.data),
                                gray_f.total() * gray_f.elemSize()));
    }
    BOOST_TEST(at == expected.size()); // every result read, none left
  }
}

BOOST_AUTO_TEST_CASE(hue_and_color_jitter_are_torchvisions) {
  scratch s;
  auto script = s.write("hue.py", R"PY(
import sys, torch
from torchvision.transforms import functional as F
h, w = 23, 31
img = torch.frombuffer(bytearray(open(sys.argv[1], 'rb').read()),
                       dtype=torch.uint8).view(h, w, 3).permute(2, 0, 1)
img = img.contiguous()
out = open(sys.argv[2], 'wb')
for factor in (-0.5, -0.31, -0.05, 0.0, 0.12, 0.4, 0.5):
    y = F.adjust_hue(img, factor)
    out.write(y.permute(1, 2, 0).contiguous().numpy().tobytes())
# ColorJitter's steps in one order with given factors
y = F.adjust_hue(F.adjust_saturation(F.adjust_contrast(
    F.adjust_brightness(img, 1.3), 0.7), 1.6), -0.2)
out.write(y.permute(1, 2, 0).contiguous().numpy().tobytes())
)PY");
  auto img = test_image(23, 31, 3);
  cv::Mat gray_patch = img(cv::Rect{0, 0, 4, 4}); // r = g = b there too
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 4; ++x) {
      auto* p = gray_patch.ptr<uint8_t>(y) + 3 * x;
      p[1] = p[2] = p[0];
    }
  s.write("in.bin", std::string(reinterpret_cast<char*>(img.data),
                                img.total() * img.elemSize()));
  BOOST_REQUIRE(std::system(("/usr/bin/python3 " + script.string() + " "
                             + (s.dir / "in.bin").string() + " "
                             + (s.dir / "out.bin").string())
                              .c_str())
                == 0);
  auto expected = s.read("out.bin");
  size_t bytes = img.total() * img.elemSize();
  size_t at = 0;
  for (double factor : {-0.5, -0.31, -0.05, 0.0, 0.12, 0.4, 0.5}) {
    auto got = adjust_hue(img, factor);
    BOOST_TEST(expected.substr(at, bytes)
                 == std::string(reinterpret_cast<char*>(got.data), bytes),
               "hue " << factor);
    at += bytes;
  }
  color_jitter_draw d;
  d.order = {0, 1, 2, 3};
  d.factor = {1.3, 0.7, 1.6, -0.2};
  d.active = {true, true, true, true};
  auto got = color_jitter(img, d);
  BOOST_TEST(expected.substr(at, bytes)
             == std::string(reinterpret_cast<char*>(got.data), bytes));
  // The draw: every order equally often, each factor in its range, an
  // adjustment of strength 0 left out.
  std::map<std::array<int, 4>, double> orders;
  for (uint64_t i = 0; i < 48'000; ++i) {
    auto j = draw_color_jitter({0.4, 0.4, 0.4, 0.1},
                               counter_rng{{9, 0, i, rng_stage::transforms}});
    orders[j.order] += 1;
    BOOST_REQUIRE(j.factor[0] >= 0.6 && j.factor[0] <= 1.4);
    BOOST_REQUIRE(j.factor[3] >= -0.1 && j.factor[3] <= 0.1);
  }
  BOOST_REQUIRE_EQUAL(orders.size(), 24u);
  double x = 0;
  for (auto& [order, n] : orders)
    x += (n - 2000.0) * (n - 2000.0) / 2000.0;
  BOOST_TEST(x < 49.73); // 23 degrees of freedom, p = 0.001
  auto off = draw_color_jitter({0.4, 0.0, 0.4, 0.0},
                               counter_rng{{9, 0, 1, rng_stage::transforms}});
  BOOST_TEST(!off.active[1]);
  BOOST_TEST(!off.active[3]);
}

BOOST_AUTO_TEST_SUITE_END()
