#include <boost/test/unit_test.hpp>

#include "routing/run_series.hpp"

using namespace stoker;

BOOST_AUTO_TEST_SUITE(run_series)

BOOST_AUTO_TEST_CASE(keeps_a_point_a_second_with_rates_over_each_interval) {
  stoker::run_series s{1.0, 100};
  // Ticks every 0.25 s: 100 samples/s, the trainer idle a quarter, two
  // workers busy all the time.
  for (int i = 1; i <= 12; ++i)
    s.offer(0.25 * i, 25u * i, 25'000'000ull * i, 75'000'000ull * i, 8,
            500'000'000ull * i);
  auto p = s.points();
  BOOST_REQUIRE(p.size() == 3u);
  BOOST_TEST(p[0].t == 1.0);
  BOOST_TEST(p[0].samples_per_s == 100.0);
  BOOST_TEST(p[0].idle == 0.25);
  BOOST_TEST(p[2].window == 8u);
  BOOST_TEST(p[2].busy_workers == 2.0);
}

BOOST_AUTO_TEST_CASE(the_last_offer_is_kept_however_short_its_interval) {
  stoker::run_series s{1.0, 100};
  s.offer(1.0, 100, 0, 1000, 4, 1'000'000'000);
  s.offer(1.3, 160, 0, 1300, 4, 1'300'000'000); // too soon
  BOOST_TEST(s.points().size() == 1u);
  s.offer(1.5, 200, 0, 1500, 4, 1'250'000'000, true);
  auto p = s.points();
  BOOST_REQUIRE(p.size() == 2u);
  BOOST_TEST(p[1].samples_per_s == 200.0);
  BOOST_TEST(p[1].busy_workers == 0.5); // one worker, half the time
}

BOOST_AUTO_TEST_CASE(a_long_run_keeps_bounded_points_and_right_rates) {
  stoker::run_series s{1.0, 10};
  for (int i = 1; i < 100; ++i)
    s.offer(i, 50u * i, 0, 1'000'000ull * i, 8, 0);
  s.offer(100, 5000, 0, 100'000'000, 8, 0, true); // the run's end
  auto p = s.points();
  BOOST_TEST(p.size() <= 10u);
  BOOST_TEST(p.size() >= 5u);
  BOOST_TEST(s.interval() > 1.0);
  for (auto& x : p)
    BOOST_TEST(x.samples_per_s == 50.0);
  BOOST_TEST(p.back().t == 100.0);
}

BOOST_AUTO_TEST_SUITE_END()
