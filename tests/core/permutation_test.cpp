#include <boost/test/unit_test.hpp>

#include <vector>

#include "stoker/permutation.hpp"

using namespace stoker;

BOOST_AUTO_TEST_SUITE(permutation)

BOOST_AUTO_TEST_CASE(is_a_bijection_on_every_size) {
  for (uint64_t n : {1u, 2u, 3u, 5u, 64u, 1000u, 4097u, 65536u}) {
    stoker::permutation p{n, 99};
    std::vector<bool> seen(n, false);
    for (uint64_t i = 0; i < n; ++i) {
      auto x = p(i);
      BOOST_REQUIRE(x < n);
      BOOST_REQUIRE(!seen[x]);
      seen[x] = true;
    }
  }
}

BOOST_AUTO_TEST_CASE(different_keys_give_different_orders) {
  stoker::permutation a{1000, 1}, b{1000, 2};
  size_t same = 0;
  for (uint64_t i = 0; i < 1000; ++i)
    same += a(i) == b(i) ? 1 : 0;
  BOOST_TEST(same < 20); // ~1 expected for independent permutations
}

BOOST_AUTO_TEST_CASE(actually_shuffles) {
  stoker::permutation p{1000, 7};
  size_t fixed = 0;
  for (uint64_t i = 0; i < 1000; ++i)
    fixed += p(i) == i ? 1 : 0;
  BOOST_TEST(fixed < 20);
}

BOOST_AUTO_TEST_SUITE_END()
