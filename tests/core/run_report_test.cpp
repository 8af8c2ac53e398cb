#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "stoker/router_status.hpp"
#include "stoker/errors.hpp"
#include "core/run_report.hpp"

using namespace stoker;

namespace {

worker_stats worker(const std::string& name, uint64_t batches,
                    uint64_t samples, uint64_t busy_ns) {
  worker_stats w;
  w.name = name;
  w.batches = batches;
  w.samples = samples;
  w.busy_ns = busy_ns;
  w.alive_ns = 1000;
  return w;
}

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
  router.finished = true;
  trainer_stats trainer;
  trainer.grouped = true;
  trainer.device = "sim";
  trainer.simulated = true;
  trainer.steps = 4;
  trainer.samples_delivered = 250;
  trainer.unique_samples = 248;
  trainer.duplicates = 2;
  trainer.wait_ns = 1'000'000'000;
  trainer.step_ns = 3'000'000'000;
  std::vector<worker_stats> workers{worker("worker-0", 3, 192, 900),
                                    worker("worker-\"1\"", 1, 64, 500)};
  return make_report(router, trainer, workers);
}

node_usage usage(const std::string& node, const std::string& host,
                 double cpu_s, double wall_s, uint32_t cores, double price) {
  node_usage u;
  u.node = node;
  u.host = host;
  u.cpu_s = cpu_s;
  u.wall_s = wall_s;
  u.cores = cores;
  u.price_per_hour = price;
  return u;
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
                   "copy_mismatches",
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
  trainer.grouped = true;
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

BOOST_AUTO_TEST_CASE(a_groups_ledgers_merge_and_each_rank_has_its_line) {
  router_summary router;
  router.samples_expected = 16;
  router.wall_ns = 1'000'000'000;
  router.plan.samples_dropped = 4;
  router.plan.world = 2;
  auto rank = [](uint32_t r, std::vector<uint8_t> bits) {
    trainer_stats t;
    t.grouped = true;
    t.rank = r;
    t.node = r == 0 ? "t-a" : "t-b";
    t.device = "sim";
    t.steps = 4;
    t.ledger_bits = std::move(bits);
    for (auto byte : t.ledger_bits)
      t.unique_samples += static_cast<uint64_t>(__builtin_popcount(byte));
    t.samples_delivered = t.unique_samples;
    return t;
  };
  // Rank 0 trained samples 0-7, rank 1 samples 7-15: sample 7 twice.
  auto a = rank(0, {0xff, 0x00});
  auto b = rank(1, {0x80, 0xff});
  a.wait_ns = 100'000'000; // 10% idle
  a.step_ns = 800'000'000;
  a.collective_ns = 100'000'000;
  b.wait_ns = 300'000'000; // 30% idle, 50% collective
  b.step_ns = 200'000'000;
  b.collective_ns = 500'000'000;
  auto r = make_report(router, {b, a}, {});
  BOOST_TEST(r.world == 2u);
  BOOST_TEST(r.missing == 0u);
  BOOST_TEST(r.duplicates == 1u); // sample 7, once too many
  BOOST_REQUIRE(r.trainers.size() == 2u);
  BOOST_TEST(r.trainers[0].node == "t-a"); // by rank
  BOOST_TEST(r.trainers[1].collective_fraction == 0.5);
  BOOST_TEST(std::abs(r.accelerator_idle_fraction - 0.2) < 1e-12);
  BOOST_TEST(r.accelerator_idle_max == 0.3);
  BOOST_TEST(r.exposed_data_wait_ms_per_step == 75.0); // 300 ms / 4 steps
  BOOST_TEST(r.slowest_trainer.find("rank 0 on node 't-a'")
               != std::string::npos,
             r.slowest_trainer); // 200 ms compute a step against 50
  BOOST_TEST(r.samples_dropped == 4u);
  auto json = to_json(r);
  BOOST_TEST(json.find("\"trainers\": [") != std::string::npos, json);
  BOOST_TEST(json.find("\"accelerator_idle_max\": 0.3") != std::string::npos);
}

// The report is the group that ran: a trainer its node started beyond the
// group's ranks is no rank (it said "world 3" with an empty rank), and a
// rank that did not answer (a failed run: hung in a collective) is named
// from the router's view, not left out ("world 1, steps 0").
BOOST_AUTO_TEST_CASE(describes_the_group_that_ran_and_no_other_trainer) {
  router_summary router;
  router.samples_expected = 16;
  router.plan.world = 2;
  router.finished = true;
  router.ranks = {rank_summary{"t-a", 5}, rank_summary{"t-b", 4}};
  trainer_stats a;
  a.grouped = true;
  a.node = "t-a";
  a.steps = 5;
  trainer_stats b = a;
  b.rank = 1;
  b.node = "t-b";
  trainer_stats extra; // its node ran one more trainer than the group had
  extra.node = "t-b";
  auto r = make_report(router, {a, b, extra}, {});
  BOOST_TEST(r.world == 2u);
  BOOST_REQUIRE(r.trainers.size() == 2u);
  BOOST_TEST(r.trainers[1].node == "t-b");
  BOOST_TEST(r.trainers[1].answered);
  // A failed run where rank 1 cannot answer and rank 0 can.
  auto failed = make_failed_report(router, {a}, {}, "rank 1 hung");
  BOOST_TEST(failed.world == 2u);
  BOOST_REQUIRE(failed.trainers.size() == 2u);
  BOOST_TEST(failed.trainers[1].node == "t-b");
  BOOST_TEST(!failed.trainers[1].answered);
  BOOST_TEST(failed.trainers[1].steps == 4u); // as the router saw them
  BOOST_TEST(failed.steps == 5u);
  // Neither answers: the steps and nodes are still the group's.
  auto silent = make_failed_report(router, {}, {}, "both hung");
  BOOST_TEST(silent.world == 2u);
  BOOST_REQUIRE(silent.trainers.size() == 2u);
  BOOST_TEST(silent.trainers[0].node == "t-a");
  BOOST_TEST(silent.steps == 5u);
  BOOST_TEST(to_json(silent).find("\"answered\": false") != std::string::npos);
}

// A report asked for mid-run (/api/state, the console's stats --json) says
// the run is running; "ok" only once it ended well.
BOOST_AUTO_TEST_CASE(a_run_that_has_not_ended_is_running_not_ok) {
  router_summary router;
  trainer_stats t;
  t.grouped = true;
  BOOST_TEST(make_report(router, t, {}).status == "running");
  router.finished = true;
  BOOST_TEST(make_report(router, t, {}).status == "ok");
  router.stopped_by = "console: shutdown";
  BOOST_TEST(make_report(router, t, {}).status == "stopped");
}

BOOST_AUTO_TEST_CASE(cost_and_cpu_use_come_per_host_from_the_nodes) {
  stoker::run_report r;
  r.wall_s = 3600.0; // an hour: the cost is the hourly prices
  r.steps = 1000;
  r.samples_delivered = 16000;
  r.accelerator_idle_fraction = 0.25;
  std::vector<trainer_stats> trainers(1);
  trainers[0].usage = usage("gpu-host", "algo-1", 30.0, 100.0, 4, 1.408);
  // Two workers of one node: the node counts once, at its latest figure.
  std::vector<worker_stats> workers(2);
  workers[0].usage = usage("cpu-host", "algo-2", 80.0, 50.0, 16, 0.816);
  workers[1].usage = usage("cpu-host", "algo-2", 160.0, 100.0, 16, 0.816);
  // The head's own process, on the GPU host.
  account_hosts(r, trainers, workers,
                {usage("head", "algo-1", 10.0, 100.0, 4, 1.408)});
  BOOST_REQUIRE_EQUAL(r.hosts.size(), 2u);
  BOOST_TEST(r.hosts[0].host == "algo-1");
  BOOST_TEST(r.hosts[0].nodes.size() == 2u);
  // (30 + 10) s of CPU over 100 s x 4 cores; 160 over 100 x 16.
  BOOST_TEST(r.hosts[0].cpu_utilisation == 0.1,
             boost::test_tools::tolerance(1e-9));
  BOOST_TEST(r.hosts[1].cpu_utilisation == 0.1,
             boost::test_tools::tolerance(1e-9));
  BOOST_TEST(r.trainer_utilisation == 0.75);
  BOOST_TEST(r.cost_usd == 2.224, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(r.cost_per_1000_steps_usd == 2.224,
             boost::test_tools::tolerance(1e-9));
  BOOST_TEST(r.cost_per_1000_samples_usd == 0.139,
             boost::test_tools::tolerance(1e-9));
  BOOST_TEST(r.unpriced_hosts.empty());
  auto json = to_json(r);
  BOOST_TEST(json.find("\"cost_usd\": 2.224") != std::string::npos, json);
  BOOST_TEST(json.find("{\"host\": \"algo-2\", \"cpu_utilisation\": 0.1, "
                       "\"price_per_hour\": 0.816, \"nodes\": "
                       "[\"cpu-host\"]}")
               != std::string::npos,
             json);
  // No price anywhere: no cost, and the hosts are named.
  trainers[0].usage.price_per_hour = 0.0;
  for (auto& w : workers)
    w.usage.price_per_hour = 0.0;
  account_hosts(r, trainers, workers, {});
  BOOST_TEST(std::isnan(r.cost_usd));
  BOOST_TEST(r.unpriced_hosts.size() == 2u);
  BOOST_TEST(to_json(r).find("\"cost_usd\": null") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(start_up_and_the_steady_rate_are_apart) {
  router_summary router;
  router.wall_ns = 2'000'000'000;
  router.samples_acked = 256;
  router.first_ack_ns = 500'000'000; // the first batch after 0.5 s
  router.first_ack_samples = 64;
  trainer_stats trainer;
  trainer.grouped = true;
  trainer.samples_delivered = trainer.unique_samples = 256;
  auto r = make_report(router, trainer, {});
  BOOST_TEST(r.time_to_first_batch_s == 0.5);
  // 192 samples in the 1.5 s after it, where the whole run's rate is 128.
  BOOST_TEST(r.steady_throughput_sps == 128.0);
  BOOST_TEST(to_json(r).find("\"time_to_first_batch_s\": 0.5,")
             != std::string::npos);
  router.first_ack_ns = 0; // no batch acknowledged: no steady rate
  BOOST_TEST(make_report(router, trainer, {}).steady_throughput_sps == 0.0);
}

BOOST_AUTO_TEST_CASE(a_resumed_run_counts_its_own_samples_and_steps) {
  // Two ranks resumed at step 15 (240 samples each before), then 5 more
  // steps of 16 each in 0.8 s, each step 200 ms of compute.
  router_summary router;
  router.plan.world = 2;
  router.samples_expected = 640;
  router.wall_ns = 800'000'000;
  router.finished = true;
  std::vector<trainer_stats> ranks(2);
  for (uint32_t i = 0; i < 2; ++i) {
    auto& t = ranks[i];
    t.grouped = true;
    t.rank = i;
    t.steps = 20;
    t.resumed_steps = 15;
    t.resumed_samples = 240;
    t.samples_delivered = t.unique_samples = 320;
    t.step_ns = 5 * 200'000'000ull;
    t.ledger_bits.assign(80, 0);
    for (uint64_t k = 0; k < 320; ++k) { // rank i: ids 320 i .. 320 i + 319
      auto id = 320 * i + k;
      t.ledger_bits[id / 8] |= static_cast<uint8_t>(1u << (id % 8));
    }
  }
  auto r = make_report(router, ranks, {});
  BOOST_TEST(r.samples_delivered == 640u);
  BOOST_TEST(r.samples_this_run == 160u);
  BOOST_TEST(r.samples_before_resume == 480u); // the group's, not a rank's
  BOOST_TEST(r.throughput_sps == 200.0);       // 160 / 0.8 s
  BOOST_REQUIRE(r.trainers.size() == 2u);
  BOOST_TEST(r.trainers[0].compute_ms_per_step == 200.0); // not 1000 / 20
  BOOST_TEST(r.missing == 0u);
}

BOOST_AUTO_TEST_CASE(skipped_samples_are_handled_not_delivered_and_listed) {
  router_summary router;
  router.plan.world = 2;
  router.samples_expected = 16;
  router.finished = true;
  std::vector<trainer_stats> ranks(2);
  for (uint32_t i = 0; i < 2; ++i) {
    auto& t = ranks[i];
    t.grouped = true;
    t.rank = i;
    t.unique_samples = 8;   // ids 8 i .. 8 i + 7
    t.skipped_unique = 1;   // one of them skipped
    t.samples_delivered = 7;
    t.skipped_samples = 1;
    t.skipped_sources = {skip_source{"s.tar", 1, "s.tar:(bytes 0-512): x"}};
    t.ledger_bits.assign(2, 0);
    t.ledger_bits[i] = 0xff;
  }
  auto r = make_report(router, ranks, {});
  BOOST_TEST(r.samples_delivered == 14u);
  BOOST_TEST(r.missing == 0u);
  BOOST_TEST(r.status == "ok");
  BOOST_TEST(r.skipped_files == 2u);
  BOOST_REQUIRE(r.skipped_sources.size() == 1u); // one source, both ranks'
  BOOST_TEST(r.skipped_sources[0].samples == 2u);
  BOOST_TEST(r.trainers[0].samples == 7u);
  auto json = to_json(r);
  BOOST_TEST(json.find("\"skipped_sources\": [\n    {\"source\": \"s.tar\", "
                       "\"samples\": 2, ")
               != std::string::npos,
             json);
}

BOOST_AUTO_TEST_CASE(a_lost_worker_keeps_what_the_head_saw_of_it) {
  router_summary router;
  router.samples_expected = 256;
  router.finished = true;
  router.lost_workers = {"w-b/0"};
  worker_stats seen = worker("w-b/0", 7, 112, 500);
  seen.decoded_files = 112;
  seen.decode_ns = 112'000'000;
  router.lost_worker_stats = {seen};
  trainer_stats trainer;
  trainer.grouped = true;
  trainer.samples_delivered = trainer.unique_samples = 256;
  auto answered = worker("w-a/0", 9, 144, 900);
  answered.decoded_files = 144;
  answered.decode_ns = 144'000'000;
  auto r = make_report(router, trainer, {answered});
  BOOST_REQUIRE(r.workers.size() == 2u);
  BOOST_TEST(r.workers[1].name == "w-b/0");
  BOOST_TEST(r.workers[1].batches == 7u);
  BOOST_TEST(r.workers[1].lost);
  BOOST_TEST(!r.workers[0].lost);
  BOOST_TEST(r.decoded_files == 256u);
  // One that answered after all is not listed twice.
  auto both = make_report(router, trainer, {answered, seen});
  BOOST_TEST(both.workers.size() == 2u);
  BOOST_TEST(to_json(r).find("\"name\": \"w-b/0\", \"batches\": 7, "
                             "\"samples\": 112,")
             != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
