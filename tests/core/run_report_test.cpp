#include <boost/test/unit_test.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "stoker/errors.hpp"
#include "core/run_report.hpp"

using namespace stoker;

namespace {

run_report example() {
  router_summary router;
  router.policy = "least-loaded";
  router.batches_leased = 4;
  router.batches_acked = 4;
  router.samples_expected = 256;
  router.wall_ns = 2'000'000'000;
  router.window = 6;
  router.window_max = 27;
  router.window_changes = 1;
  router.window_last_change = "widened 4 -> 6: trainer idle 5.0% > target 2.0%";
  trainer_stats trainer;
  trainer.device = "sim";
  trainer.simulated = true;
  trainer.steps = 4;
  trainer.samples_delivered = 250;
  trainer.unique_samples = 248;
  trainer.duplicates = 2;
  trainer.wait_ns = 1'000'000'000;
  trainer.step_ns = 3'000'000'000;
  std::vector<worker_stats> workers{{"worker-0", 3, 192, 900, 1000},
                                    {"worker-\"1\"", 1, 64, 500, 1000}};
  return make_report(router, trainer, workers);
}

} // namespace

BOOST_AUTO_TEST_SUITE(run_report)

BOOST_AUTO_TEST_CASE(combines_router_trainer_and_worker_counts) {
  auto r = example();
  BOOST_TEST(r.samples_delivered == 250u);
  BOOST_TEST(r.duplicates == 2u);
  BOOST_TEST(r.missing == 8u); // 256 expected, 248 unique
  BOOST_TEST(r.wall_s == 2.0);
  BOOST_TEST(r.throughput_sps == 125.0);
  BOOST_TEST(r.accelerator_idle_fraction == 0.25);
  BOOST_TEST(r.workers[0].busy_fraction == 0.9);
  BOOST_TEST(r.batches_leased == 4u);
  BOOST_TEST(r.batches_acked == 4u);
  BOOST_TEST(r.window == 6u);
  BOOST_TEST(r.window_max == 27u);
  BOOST_TEST(!r.exactly_once());
}

BOOST_AUTO_TEST_CASE(json_has_every_documented_key) {
  auto json = to_json(example());
  for (auto key : {"samples_delivered", "duplicates", "missing", "steps",
                   "wall_s", "throughput_sps", "accelerator_idle_fraction",
                   "trainer_device", "policy", "batches_leased",
                   "batches_acked", "batches_hedged", "dropped_copies",
                   "window", "window_max", "window_changes",
                   "window_last_change", "placement", "gpu_share",
                   "batches_gpu_blur", "gpu_blurred_batches",
                   "placement_changes", "placement_last_change",
                   "placement_reason", "workers", "name", "batches",
                   "busy_fraction"})
    BOOST_TEST(json.find("\"" + std::string{key} + "\":") != std::string::npos,
               key);
  BOOST_TEST(json.find("\"worker-\\\"1\\\"\"") != std::string::npos);
  BOOST_TEST(json.find("\"missing\": 8,") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(carries_the_placement_and_its_reasons) {
  router_summary router;
  router.placement = "auto";
  router.gpu_share = 0.25;
  router.batches_gpu_blur = 12;
  router.placement_changes = 2;
  router.placement_last_change = "GPU share 12.5% -> 25.0%: saturated";
  router.placement_reason = "auto: holding";
  trainer_stats trainer;
  trainer.gpu_blurred_batches = 11;
  auto json = to_json(make_report(router, trainer, {}));
  BOOST_TEST(json.find("\"placement\": \"auto\",") != std::string::npos);
  BOOST_TEST(json.find("\"gpu_share\": 0.25,") != std::string::npos);
  BOOST_TEST(json.find("\"batches_gpu_blur\": 12,") != std::string::npos);
  BOOST_TEST(json.find("\"gpu_blurred_batches\": 11,") != std::string::npos);
  BOOST_TEST(json.find("\"placement_last_change\": \"GPU share 12.5% -> "
                       "25.0%: saturated\",")
             != std::string::npos);
}

BOOST_AUTO_TEST_CASE(writes_the_file_whole) {
  auto path = std::string{"/tmp/stoker-report-test-"}
              + std::to_string(::getpid()) + ".json";
  BOOST_REQUIRE(!write_report(example(), path));
  std::ifstream in{path};
  std::stringstream text;
  text << in.rdbuf();
  BOOST_TEST(text.str() == to_json(example()));
  std::ifstream tmp{path + ".tmp"};
  BOOST_TEST(!tmp.is_open()); // renamed into place
  std::remove(path.c_str());
}

BOOST_AUTO_TEST_CASE(names_the_path_it_cannot_write) {
  auto err = write_report(example(), "/nonexistent-dir/report.json");
  BOOST_TEST(is(err, errc::io_failure));
  BOOST_TEST(describe(err).find("/nonexistent-dir/report.json")
             != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
