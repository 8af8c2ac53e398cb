#include <boost/test/unit_test.hpp>

#include "train/skip_tally.hpp"

using namespace stoker;

BOOST_AUTO_TEST_SUITE(skip_tally)

BOOST_AUTO_TEST_CASE(an_epoch_says_one_line_per_source_with_its_count) {
  stoker::skip_tally tally;
  for (int i = 0; i < 39; ++i)
    tally.add(0, "train-3.tar", "train-3.tar:(bytes 512-1024): damaged");
  tally.add(0, "a/bad.png", "a/bad.png: not a decodable image");
  tally.add(1, "train-3.tar", "train-3.tar:(bytes 512-1024): damaged");
  auto lines = tally.take_epoch_lines(0);
  BOOST_REQUIRE(lines.size() == 2u);
  BOOST_TEST(lines[0]
             == "train-3.tar: 39 sample(s) skipped "
                "(train-3.tar:(bytes 512-1024): damaged)");
  BOOST_TEST(lines[1]
             == "a/bad.png: 1 sample(s) skipped (a/bad.png: not a "
                "decodable image)");
  BOOST_TEST(tally.take_epoch_lines(0).empty()); // said once
  BOOST_TEST(tally.take_epoch_lines(1).size() == 1u);
  auto run = tally.sources();
  BOOST_REQUIRE(run.size() == 2u);
  BOOST_TEST(run[0].source == "train-3.tar");
  BOOST_TEST(run[0].samples == 40u);
  BOOST_TEST(run[1].samples == 1u);
  BOOST_TEST(tally.total() == 41u);
}

BOOST_AUTO_TEST_CASE(many_sources_are_rate_limited_but_every_sample_counted) {
  stoker::skip_tally tally;
  size_t n = stoker::skip_tally::max_sources + 5;
  for (size_t i = 0; i < n; ++i)
    tally.add(0, "f" + std::to_string(i) + ".jpg", "corrupt");
  auto lines = tally.take_epoch_lines(0);
  BOOST_REQUIRE(lines.size() == stoker::skip_tally::max_lines + 1);
  BOOST_TEST(lines.back()
             == "and " + std::to_string(n - stoker::skip_tally::max_lines)
                  + " more source(s): "
                  + std::to_string(n - stoker::skip_tally::max_lines)
                  + " sample(s) skipped");
  auto run = tally.sources();
  BOOST_REQUIRE(run.size() == stoker::skip_tally::max_sources + 1);
  BOOST_TEST(run.back().source == "(5 more sources)");
  uint64_t sum = 0;
  for (auto& s : run)
    sum += s.samples;
  BOOST_TEST(sum == n);
}

BOOST_AUTO_TEST_SUITE_END()
