#include <boost/test/unit_test.hpp>

#include "kernels/cuda_devices.hpp"

using namespace stoker;

BOOST_AUTO_TEST_SUITE(cuda_devices)

BOOST_AUTO_TEST_CASE(probe_names_the_devices_or_says_why_there_are_none) {
  auto found = probe_cuda_devices();
  BOOST_TEST_MESSAGE("CUDA devices: " << found.count << ": " << found.detail);
  BOOST_TEST(found.count >= 0);
  // With devices, their names; without, the reason. Never silence.
  BOOST_TEST(!found.detail.empty());
}

BOOST_AUTO_TEST_SUITE_END()
