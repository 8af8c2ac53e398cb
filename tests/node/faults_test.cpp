#include <boost/test/unit_test.hpp>

#include <sys/stat.h>

#include "support/node_processes.hpp"
#include "support/real_data.hpp"
#include "support/tar_writer.hpp"

// Nothing lost: workers and trainers that die or hang, checkpoints and
// resume, with real processes.

using namespace stoker_test;

namespace {

// Head, a sim trainer and three one-worker nodes as processes; once the
// trainer has taken 10 steps, worker w-b gets `signal` (SIGKILL: dies;
// SIGSTOP: hangs with its connections open). Returns the run report;
// `held`: whether w-b held a lease when it was lost.
std::string one_failing_worker_run(const std::string& tag, int signal,
                                   std::vector<std::string> head_args,
                                   bool& held) {
  auto report = tmp_path(tag + ".json");
  // Workers are the bottleneck, so each holds leases when w-b fails.
  const std::vector<std::string> shape = {"--pipeline.height=128",
                                          "--pipeline.width=128",
                                          "--trainer.device=sim",
                                          "--trainer.sim-step-ms=2",
                                          "--trainer.log-every=5"};
  auto with_shape = [&](std::vector<std::string> args) {
    args.insert(args.end(), shape.begin(), shape.end());
    return args;
  };
  std::vector<std::string> args = {
    "--cluster.nodes=[\"t-0:trainer\", \"w-a:worker:1\", \"w-b:worker:1\", "
    "\"w-c:worker:1\"]",
    "--pipeline.dataset-size=6400", "--pipeline.batch-size=16",
    "--report=" + report};
  args.insert(args.end(), head_args.begin(), head_args.end());
  auto head = start_head(tag, with_shape(args));
  auto trainer = start_member(head.at, tag, "trainer", "t-0", with_shape({}));
  std::vector<child> workers;
  // Each blurs 4x over: on a fast machine three plain workers kept up
  // with the trainer, sat idle 60% of the time, and w-b could hold
  // nothing at the moment it was killed.
  for (auto name : {"w-a", "w-b", "w-c"})
    workers.push_back(start_member(head.at, tag, "worker", name,
                                   {"--worker.count=1",
                                    "--worker.slowdown=4"}));
  BOOST_REQUIRE(wait_for_text(trainer.log, "Iteration 10:", 60s));
  ::kill(workers[1].pid, signal);
  BOOST_TEST(wait_exit(head.proc, 120s) == 0);
  BOOST_TEST_MESSAGE(read_file(head.proc.log));
  std::smatch m;
  auto log = read_file(head.proc.log);
  BOOST_TEST(caf_internals_in(log).empty(), log);
  BOOST_REQUIRE(std::regex_search(
    log, m, std::regex{R"(router: worker 'w-b/0' lost \((.*)\); re-leasing (\d+))"}));
  held = std::stoi(m[2]) > 0;
  BOOST_TEST_MESSAGE("lost: " << m[1] << "; it held " << m[2]);
  BOOST_TEST(wait_exit(trainer, 20s) == 0);
  BOOST_TEST(wait_exit(workers[0], 20s) == 0);
  BOOST_TEST(wait_exit(workers[2], 20s) == 0);
  ::kill(workers[1].pid, SIGKILL); // the hung one, if it still is
  int status = 0;
  ::waitpid(workers[1].pid, &status, 0);
  auto json = read_file(report);
  std::remove(report.c_str());
  return json;
}

// The run above until w-b held a lease when it was lost (what the cases
// are about): a run in which it held none at that moment (it happened in
// CI: the router had no lease for it just then) did not test re-leasing,
// and runs again, up to three times.
std::string run_with_a_failing_worker(const std::string& tag, int signal,
                                      std::vector<std::string> head_args) {
  bool held = false;
  std::string json;
  for (int attempt = 1; attempt <= 3 && !held; ++attempt)
    json = one_failing_worker_run(tag + "-" + std::to_string(attempt), signal,
                                  head_args, held);
  BOOST_TEST(held, "w-b held nothing when it failed, in 3 runs");
  return json;
}

} // namespace

BOOST_AUTO_TEST_SUITE(faults)

BOOST_AUTO_TEST_CASE(a_worker_killed_mid_epoch_loses_no_sample) {
  auto json = run_with_a_failing_worker("kill9", SIGKILL, {});
  BOOST_TEST(json.find("\"samples_delivered\": 6400,") != std::string::npos,
             json);
  BOOST_TEST(json.find("\"missing\": 0,") != std::string::npos);
  BOOST_TEST(json.find("\"duplicates\": 0,") != std::string::npos);
  BOOST_TEST(json.find("\"lost_workers\": [\"w-b/0\"]") != std::string::npos);
  // The lost worker stays in the workers list with what the head saw it
  // make before it died (it was left out, and with it 437 of 570 batches
  // in one run).
  std::smatch m;
  BOOST_REQUIRE_MESSAGE(
    std::regex_search(json, m,
                      std::regex{R"re(\{"name": "w-b/0", "batches": (\d+), )re"
                                 R"re("samples": (\d+), [^}]*"lost": true\})re"}),
    json);
  BOOST_TEST(std::stoi(m[1]) > 0);
  BOOST_TEST(std::stoi(m[2]) >= std::stoi(m[1])); // at least a sample each
}

BOOST_AUTO_TEST_CASE(tar_shards_lose_no_sample_to_a_killed_worker) {
  scratch_dir dir{"kill9-shards"};
  // 8 shards of 800 PNGs; the PNGs large enough that workers are short.
  auto pattern = write_shards(dir.path, 8, 800, 10, 256);
  auto json = run_with_a_failing_worker(
    "kill9-shards", SIGKILL,
    {"--pipeline.source=tar-shards", "--pipeline.data=" + pattern,
     "--pipeline.shuffle-buffer=500",
     R"x(--pipeline.transforms=["decode", "random-resized-crop(64)", )x"
     R"x("horizontal-flip", "to-tensor"])x"});
  BOOST_TEST(json.find("\"samples_delivered\": 6400,") != std::string::npos,
             json);
  BOOST_TEST(json.find("\"missing\": 0,") != std::string::npos);
  BOOST_TEST(json.find("\"duplicates\": 0,") != std::string::npos);
  BOOST_TEST(json.find("\"skipped_files\": 0,") != std::string::npos);
  BOOST_TEST(json.find("\"lost_workers\": [\"w-b/0\"]") != std::string::npos);
  // Every delivered sample was decoded once at least: the lost worker's
  // decodes count (its last report's counters).
  std::smatch m;
  BOOST_REQUIRE(std::regex_search(json, m,
                                  std::regex{R"("decoded_files": (\d+),)"}));
  BOOST_TEST(std::stoi(m[1]) >= 6400, json);
}

BOOST_AUTO_TEST_CASE(a_hung_worker_is_lost_after_the_heartbeat_timeout) {
  auto json = run_with_a_failing_worker("stop", SIGSTOP,
                                        {"--cluster.heartbeat-timeout=1s"});
  BOOST_TEST(json.find("\"samples_delivered\": 6400,") != std::string::npos,
             json);
  BOOST_TEST(json.find("\"missing\": 0,") != std::string::npos);
  BOOST_TEST(json.find("\"duplicates\": 0,") != std::string::npos);
  BOOST_TEST(json.find("\"lost_workers\": [\"w-b/0\"]") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_killed_trainer_resumes_from_its_checkpoint_exactly_once) {
  auto dir = tmp_path("ckpt");
  std::remove((dir + "/checkpoint.stoker").c_str());
  auto report = tmp_path("resume.json");
  const std::vector<std::string> run = {
    "--trainer.device=sim", "--trainer.sim-step-ms=10",
    "--pipeline.height=32", "--pipeline.width=32",
    "--pipeline.dataset-size=3200", "--pipeline.batch-size=16",
    "--cluster.nodes=[\"t-0:trainer\", \"w-a:worker:1\"]"};
  auto cluster = [&](const std::string& tag,
                     std::vector<std::string> trainer_args) {
    auto head_args = run;
    // Not long to wait for a trainer that is not coming back.
    head_args.push_back("--cluster.join-timeout=5s");
    head_args.push_back("--report=" + report);
    auto head = start_head(tag, head_args);
    trainer_args.insert(trainer_args.end(),
                        {"--trainer.device=sim",
                         "--trainer.checkpoint-dir=" + dir,
                         "--trainer.checkpoint-every=10"});
    auto trainer = start_member(head.at, tag, "trainer", "t-0", trainer_args);
    auto worker = start_member(head.at, tag, "worker", "w-a");
    return std::vector<child>{head.proc, trainer, worker};
  };
  // 1. The trainer dies after its second checkpoint: the head says so.
  auto first = cluster("ckpt1", {});
  BOOST_REQUIRE(wait_for_text(first[1].log, "checkpoint: step 20 saved", 60s));
  ::kill(first[1].pid, SIGKILL);
  wait_exit(first[1], 5s);
  BOOST_TEST(wait_exit(first[0], 60s) == 1);
  BOOST_TEST(read_file(first[0].log).find("the trainer exited before the "
                                          "run ended and none rejoined")
               != std::string::npos,
             read_file(first[0].log));
  BOOST_TEST(wait_exit(first[2], 20s) == 0);
  // 2. The same run again, the trainer with --resume: every sample of the
  // epoch is trained on once over both runs.
  auto second = cluster("ckpt2", {"--resume"});
  BOOST_TEST(wait_exit(second[0], 60s) == 0, read_file(second[0].log));
  BOOST_TEST(wait_exit(second[1], 20s) == 0);
  BOOST_TEST(wait_exit(second[2], 20s) == 0);
  BOOST_TEST(read_file(second[1].log).find("trainer: resumed from step")
             != std::string::npos);
  auto json = read_file(report);
  BOOST_TEST(json.find("\"samples_delivered\": 3200,") != std::string::npos,
             json);
  BOOST_TEST(json.find("\"missing\": 0,") != std::string::npos);
  BOOST_TEST(json.find("\"duplicates\": 0,") != std::string::npos);
  std::smatch m;
  BOOST_REQUIRE(std::regex_search(json, m,
                                  std::regex{R"("batches_resumed": (\d+))"}));
  BOOST_TEST(std::stoi(m[1]) >= 20); // skipped: in the checkpoint
  std::remove(report.c_str());
  std::remove((dir + "/checkpoint.stoker").c_str());
  ::rmdir(dir.c_str());
}

BOOST_AUTO_TEST_CASE(a_restarted_trainer_rejoins_the_running_head) {
  auto dir = tmp_path("rejoin-ckpt");
  std::remove((dir + "/checkpoint.stoker").c_str());
  auto report = tmp_path("rejoin.json");
  const std::vector<std::string> run = {
    "--trainer.device=sim", "--trainer.sim-step-ms=10",
    "--pipeline.height=32", "--pipeline.width=32",
    "--pipeline.dataset-size=3200", "--pipeline.batch-size=16"};
  auto head_args = run;
  head_args.insert(head_args.end(),
                   {"--report=" + report,
                    "--cluster.nodes=[\"t-0:trainer\", \"w-a:worker:1\"]"});
  auto head = start_head("rejoin", head_args);
  std::vector<std::string> trainer_args = {
    "--trainer.device=sim", "--trainer.checkpoint-dir=" + dir,
    "--trainer.checkpoint-every=10"};
  auto trainer = start_member(head.at, "rejoin", "trainer", "t-0", trainer_args);
  auto worker = start_member(head.at, "rejoin", "worker", "w-a");
  BOOST_REQUIRE(wait_for_text(trainer.log, "checkpoint: step 20 saved", 60s));
  ::kill(trainer.pid, SIGKILL);
  wait_exit(trainer, 5s);
  BOOST_REQUIRE(wait_for_text(head.proc.log,
                              "for a trainer started with --resume", 20s));
  trainer_args.push_back("--resume");
  // Under the same name, its log beside the first one's.
  auto again = start_member(head.at, "rejoin-again", "trainer", "t-0",
                            trainer_args);
  BOOST_TEST(wait_exit(head.proc, 60s) == 0, read_file(head.proc.log));
  BOOST_TEST(wait_exit(again, 20s) == 0);
  BOOST_TEST(wait_exit(worker, 20s) == 0);
  BOOST_TEST(read_file(head.proc.log)
               .find("a trainer rejoined from its checkpoint")
             != std::string::npos);
  auto json = read_file(report);
  BOOST_TEST(json.find("\"samples_delivered\": 3200,") != std::string::npos,
             json);
  BOOST_TEST(json.find("\"missing\": 0,") != std::string::npos);
  BOOST_TEST(json.find("\"duplicates\": 0,") != std::string::npos);
  std::remove(report.c_str());
  std::remove((dir + "/checkpoint.stoker").c_str());
  ::rmdir(dir.c_str());
}

BOOST_AUTO_TEST_CASE(resume_errors_name_what_is_wrong) {
  auto dir = tmp_path("nockpt");
  auto local = [&](std::vector<std::string> extra) {
    std::vector<std::string> args{"--trainer.device=sim",
                                  "--pipeline.height=32", "--pipeline.width=32",
                                  "--pipeline.dataset-size=64"};
    args.insert(args.end(), extra.begin(), extra.end()); // later flags win
    auto c = start_node(args, tmp_path("resume-err.log"));
    auto code = wait_exit(c, 30s);
    return std::make_pair(code, read_file(c.log));
  };
  auto [code, out] = local({"--resume"});
  BOOST_TEST(code == 2);
  BOOST_TEST(out.find("--resume needs trainer.checkpoint-dir")
             != std::string::npos, out);
  std::tie(code, out) = local({"--resume", "--trainer.checkpoint-dir=" + dir});
  BOOST_TEST(code == 1);
  BOOST_TEST(out.find("no checkpoint at " + dir) != std::string::npos, out);
  // A checkpoint of a 64-sample run does not resume a 128-sample one.
  std::tie(code, out) = local({"--trainer.checkpoint-dir=" + dir,
                               "--trainer.checkpoint-every=1"});
  BOOST_TEST(code == 0, out);
  std::tie(code, out) = local({"--resume", "--trainer.checkpoint-dir=" + dir,
                               "--pipeline.dataset-size=128"});
  BOOST_TEST(code == 2); // refused before the run, as a setting
  BOOST_TEST(out.find("saved with pipeline.dataset-size = 64, this run has "
                      "128")
               != std::string::npos,
             out);
  std::remove((dir + "/checkpoint.stoker").c_str());
  ::rmdir(dir.c_str());
}

namespace {

// A head on port `port` (fixed: a head started again must be where the
// nodes look), logging to tmp_path(log).
child start_head_at(uint16_t port, std::vector<std::string> args,
                    const std::string& log) {
  args.insert(args.begin(), {"--role=head",
                             "--cluster.port=" + std::to_string(port)});
  return start_node(std::move(args), tmp_path(log));
}

// A 4,800-sample run of 300 steps at 15 ms (about 5 s), small images.
std::vector<std::string> head_test_run() {
  return {"--trainer.device=sim",     "--trainer.sim-step-ms=15",
          "--trainer.log-every=10",   "--pipeline.height=32",
          "--pipeline.width=32",      "--pipeline.dataset-size=4800",
          "--pipeline.batch-size=16"};
}

void remove_dir(const std::string& dir) {
  for (auto name : {"/head.journal", "/head.journal.tmp"})
    std::remove((dir + name).c_str());
  ::rmdir(dir.c_str());
}

} // namespace

BOOST_AUTO_TEST_CASE(a_head_killed_and_resumed_from_its_journal_loses_nothing) {
  auto dir = tmp_path("head-state");
  remove_dir(dir);
  auto report = tmp_path("head-resume.json");
  std::remove(report.c_str());
  auto port = free_port();
  auto at = "--cluster.head=127.0.0.1:" + std::to_string(port);
  const auto run = head_test_run();
  auto head_args = run;
  head_args.insert(head_args.end(),
                   {"--cluster.state-dir=" + dir, "--report=" + report,
                    "--cluster.nodes=[\"t-0:trainer\", \"w-a:worker:1\", "
                    "\"w-b:worker:1\"]"});
  auto head = start_head_at(port, head_args, "head-resume-head.log");
  auto trainer = start_member(at, "head-resume", "trainer", "t-0", run);
  auto wa = start_member(at, "head-resume", "worker", "w-a",
                         {"--worker.count=1"});
  auto wb = start_member(at, "head-resume", "worker", "w-b",
                         {"--worker.count=1"});
  BOOST_REQUIRE_MESSAGE(wait_for_text(trainer.log, "Iteration 60:", 60s),
                        read_file(trainer.log));
  // Killed once the journal holds acknowledged batches (it is written at
  // most once a second).
  auto journaled = [&] {
    std::smatch m;
    auto text = read_file(dir + "/head.journal");
    return std::regex_search(text, m, std::regex{R"(acked_batches = (\d+))"})
           && std::stoul(m[1]) > 0;
  };
  for (auto until = std::chrono::steady_clock::now() + 20s;
       !journaled() && std::chrono::steady_clock::now() < until;)
    std::this_thread::sleep_for(50ms);
  BOOST_REQUIRE(journaled());
  ::kill(head.pid, SIGKILL);
  wait_exit(head, 5s);
  // Every node outlives the head and waits for it, holding its work.
  for (auto* node : {&trainer, &wa, &wb})
    BOOST_REQUIRE_MESSAGE(wait_for_text(node->log, "keeps its work", 10s),
                          read_file(node->log));
  auto journal = read_file(dir + "/head.journal");
  BOOST_TEST(journal.find("finished = 0") != std::string::npos, journal);
  head_args.push_back("--resume");
  auto again = start_head_at(port, head_args, "head-resume-again.log");
  BOOST_TEST(wait_exit(again, 90s) == 0, read_file(again.log));
  BOOST_TEST(wait_exit(trainer, 20s) == 0, read_file(trainer.log));
  BOOST_TEST(wait_exit(wa, 20s) == 0);
  BOOST_TEST(wait_exit(wb, 20s) == 0);
  auto log = read_file(again.log);
  BOOST_TEST(log.find("resuming the run journaled in") != std::string::npos,
             log);
  BOOST_TEST(log.find("the run goes on") != std::string::npos, log);
  BOOST_TEST(read_file(trainer.log).find("rejoined the head")
             != std::string::npos);
  // The trainer's ledger covers the whole run, across both heads.
  auto json = read_file(report);
  BOOST_TEST(json.find("\"samples_delivered\": 4800,") != std::string::npos,
             json);
  BOOST_TEST(json.find("\"missing\": 0,") != std::string::npos, json);
  BOOST_TEST(json.find("\"duplicates\": 0,") != std::string::npos, json);
  BOOST_TEST(read_file(dir + "/head.journal").find("finished = 1")
             != std::string::npos);
  // A finished run is not resumed again.
  auto late = start_head_at(port, head_args, "head-resume-late.log");
  BOOST_TEST(wait_exit(late, 20s) == 2);
  BOOST_TEST(read_file(late.log).find("completed already")
               != std::string::npos,
             read_file(late.log));
  std::remove(report.c_str());
  remove_dir(dir);
}

BOOST_AUTO_TEST_CASE(without_a_journal_nodes_stop_naming_the_head) {
  auto port = free_port();
  auto at = "--cluster.head=127.0.0.1:" + std::to_string(port);
  const auto run = head_test_run();
  auto head_args = run;
  head_args.push_back(
    "--cluster.nodes=[\"t-0:trainer\", \"w-a:worker:1\"]");
  auto head = start_head_at(port, head_args, "head-gone-head.log");
  auto trainer = start_member(at, "head-gone", "trainer", "t-0", run);
  auto worker = start_member(at, "head-gone", "worker", "w-a");
  BOOST_REQUIRE_MESSAGE(wait_for_text(trainer.log, "Iteration 20:", 60s),
                        read_file(trainer.log));
  ::kill(head.pid, SIGKILL);
  wait_exit(head, 5s);
  for (auto* node : {&trainer, &worker}) {
    BOOST_TEST(wait_exit(*node, 15s) == 1);
    auto out = read_file(node->log);
    BOOST_TEST(out.find("the head at 127.0.0.1:" + std::to_string(port)
                        + " went away")
                 != std::string::npos,
               out);
    BOOST_TEST(out.find("cluster.state-dir") != std::string::npos, out);
  }
}

BOOST_AUTO_TEST_CASE(a_head_state_dir_is_not_reused_by_mistake) {
  auto dir = tmp_path("head-state-err");
  remove_dir(dir);
  ::mkdir(dir.c_str(), 0755);
  auto head = [&](std::vector<std::string> extra) {
    std::vector<std::string> args{"--role=head", "--cluster.port=0",
                                  "--cluster.join-timeout=1s",
                                  "--cluster.nodes=[\"t-0:trainer\"]",
                                  "--pipeline.dataset-size=64"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto c = start_node(args, tmp_path("head-state-err.log"));
    auto code = wait_exit(c, 30s);
    return std::make_pair(code, read_file(c.log));
  };
  auto [code, out] = head({"--resume"});
  BOOST_TEST(code == 2);
  BOOST_TEST(out.find("--resume with --role=head needs cluster.state-dir")
               != std::string::npos,
             out);
  std::tie(code, out) = head({"--resume", "--cluster.state-dir=" + dir});
  BOOST_TEST(code == 2);
  BOOST_TEST(out.find("cannot read " + dir + "/head.journal")
               != std::string::npos,
             out);
  // A head that timed out waiting leaves an unfinished run: a new head
  // there without --resume is refused, one with another dataset too.
  std::tie(code, out) = head({"--cluster.state-dir=" + dir});
  BOOST_TEST(code == 1, out);
  std::tie(code, out) = head({"--cluster.state-dir=" + dir});
  BOOST_TEST(code == 2);
  BOOST_TEST(out.find("holds the journal of an unfinished run")
               != std::string::npos,
             out);
  std::tie(code, out) = head({"--cluster.state-dir=" + dir, "--resume",
                              "--pipeline.dataset-size=128"});
  BOOST_TEST(code == 2);
  BOOST_TEST(out.find("pipeline.dataset-size = 64, this head has 128")
               != std::string::npos,
             out);
  // A damaged journal is named, with its line.
  {
    std::ofstream{dir + "/head.journal"} << "stoker head journal 1\n"
                                            "run = x\nheads = zero\n";
  }
  std::tie(code, out) = head({"--cluster.state-dir=" + dir, "--resume"});
  BOOST_TEST(code == 2);
  BOOST_TEST(out.find("head.journal: line 3: heads = \"zero\"")
               != std::string::npos,
             out);
  remove_dir(dir);
}

BOOST_AUTO_TEST_SUITE_END()
