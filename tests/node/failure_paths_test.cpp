#include <boost/test/unit_test.hpp>

#include <chrono>
#include <csignal>
#include <regex>

#include "support/node_processes.hpp"

// What a new user hits when a run cannot go on: shapes that never fit, a
// run that fails while its workers are busy, the report of a failed run, a
// hung head, a worker told to stop. Real processes, as a user runs them.

using namespace stoker_test;

namespace {

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The value of a JSON report's field (numbers and strings, as written).
std::string field(const std::string& json, const std::string& key) {
  std::smatch m;
  std::regex re{"\"" + key + "\": (\"[^\"]*\"|[^,\\n]*)"};
  return std::regex_search(json, m, re) ? std::string{m[1]} : std::string{};
}

// A local run whose every item takes seconds: 1 image of 1024x1024x3 a
// batch, the blur work done `slowdown` times (worker.slowdown; the chain
// blurs such an image in ~15 ms here), a 1 ms sim step.
std::vector<std::string> slow_items(std::vector<std::string> more,
                                    int slowdown = 100) {
  std::vector<std::string> args = {
    "--trainer.device=sim",     "--trainer.sim-step-ms=1",
    "--pipeline.height=1024",   "--pipeline.width=1024",
    "--pipeline.batch-size=1",
    "--worker.slowdown=" + std::to_string(slowdown)};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

using clock_type = std::chrono::steady_clock;

} // namespace

BOOST_AUTO_TEST_SUITE(failure_paths)

BOOST_AUTO_TEST_CASE(shapes_that_never_fit_are_refused_before_any_allocation) {
  auto t0 = clock_type::now();
  auto huge = start_node({"--trainer.device=sim", "--pipeline.height=16384",
                          "--pipeline.width=16384", "--pipeline.channels=4"},
                         tmp_path("huge.log"));
  BOOST_TEST(wait_exit(huge, 30s) == 2);
  auto log = read_file(huge.log);
  BOOST_TEST(caf_internals_in(log).empty(), log);
  BOOST_TEST(has(log, "a batch of 32 images of 16384x16384x4"), log);
  BOOST_TEST(has(log, "128.0 GiB on the wire (float32), more than "
                      "router.max-inflight-bytes = 1073741824"),
             log);
  // With the budget raised, this machine's memory refuses it.
  auto bigger = start_node({"--trainer.device=sim", "--pipeline.height=16384",
                            "--pipeline.width=16384", "--pipeline.channels=4",
                            "--router.max-inflight-bytes=1000000000000"},
                           tmp_path("huge-mem.log"));
  BOOST_TEST(wait_exit(bigger, 30s) == 2);
  log = read_file(bigger.log);
  BOOST_TEST(caf_internals_in(log).empty(), log);
  BOOST_TEST(has(log, "128.0 GiB as float32, more than this machine's "
                      "memory"),
             log);
  BOOST_TEST((clock_type::now() - t0 < 20s)); // nothing was generated
}

BOOST_AUTO_TEST_CASE(a_taken_metrics_port_is_refused_before_any_worker_starts) {
  taken_port taken;
  auto port = std::to_string(taken.port);
  auto t0 = clock_type::now();
  auto run = start_node({"--trainer.device=sim", "--metrics.port=" + port},
                        tmp_path("metrics-taken.log"));
  BOOST_TEST(wait_exit(run, 30s) == 2);
  BOOST_TEST((clock_type::now() - t0 < 10s));
  auto log = read_file(run.log);
  BOOST_TEST(caf_internals_in(log).empty(), log);
  BOOST_TEST(has(log, "refused: metrics.port = " + port + ": cannot listen "
                      "on 127.0.0.1:" + port + " (Address already in use)"),
             log);
  BOOST_TEST(!has(log, "lost"), log); // no worker was started to be lost
}

BOOST_AUTO_TEST_CASE(a_batch_no_worker_can_allocate_fails_the_run_at_once) {
  // 4 images of 16384x16384 (4 GiB) where the process may map 4 GB: both
  // workers run out of memory, and no other could do better.
  auto report = tmp_path("oom.json");
  auto t0 = clock_type::now();
  auto oom = start(STOKER_NODE_BINARY,
                   {"--trainer.device=sim", "--pipeline.height=16384",
                    "--pipeline.width=16384", "--pipeline.channels=1",
                    "--pipeline.batch-size=4", "--pipeline.dataset-size=8",
                    "--router.max-inflight-bytes=8000000000",
                    "--worker.count=2", "--report=" + report},
                   tmp_path("oom.log"), uint64_t{4'000'000'000});
  BOOST_TEST(wait_exit(oom, 60s) == 1);
  BOOST_TEST((clock_type::now() - t0 < 20s)); // not cluster.join-timeout
  auto log = read_file(oom.log);
  BOOST_TEST(caf_internals_in(log).empty(), log);
  BOOST_TEST(has(log, "could not make a batch, and no other worker could do "
                      "better"),
             log);
  BOOST_TEST(has(log, "cannot allocate its 4 images (4.0 GiB as float32): "
                      "out of memory"),
             log);
  auto json = read_file(report);
  BOOST_TEST(field(json, "status") == "\"failed\"", json);
  BOOST_TEST(has(field(json, "first_error"), "out of memory"), json);
  std::remove(report.c_str());
}

BOOST_AUTO_TEST_CASE(a_worker_busy_past_the_heartbeat_timeout_is_not_lost) {
  // Each item takes ~4.5 s, the timeout is one: the worker's pulse says
  // it is alive while it works (a margin a faster machine keeps).
  auto run = start_node(slow_items({"--pipeline.dataset-size=2",
                                    "--worker.count=1",
                                    "--cluster.heartbeat-timeout=1s",
                                    "--cluster.join-timeout=3s"},
                                   300),
                        tmp_path("busy.log"));
  BOOST_TEST(wait_exit(run, 120s) == 0, read_file(run.log));
  auto log = read_file(run.log);
  BOOST_TEST(caf_internals_in(log).empty(), log);
  BOOST_TEST(!has(log, "lost"), log);
  BOOST_TEST(has(log, "run: 2 samples"), log);
}

BOOST_AUTO_TEST_CASE(a_failed_run_exits_promptly_and_writes_its_report) {
  // The trainer cannot write its first checkpoint: the run fails after its
  // first step while both workers are seconds into their next items.
  auto report = tmp_path("failed.json");
  auto run = start_node(slow_items({"--pipeline.dataset-size=8",
                                    "--worker.count=2",
                                    "--trainer.checkpoint-every=1",
                                    "--trainer.checkpoint-dir=/proc/stoker-"
                                    "no-such-dir",
                                    "--report=" + report}),
                        tmp_path("failed.log"));
  BOOST_REQUIRE(wait_for_text(run.log, "run failed", 60s));
  auto failed_at = clock_type::now();
  BOOST_TEST(wait_exit(run, 30s) == 1);
  // A local run waits neither for a trainer to come back nor for its
  // workers to finish what nothing will use.
  BOOST_TEST((clock_type::now() - failed_at < 6s));
  auto log = read_file(run.log);
  BOOST_TEST(caf_internals_in(log).empty(), log);
  BOOST_TEST(has(log, "stoker-node: run failed: the trainer exited before "
                      "the run ended: checkpoint: cannot create "
                      "/proc/stoker-no-such-dir/"),
             log);
  BOOST_TEST(!has(log, "waiting up to"), log);
  auto json = read_file(report);
  BOOST_TEST(field(json, "status") == "\"failed\"", json);
  BOOST_TEST(has(field(json, "first_error"), "cannot create"), json);
  auto delivered = std::stoi(field(json, "samples_delivered"));
  auto missing = std::stoi(field(json, "missing"));
  BOOST_TEST(delivered >= 1); // the step before the checkpoint
  BOOST_TEST(delivered + missing == 8, json);
  std::remove(report.c_str());
}

BOOST_AUTO_TEST_CASE(a_hung_head_is_noticed_by_every_node) {
  auto head = start_head(
    "hung", with_small({"--cluster.nodes=[\"t-0:trainer\", \"w-a:worker:1\"]",
                        "--pipeline.dataset-size=640000",
                        "--pipeline.batch-size=16",
                        "--trainer.sim-step-ms=5",
                        "--cluster.heartbeat-timeout=2s"}));
  auto trainer = start_member(head.at, "hung", "trainer", "t-0",
                              with_small({}));
  auto worker = start_member(head.at, "hung", "worker", "w-a");
  BOOST_REQUIRE(wait_for_text(head.proc.log, "running", 30s));
  ::kill(head.proc.pid, SIGSTOP); // alive, connections open, silent
  auto t0 = clock_type::now();
  BOOST_TEST(wait_exit(trainer, 30s) == 1);
  BOOST_TEST(wait_exit(worker, 30s) == 1);
  BOOST_TEST((clock_type::now() - t0 < 15s));
  auto says = "the head at 127.0.0.1:" + std::to_string(head.port)
              + " has been silent for 2000 ms (cluster.heartbeat-timeout)";
  BOOST_TEST(has(read_file(trainer.log), says), read_file(trainer.log));
  BOOST_TEST(has(read_file(worker.log), says), read_file(worker.log));
  ::kill(head.proc.pid, SIGKILL);
  wait_exit(head.proc, 5s);
}

BOOST_AUTO_TEST_CASE(a_worker_told_to_stop_neither_falls_back_nor_says_so) {
  // The trainer dies mid-run (no checkpoints) while the worker is seconds
  // into its first item: the head fails the run and tells the worker node
  // to stop; the batch the worker then cannot send is dropped without a
  // word (it was told to stop), not sent another way.
  auto head = start_head(
    "stopped",
    slow_items({"--cluster.nodes=[\"t-0:trainer\", \"w-a:worker:1\"]",
                "--pipeline.dataset-size=64"}));
  auto trainer = start_member(head.at, "stopped", "trainer", "t-0",
                              {"--trainer.device=sim"});
  // worker.slowdown is the node's own: ~3 s an item here (the blur chain
  // takes ~15 ms a 1024x1024 image), which ends after the head's shutdown
  // reaches the node and before the node stops waiting for its actors
  // (5 s).
  auto worker = start_member(head.at, "stopped", "worker", "w-a",
                             {"--worker.count=1", "--worker.slowdown=200"});
  BOOST_REQUIRE(wait_for_text(head.proc.log, "running", 30s));
  ::kill(trainer.pid, SIGKILL); // the worker is into its first item
  wait_exit(trainer, 5s);
  BOOST_TEST(wait_exit(head.proc, 60s) == 1);
  wait_exit(worker, 30s);
  auto log = read_file(worker.log);
  BOOST_TEST(caf_internals_in(log).empty(), log);
  BOOST_TEST(!has(log, "sending batches as CAF messages"), log);
  BOOST_TEST(has(log, "exits"), log);
}

BOOST_AUTO_TEST_SUITE_END()
