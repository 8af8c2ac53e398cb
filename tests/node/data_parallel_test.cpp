#include <boost/test/unit_test.hpp>

#include <csignal>
#include <regex>

#include "stoker/errors.hpp"

#include "support/local_runs.hpp"
#include "support/node_processes.hpp"
#include "support/real_data.hpp"

// Several trainers as one data-parallel group: in one process (the local
// role's trainer.count) and as separate trainer nodes of a cluster.

using namespace stoker;
using namespace stoker_test;

namespace {

caf::expected<run_report> run(std::vector<std::string> args) {
  return run_local_with(args);
}

// 1000 samples in batches of 24 for two sim trainers: 20 global steps of 48
// and a tail of 40.
std::vector<std::string> two_sim_trainers(const std::string& last_batch) {
  return {"--trainer.device=sim", "--trainer.sim-step-ms=1",
          "--trainer.count=2", "--trainer.log-every=1000",
          "--pipeline.height=32", "--pipeline.width=32",
          "--pipeline.dataset-size=1000", "--pipeline.batch-size=24",
          "--pipeline.epochs=2", "--pipeline.last-batch=" + last_batch,
          "--worker.count=2"};
}

void require_equal_steps(const run_report& r, uint64_t steps) {
  BOOST_REQUIRE(r.trainers.size() == 2u);
  for (auto& t : r.trainers)
    BOOST_TEST(t.steps == steps, "rank " << t.rank);
  BOOST_TEST(r.steps == steps);
  BOOST_TEST(r.world == 2u);
}

} // namespace

BOOST_AUTO_TEST_SUITE(data_parallel)

BOOST_AUTO_TEST_CASE(partial_splits_the_tail_evenly_and_delivers_it_all) {
  auto r = run(two_sim_trainers("partial"));
  BOOST_REQUIRE_MESSAGE(r, why(r));
  BOOST_TEST(r->exactly_once());
  BOOST_TEST(r->samples_delivered == 2000u);
  require_equal_steps(*r, 2u * 21);
  BOOST_TEST(r->trainers[0].samples == 1000u); // 20 x 24 + 20, twice
  BOOST_TEST(r->samples_dropped == 0u);
}

BOOST_AUTO_TEST_CASE(drop_leaves_out_the_tail_and_counts_it) {
  auto r = run(two_sim_trainers("drop"));
  BOOST_REQUIRE_MESSAGE(r, why(r));
  BOOST_TEST(r->exactly_once());
  BOOST_TEST(r->samples_delivered == 2u * 960);
  BOOST_TEST(r->samples_dropped == 2u * 40);
  require_equal_steps(*r, 2u * 20);
}

BOOST_AUTO_TEST_CASE(pad_fills_the_tail_and_counts_each_sample_once) {
  auto r = run(two_sim_trainers("pad"));
  BOOST_REQUIRE_MESSAGE(r, why(r));
  BOOST_TEST(r->exactly_once());
  BOOST_TEST(r->samples_padded == 2u * 8);
  BOOST_TEST(r->duplicates == 0u);
  require_equal_steps(*r, 2u * 21);
}

BOOST_AUTO_TEST_CASE(drop_with_no_full_step_is_refused_by_name) {
  auto args = two_sim_trainers("drop");
  args.push_back("--pipeline.dataset-size=40"); // < 2 x 24
  auto r = run(args);
  BOOST_REQUIRE(!r);
  BOOST_TEST(why(r).find("pipeline.last-batch = \"drop\"") != std::string::npos,
             why(r));
}

// A group saves one checkpoint (rank 0's file: the model and every rank's
// cursor); the same run again with --resume goes on from it: each rank
// takes its own cursor, and nothing is trained twice.
BOOST_AUTO_TEST_CASE(a_group_resumes_from_rank_0s_checkpoint) {
  scratch_dir dir{"dp-ckpt"};
  auto args = two_sim_trainers("partial");
  args.push_back("--trainer.checkpoint-dir=" + dir.path);
  args.push_back("--trainer.checkpoint-every=8");
  auto first = run(args);
  BOOST_REQUIRE_MESSAGE(first, why(first));
  BOOST_TEST(first->exactly_once());
  args.push_back("--resume");
  auto again = run(args);
  BOOST_REQUIRE_MESSAGE(again, why(again));
  BOOST_TEST(again->exactly_once());
  // 42 steps; the last checkpoint at step 40: two steps trained again,
  // counted once.
  require_equal_steps(*again, 42);
  BOOST_TEST(again->samples_delivered == 2000u);
  BOOST_TEST(again->batches_resumed == 2u * 40); // skipped: in the file
  BOOST_TEST(again->batches_leased == 2u * 2);   // steps 41 and 42
}

// A group's checkpoint holds each rank's cursor of a plan made for its
// size: resumed by another number of trainers, some batches would be
// trained twice (one trainer took rank 0's cursor only and reported
// "duplicates 0"). Refused by name before anything starts, for fewer and
// for more trainers.
BOOST_AUTO_TEST_CASE(another_group_size_is_refused_before_the_run_starts) {
  scratch_dir dir{"dp-ckpt-size"};
  auto args = two_sim_trainers("partial");
  args.push_back("--trainer.checkpoint-dir=" + dir.path);
  args.push_back("--trainer.checkpoint-every=8");
  auto first = run(args);
  BOOST_REQUIRE_MESSAGE(first, why(first));
  args.push_back("--resume");
  for (auto count : {"1", "3"}) {
    auto again = args;
    again.push_back(std::string{"--trainer.count="} + count);
    auto r = run(again);
    BOOST_REQUIRE_MESSAGE(!r, "count " << count << " resumed");
    BOOST_TEST(is(r.error(), errc::invalid_config), why(r));
    BOOST_TEST(why(r).find("saved by a data-parallel group of 2 trainer(s), "
                           "this run has "
                           + std::string{count})
                 != std::string::npos,
               why(r));
  }
}

// The same in a cluster: a lone trainer node started with --resume on a
// two-rank group's checkpoint. The head refuses the run once the group
// would form, before leasing anything, and every node exits 2 (no trainer
// restarts).
BOOST_AUTO_TEST_CASE(a_cluster_refuses_a_checkpoint_of_another_group_size) {
  scratch_dir dir{"dp-ckpt-node"};
  std::vector<std::string> run_args = {
    "--pipeline.dataset-size=1000", "--pipeline.batch-size=24",
    "--pipeline.epochs=2", "--pipeline.last-batch=partial"};
  auto local = two_sim_trainers("partial");
  local.push_back("--trainer.checkpoint-dir=" + dir.path);
  local.push_back("--trainer.checkpoint-every=8");
  auto first = run(local);
  BOOST_REQUIRE_MESSAGE(first, why(first));
  auto head_args = with_small(run_args);
  head_args.push_back("--cluster.nodes=[\"t:trainer\", \"w:worker:1\"]");
  auto head = start_head("dp-size", head_args);
  auto trainer_args = with_small({"--trainer.checkpoint-dir=" + dir.path,
                                  "--trainer.checkpoint-every=8",
                                  "--resume"});
  auto t = start_member(head.at, "dp-size", "trainer", "t", trainer_args);
  auto w = start_member(head.at, "dp-size", "worker", "w", small);
  BOOST_TEST(wait_exit(head.proc, 60s) == 2, read_file(head.proc.log));
  BOOST_TEST(read_file(head.proc.log)
                 .find("the checkpoint of trainer node 't' (rank 0's "
                       "trainer.checkpoint-dir, the group's) was saved by a "
                       "data-parallel group of 2 trainer(s), this run has 1")
               != std::string::npos,
             read_file(head.proc.log));
  BOOST_TEST(wait_exit(t, 20s) == 2, read_file(t.log));
  BOOST_TEST(read_file(t.log).find("the head refused the run")
               != std::string::npos,
             read_file(t.log));
  BOOST_TEST(wait_exit(w, 20s) != -1);
}

// kill -9 of one trainer node of a group that saves checkpoints, then the
// node started again with --resume: the group goes back to rank 0's last
// checkpoint (the surviving node starts its trainer again) and every
// sample is trained once.
BOOST_AUTO_TEST_CASE(a_killed_rank_restarted_with_resume_resumes_the_group) {
  scratch_dir a{"dp-resume-a"};
  scratch_dir b{"dp-resume-b"};
  auto report = tmp_path("dp-resume.json");
  auto common = with_small({"--trainer.checkpoint-every=10",
                            "--trainer.sim-step-ms=10",
                            "--trainer.log-every=10",
                            "--trainer.collective-timeout=15s"});
  auto head_args = common;
  head_args.insert(head_args.end(),
                   {"--cluster.nodes=[\"t-a:trainer\", \"t-b:trainer\", "
                    "\"w-a:worker:2\"]",
                    "--pipeline.dataset-size=4000", "--pipeline.batch-size=8",
                    "--report=" + report});
  auto head = start_head("dp-resume", head_args);
  auto with_dir = [&](const std::string& d) {
    auto args = common;
    args.push_back("--trainer.checkpoint-dir=" + d);
    return args;
  };
  auto ta = start_member(head.at, "dp-resume", "trainer", "t-a",
                         with_dir(a.path));
  auto tb = start_member(head.at, "dp-resume", "trainer", "t-b",
                         with_dir(b.path));
  auto wa = start_member(head.at, "dp-resume", "worker", "w-a", common);
  BOOST_REQUIRE_MESSAGE(wait_for_text(ta.log, "checkpoint: step 20", 60s),
                        read_file(ta.log) << read_file(head.proc.log));
  ::kill(tb.pid, SIGKILL);
  wait_exit(tb, 5s);
  BOOST_REQUIRE_MESSAGE(wait_for_text(head.proc.log,
                                      "goes back to its last checkpoint",
                                      30s),
                        read_file(head.proc.log));
  auto args = with_dir(b.path);
  args.push_back("--resume");
  // One trainer more than the node had: the extra one is no rank of the
  // group, gets no work and is not in the report.
  args.push_back("--trainer.count=2");
  auto tb2 = start_member(head.at, "dp-resume", "trainer", "t-b", args);
  BOOST_TEST(wait_exit(head.proc, 120s) == 0, read_file(head.proc.log)
                                                 << read_file(ta.log)
                                                 << read_file(tb2.log));
  for (auto* c : {&ta, &tb2, &wa})
    wait_exit(*c, 20s);
  auto json = read_file(report);
  BOOST_TEST(report_number(json, "missing") == 0, json);
  BOOST_TEST(report_number(json, "duplicates") == 0, json);
  BOOST_TEST(report_number(json, "world") == 2, json);
  std::regex entry{R"re("rank": \d+, "node")re"};
  BOOST_TEST(std::distance(std::sregex_iterator{json.begin(), json.end(),
                                                entry},
                           std::sregex_iterator{})
               == 2,
             json);
  BOOST_TEST(read_file(head.proc.log).find("t-b/1 is not a rank of the group")
               != std::string::npos,
             read_file(head.proc.log));
  BOOST_TEST(read_file(ta.log).find("rank 0 resumed from the group's "
                                    "checkpoint")
               != std::string::npos,
             read_file(ta.log));
  std::remove(report.c_str());
}

// Head, two trainer nodes and two worker nodes as processes: the CNN on a
// Fashion-MNIST subset, gradients all-reduced through gloo.
BOOST_AUTO_TEST_CASE(a_cluster_of_two_trainer_nodes_trains_the_cnn) {
  require_fashion_mnist();
  auto report = tmp_path("dp-cnn.json");
  auto head = start_head(
    "dp-cnn",
    {"--config-file=" STOKER_SOURCE_DIR "/config/fashion-mnist.ini",
     "--cluster.nodes=[\"t-a:trainer\", \"t-b:trainer\", \"w-a:worker:1\", "
     "\"w-b:worker:1\"]",
     "--pipeline.dataset-size=3200", "--pipeline.eval-size=1000",
     "--pipeline.batch-size=32", "--pipeline.epochs=2",
     "--trainer.log-every=1000", "--report=" + report});
  std::vector<std::string> cpu = {"--trainer.device=cpu",
                                  "--trainer.threads=1"};
  auto ta = start_member(head.at, "dp-cnn", "trainer", "t-a", cpu);
  auto tb = start_member(head.at, "dp-cnn", "trainer", "t-b", cpu);
  auto wa = start_member(head.at, "dp-cnn", "worker", "w-a");
  auto wb = start_member(head.at, "dp-cnn", "worker", "w-b");
  BOOST_TEST(wait_exit(head.proc, 300s) == 0, read_file(head.proc.log));
  for (auto* c : {&ta, &tb, &wa, &wb})
    BOOST_TEST(wait_exit(*c, 20s) == 0, read_file(c->log));
  auto json = read_file(report);
  BOOST_TEST(report_number(json, "missing") == 0, json);
  BOOST_TEST(report_number(json, "duplicates") == 0);
  BOOST_TEST(report_number(json, "world") == 2);
  BOOST_TEST(report_number(json, "steps") == 100); // 3200 / (2 x 32) per epoch
  BOOST_TEST(json.find("\"rank\": 1, \"node\": \"t-b\", \"device\": \"cpu\", "
                       "\"steps\": 100")
               != std::string::npos);
  BOOST_TEST_MESSAGE("test accuracy " << report_number(json, "test_accuracy"));
  BOOST_TEST(report_number(json, "test_accuracy") > 0.5); // chance is 0.10
  std::remove(report.c_str());
}

// kill -9 of one trainer in the middle of a run without checkpoints: the
// run ends at once, naming the rank and its node; nobody hangs in a
// collective.
BOOST_AUTO_TEST_CASE(a_killed_trainer_ends_the_run_naming_its_rank) {
  auto head = start_head(
    "dp-kill",
    with_small({"--cluster.nodes=[\"t-a:trainer\", \"t-b:trainer\", "
                "\"w-a:worker:2\"]",
                "--pipeline.dataset-size=100000", "--pipeline.batch-size=8",
                "--trainer.sim-step-ms=10", "--trainer.log-every=10",
                "--trainer.collective-timeout=15s"}));
  auto ta = start_member(head.at, "dp-kill", "trainer", "t-a", small);
  auto tb = start_member(head.at, "dp-kill", "trainer", "t-b", small);
  auto wa = start_member(head.at, "dp-kill", "worker", "w-a", small);
  BOOST_REQUIRE_MESSAGE(wait_for_text(ta.log, "Iteration 20", 60s),
                        read_file(ta.log) << read_file(head.proc.log));
  ::kill(tb.pid, SIGKILL);
  auto t0 = std::chrono::steady_clock::now();
  BOOST_TEST(wait_exit(head.proc, 30s) == 1);
  BOOST_TEST(read_file(head.proc.log)
                 .find("trainer rank 1 on node 't-b' exited before the run "
                       "ended")
               != std::string::npos,
             read_file(head.proc.log));
  BOOST_TEST(wait_exit(ta, 30s) != -1, read_file(ta.log));
  BOOST_TEST(wait_exit(wa, 30s) != -1, read_file(wa.log));
  BOOST_TEST((std::chrono::steady_clock::now() - t0 < 40s));
  wait_exit(tb, 1s);
}

// kill -STOP of one rank: its process keeps its connections open and the
// other rank waits for it in a collective. The run fails naming the rank
// that stopped answering (its node's heartbeats stopped), not the one that
// waited and timed out.
BOOST_AUTO_TEST_CASE(a_stopped_rank_is_named_not_the_one_waiting_for_it) {
  auto args = with_small({"--cluster.nodes=[\"t-a:trainer\", "
                          "\"t-b:trainer\", \"w-a:worker:2\"]",
                          "--pipeline.dataset-size=100000",
                          "--pipeline.batch-size=8",
                          "--trainer.sim-step-ms=10", "--trainer.log-every=10",
                          "--cluster.heartbeat-timeout=2s",
                          "--trainer.collective-timeout=30s"});
  auto head = start_head("dp-stop", args);
  auto member = with_small({"--trainer.collective-timeout=30s"});
  auto ta = start_member(head.at, "dp-stop", "trainer", "t-a", member);
  auto tb = start_member(head.at, "dp-stop", "trainer", "t-b", member);
  auto wa = start_member(head.at, "dp-stop", "worker", "w-a", small);
  BOOST_REQUIRE_MESSAGE(wait_for_text(ta.log, "Iteration 20", 60s),
                        read_file(ta.log) << read_file(head.proc.log));
  ::kill(tb.pid, SIGSTOP);
  auto t0 = std::chrono::steady_clock::now();
  BOOST_TEST(wait_exit(head.proc, 25s) == 1, read_file(head.proc.log));
  auto log = read_file(head.proc.log);
  BOOST_TEST(log.find("trainer rank 1 on node 't-b' stopped answering")
               != std::string::npos,
             log);
  BOOST_TEST(log.find("rank 0 on node 't-a' exited") == std::string::npos,
             log);
  BOOST_TEST((std::chrono::steady_clock::now() - t0 < 20s)); // not 30 s
  ::kill(tb.pid, SIGKILL);
  wait_exit(tb, 5s);
  BOOST_TEST(wait_exit(ta, 40s) != -1, read_file(ta.log));
  BOOST_TEST(wait_exit(wa, 30s) != -1, read_file(wa.log));
}

// A trainer that stops before its hello (here: --resume on a node with
// no checkpoint) is lost like any: the head names why and exits 1 instead
// of waiting for it.
BOOST_AUTO_TEST_CASE(a_trainer_that_fails_before_its_hello_fails_the_run) {
  scratch_dir empty{"dp-nockpt"};
  auto head = start_head(
    "dp-early",
    with_small({"--cluster.nodes=[\"t:trainer\", \"w:worker:1\"]",
                "--pipeline.dataset-size=200"}));
  auto args = small;
  args.insert(args.end(), {"--trainer.checkpoint-dir=" + empty.path,
                           "--resume"});
  auto t = start_member(head.at, "dp-early", "trainer", "t", args);
  auto w = start_member(head.at, "dp-early", "worker", "w", small);
  BOOST_TEST(wait_exit(head.proc, 60s) == 1);
  BOOST_TEST(read_file(head.proc.log).find("no checkpoint at " + empty.path)
               != std::string::npos,
             read_file(head.proc.log));
  BOOST_TEST(wait_exit(t, 20s) != -1);
  BOOST_TEST(wait_exit(w, 20s) != -1);
}

// One rank's steps take 3x the other's: the report names it as the
// slowest, and the other rank's time shows as collective wait.
BOOST_AUTO_TEST_CASE(a_slow_rank_is_named_and_the_other_waits_for_it) {
  auto report = tmp_path("dp-slow.json");
  auto head = start_head(
    "dp-slow",
    with_small({"--cluster.nodes=[\"t-a:trainer\", \"t-b:trainer\", "
                "\"w-a:worker:2\"]",
                "--pipeline.dataset-size=1600", "--pipeline.batch-size=16",
                "--trainer.sim-step-ms=10", "--report=" + report}));
  auto ta = start_member(head.at, "dp-slow", "trainer", "t-a", small);
  auto slow = small;
  slow.push_back("--trainer.sim-slowdown=3");
  auto tb = start_member(head.at, "dp-slow", "trainer", "t-b", slow);
  auto wa = start_member(head.at, "dp-slow", "worker", "w-a", small);
  BOOST_TEST(wait_exit(head.proc, 120s) == 0, read_file(head.proc.log));
  for (auto* c : {&ta, &tb, &wa})
    wait_exit(*c, 20s);
  auto json = read_file(report);
  BOOST_TEST(json.find("\"slowest_trainer\": \"rank 1 on node 't-b'")
               != std::string::npos,
             json);
  std::smatch m;
  std::regex rank{R"re("rank": (\d), [^}]*"collective_fraction": ([0-9.e-]+))re"};
  std::vector<double> collective(2, -1.0);
  for (std::sregex_iterator i{json.begin(), json.end(), rank}, end; i != end;
       ++i)
    collective[std::stoul((*i)[1])] = std::stod((*i)[2]);
  // Rank 0 waits ~20 of every 30 ms for rank 1; rank 1 hardly waits.
  BOOST_TEST(collective[0] > 0.4, json);
  BOOST_TEST(collective[1] < 0.2, json);
  BOOST_TEST(report_number(json, "missing") == 0);
  std::remove(report.c_str());
}

// Two ranks fed by two workers, one 3x slower, both too slow for the
// ranks (workers short): the ranks share one in-flight window and wait for
// data alike. With a window per rank, one rank's window ran wider and the
// other waited 1.4-4x as long per step (tools/bench/bench-router's
// group-short).
BOOST_AUTO_TEST_CASE(two_ranks_short_of_workers_wait_for_data_alike) {
  auto report = tmp_path("dp-short.json");
  std::vector<std::string> node = {"--trainer.device=sim",
                                   "--pipeline.height=128",
                                   "--pipeline.width=128"};
  auto head_args = node;
  head_args.insert(head_args.end(),
                   {"--cluster.nodes=[\"t-a:trainer\", \"t-b:trainer\", "
                    "\"w-a:worker:1\", \"w-b:worker:1\"]",
                    "--pipeline.dataset-size=24000",
                    "--pipeline.batch-size=16", "--trainer.sim-step-ms=1",
                    "--report=" + report});
  auto head = start_head("dp-short", head_args);
  auto ta = start_member(head.at, "dp-short", "trainer", "t-a", node);
  auto tb = start_member(head.at, "dp-short", "trainer", "t-b", node);
  auto wa = start_member(head.at, "dp-short", "worker", "w-a", node);
  auto slow = node;
  slow.push_back("--worker.slowdown=3");
  auto wb = start_member(head.at, "dp-short", "worker", "w-b", slow);
  BOOST_TEST(wait_exit(head.proc, 120s) == 0, read_file(head.proc.log));
  for (auto* c : {&ta, &tb, &wa, &wb})
    wait_exit(*c, 20s);
  auto json = read_file(report);
  std::regex rank{R"re("rank": (\d), [^}]*"idle_fraction": ([0-9.e-]+), [^}]*"data_wait_ms_per_step": ([0-9.e-]+))re"};
  std::vector<double> idle(2, -1.0);
  std::vector<double> wait(2, -1.0);
  for (std::sregex_iterator i{json.begin(), json.end(), rank}, end; i != end;
       ++i) {
    auto r = std::stoul((*i)[1]);
    idle.at(r) = std::stod((*i)[2]);
    wait.at(r) = std::stod((*i)[3]);
  }
  // The workers are what the ranks wait for: both wait a good share.
  BOOST_TEST(idle[0] > 0.05, json);
  BOOST_TEST(idle[1] > 0.05, json);
  auto [lo, hi] = std::minmax(wait[0], wait[1]);
  BOOST_TEST(hi / lo <= 1.5, "data wait per step " << wait[0] << " ms and "
                                << wait[1] << " ms; " << json);
  BOOST_TEST(report_number(json, "missing") == 0);
  BOOST_TEST(report_number(json, "duplicates") == 0);
  std::remove(report.c_str());
}

BOOST_AUTO_TEST_SUITE_END()
