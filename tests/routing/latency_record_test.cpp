#include <boost/test/unit_test.hpp>

#include "routing/latency_record.hpp"

using namespace stoker;

BOOST_AUTO_TEST_SUITE(latency_record)

BOOST_AUTO_TEST_CASE(percentiles_are_within_five_percent) {
  stoker::latency_record r;
  BOOST_TEST(r.percentile_ms(50) == 0.0);
  // 1..1000 ms, one each: p50 = 500 ms, p99 = 990 ms.
  for (uint64_t ms = 1; ms <= 1000; ++ms)
    r.add(ms * 1'000'000);
  BOOST_TEST(r.count() == 1000u);
  auto p50 = r.percentile_ms(50);
  auto p99 = r.percentile_ms(99);
  BOOST_TEST(p50 >= 500.0);
  BOOST_TEST(p50 <= 500.0 * 1.05);
  BOOST_TEST(p99 >= 990.0);
  BOOST_TEST(p99 <= 990.0 * 1.05);
  BOOST_TEST(r.percentile_ms(100) >= 1000.0);
}

BOOST_AUTO_TEST_CASE(tiny_and_huge_durations_land_in_the_end_buckets) {
  stoker::latency_record r;
  r.add(0);
  r.add(5'000); // 5 us: the first bucket (up to 10 us)
  BOOST_TEST(r.percentile_ms(100) == 0.01);
  r.add(uint64_t{1} << 62); // far past the last bucket: kept there
  BOOST_TEST(r.percentile_ms(100) > 1'000'000.0);
  BOOST_TEST(r.count() == 3u);
}

BOOST_AUTO_TEST_SUITE_END()
