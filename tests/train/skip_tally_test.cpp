#include <boost/test/unit_test.hpp>

#include "stoker/errors.hpp"
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

BOOST_AUTO_TEST_CASE(a_transform_failing_past_the_share_fails_the_run) {
  std::vector<std::string> none;
  // 1 sample in 200 fails a Python stage: 0.5% stays under 1%.
  failure_share under{0.01};
  for (int b = 0; b < 50; ++b) {
    std::vector<std::string> sources{"transform python(m:f)"};
    std::vector<std::string> reasons{"sample " + std::to_string(b)
                                     + ": python(m:f) raised ValueError: x"};
    BOOST_TEST(!under.add(199, sources, reasons), "batch " << b);
  }
  BOOST_TEST(under.failed() == 50u);
  // A damaged file is the data's skip, not the transform's: not counted.
  failure_share files{0.01};
  std::vector<std::string> shard(64, "train-000003.tar");
  BOOST_TEST(!files.add(0, shard, none));
  BOOST_TEST(files.failed() == 0u);
  // Every sample fails: the first batch of 64 ends the run, named.
  failure_share every{0.01};
  std::vector<std::string> sources(64, "transform python(m:boom)");
  std::vector<std::string> reasons(
    64, "sample 7: python(m:boom) raised ValueError: too dark");
  auto err = every.add(0, sources, reasons);
  BOOST_REQUIRE(err);
  BOOST_TEST(is(err, errc::run_failure));
  BOOST_TEST(describe(err)
               == "python(m:boom) failed on 64 of 64 samples so far "
                  "(100.0%), past pipeline.max-failed-share = 0.01; the "
                  "first: sample 7: python(m:boom) raised ValueError: too "
                  "dark",
             describe(err));
  // A few early failures do not judge a run before 1,000 samples.
  failure_share early{0.01};
  std::vector<std::string> three(3, "transform python(m:f)");
  BOOST_TEST(!early.add(61, three, none));
  // Past 1,000 samples the share itself decides: 3 + 20 of 1,104.
  std::vector<std::string> twenty(20, "transform python(m:f)");
  auto late = early.add(1020, twenty, none);
  BOOST_REQUIRE(late);
  BOOST_TEST(describe(late).find("failed on 23 of 1104 samples so far "
                                 "(2.1%)")
               != std::string::npos,
             describe(late));
}

BOOST_AUTO_TEST_SUITE_END()
