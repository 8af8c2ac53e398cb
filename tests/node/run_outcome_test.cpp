#include <boost/test/unit_test.hpp>

#include "stoker/errors.hpp"
#include "node/run_outcome.hpp"

// judge_run: the one verdict stoker-node's exit code and a Python loop's
// RunFailed both stand on.

using namespace stoker;

namespace {

run_report report(const std::string& status, uint64_t missing,
                  uint64_t duplicates, uint64_t rejected = 0) {
  run_report r;
  r.status = status;
  r.missing = missing;
  r.duplicates = duplicates;
  r.rejected_batches = rejected;
  if (status == "stopped")
    r.stopped_by = "the console's stop";
  if (status == "failed")
    r.first_error = "trainer rank 1 on node 't-1' exited";
  return r;
}

} // namespace

BOOST_AUTO_TEST_SUITE(run_outcome)

BOOST_AUTO_TEST_CASE(every_sample_once_is_ok_and_exits_0) {
  auto j = judge_run(report("ok", 0, 0));
  BOOST_TEST((j.verdict == run_verdict::ok));
  BOOST_TEST(j.exit_code() == 0);
  BOOST_TEST(j.reason.empty());
}

BOOST_AUTO_TEST_CASE(a_stopped_run_is_not_missing_what_it_never_leased) {
  auto j = judge_run(report("stopped", 120, 0));
  BOOST_TEST((j.verdict == run_verdict::stopped));
  BOOST_TEST(j.exit_code() == 0);
}

BOOST_AUTO_TEST_CASE(a_stopped_run_that_trained_a_sample_twice_failed) {
  for (auto r : {report("stopped", 120, 1), report("stopped", 120, 0, 2)}) {
    auto j = judge_run(r);
    BOOST_TEST((j.verdict == run_verdict::failed));
    BOOST_TEST(j.exit_code() == 1);
    BOOST_TEST(j.reason.find("delivery was not exactly once (0 missing")
                 == 0u,
               j.reason);
  }
}

BOOST_AUTO_TEST_CASE(a_failed_run_says_its_first_error) {
  auto j = judge_run(report("failed", 40, 0));
  BOOST_TEST((j.verdict == run_verdict::failed));
  BOOST_TEST(j.reason == "trainer rank 1 on node 't-1' exited");
  BOOST_TEST(run_failure_text(report("failed", 40, 0)) == j.reason);
}

BOOST_AUTO_TEST_CASE(an_ok_report_with_samples_missing_failed) {
  auto j = judge_run(report("ok", 3, 0));
  BOOST_TEST((j.verdict == run_verdict::failed));
  BOOST_TEST(j.reason.find("3 missing") != std::string::npos, j.reason);
}

BOOST_AUTO_TEST_CASE(a_setting_that_cannot_work_is_refused_with_exit_2) {
  caf::expected<run_report> refused{
    make_error(errc::invalid_config, "pipeline.placement = \"gpu\": ...")};
  auto j = judge_run(refused);
  BOOST_TEST((j.verdict == run_verdict::refused));
  BOOST_TEST(j.exit_code() == 2);
  BOOST_TEST(j.reason == "pipeline.placement = \"gpu\": ...");
  BOOST_TEST(run_failure_text(refused).empty());
  caf::expected<run_report> broke{
    make_error(errc::trainer_failure, "the trainer's step threw")};
  BOOST_TEST(judge_run(broke).exit_code() == 1);
  BOOST_TEST(run_failure_text(broke) == "the trainer's step threw");
}

BOOST_AUTO_TEST_SUITE_END()
