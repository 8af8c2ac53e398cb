#include <boost/test/unit_test.hpp>

#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "config/run_config.hpp"
#include "node/membership.hpp"

#include "support/node_processes.hpp"

// The cluster as processes: joining, topology, transport, routing.

using namespace stoker_test;

namespace {

// Head, a sim trainer and two one-worker nodes, `fast` and `slow`
// (`slowdown` times the blur work), as processes; 100 batches of 16 96x96
// images, workers the bottleneck. Returns the JSON run report.
std::string run_fast_and_slow(const std::string& tag,
                              std::vector<std::string> head_args,
                              int slowdown = 4) {
  auto report = tmp_path(tag + ".json");
  const std::vector<std::string> shape = {"--pipeline.height=96",
                                          "--pipeline.width=96",
                                          "--trainer.device=sim",
                                          "--trainer.sim-step-ms=1"};
  auto with_shape = [&](std::vector<std::string> args) {
    args.insert(args.end(), shape.begin(), shape.end());
    return args;
  };
  std::vector<std::string> args = {
    "--cluster.nodes=[\"t-0:trainer\", \"fast:worker:1\", "
    "\"slow:worker:1\"]",
    "--pipeline.dataset-size=1600", "--pipeline.batch-size=16",
    "--report=" + report};
  args.insert(args.end(), head_args.begin(), head_args.end());
  auto head = start_head(tag, with_shape(args));
  auto trainer = start_member(head.at, tag, "trainer", "t-0", with_shape({}));
  auto fast = start_member(head.at, tag, "worker", "fast", {"--worker.count=1"});
  auto slow = start_member(head.at, tag, "worker", "slow",
                           {"--worker.count=1", "--worker.slowdown="
                                                   + std::to_string(slowdown)});
  BOOST_TEST(wait_exit(head.proc, 120s) == 0);
  for (auto* c : {&trainer, &fast, &slow})
    BOOST_TEST(wait_exit(*c, 20s) == 0);
  BOOST_TEST_MESSAGE(read_file(head.proc.log));
  auto json = read_file(report);
  std::remove(report.c_str());
  return json;
}

// One process per "host" of a SageMaker fixture on loopback, each with the
// same flags but its own current host: a run of 640 samples into `report`
// (removed first), the head on `port`, one worker per worker node.
std::vector<child> start_discovered(const std::string& file,
                                    const std::vector<std::string>& hosts,
                                    const std::string& port,
                                    const std::string& report,
                                    const std::string& log_prefix) {
  std::remove(report.c_str());
  std::vector<child> out;
  for (auto& host : hosts)
    out.push_back(start_node(
      with_small({"--cluster.discover=sagemaker",
                  "--cluster.sagemaker-config=" + file,
                  "--cluster.current-host=" + host, "--cluster.port=" + port,
                  "--worker.count=1", "--pipeline.dataset-size=640",
                  "--pipeline.batch-size=16", "--report=" + report}),
      tmp_path(log_prefix + host + ".log")));
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(cluster)

BOOST_AUTO_TEST_CASE(topology_entries_parse_and_bad_ones_are_named) {
  auto w = stoker::parse_node_spec("worker-a:worker:3");
  BOOST_REQUIRE(w);
  BOOST_TEST(w->name == "worker-a");
  BOOST_TEST((w->role == stoker::role_kind::worker));
  BOOST_TEST(w->workers == 3u);
  auto t = stoker::parse_node_spec("gpu:trainer");
  BOOST_REQUIRE(t);
  BOOST_TEST((t->role == stoker::role_kind::trainer));
  for (auto bad : {"gpu", ":worker", "gpu:head", "gpu:trainer:2", "a:worker:x"})
    BOOST_TEST(!static_cast<bool>(stoker::parse_node_spec(bad)), bad);
  auto hp = stoker::parse_host_port("127.0.0.1:4242");
  BOOST_REQUIRE(hp);
  BOOST_TEST(hp->second == 4242);
  for (auto bad : {"127.0.0.1", "host:", ":80", "h:0", "h:70000", "h:8x"})
    BOOST_TEST(!stoker::parse_host_port(bad), bad);
}

BOOST_AUTO_TEST_CASE(membership_names_who_is_missing) {
  stoker::membership m{{"t", "a", "b"}};
  auto joins = [&](const std::string& name) { return !m.join(name, 0); };
  BOOST_TEST(joins("a"));
  BOOST_TEST(joins("late")); // not expected, still welcome
  BOOST_TEST(!joins("a"));   // a second node of the same name is not
  BOOST_TEST(m.missing() == (std::vector<std::string>{"t", "b"}));
  BOOST_TEST(!m.complete());
  BOOST_TEST(joins("t"));
  BOOST_TEST(joins("b"));
  BOOST_TEST(m.complete());
}

// A node is silent once it has answered no ping for the timeout since it
// joined or last answered; said once per silence.
BOOST_AUTO_TEST_CASE(membership_says_once_which_node_went_silent) {
  stoker::membership m{{"a", "b"}};
  BOOST_REQUIRE(!m.join("a", 0));
  BOOST_REQUIRE(!m.join("b", 0));
  BOOST_TEST(m.newly_silent(4000, 5000).empty());
  m.heard("a", 1000);
  m.heard("b", 1000);
  m.heard("a", 5000);
  BOOST_TEST(m.newly_silent(6000, 5000).empty());
  auto quiet = m.newly_silent(6500, 5000);
  BOOST_REQUIRE(quiet.size() == 1u);
  BOOST_TEST(quiet[0].name == "b");
  BOOST_TEST(quiet[0].silent_ms == 5500);
  BOOST_TEST(m.newly_silent(9000, 5000).empty()); // said already
  m.heard("b", 9000); // back: judged again from here
  BOOST_TEST(m.newly_silent(10'500, 5000).size() == 1u); // "a" now
  m.leave("b");
  BOOST_TEST(m.newly_silent(20'000, 5000).empty());
}

// A node stopped before it answered its first ping (a rank stopped early
// in a run) is named all the same, its silence counted from its join.
BOOST_AUTO_TEST_CASE(membership_names_a_node_that_never_answered) {
  stoker::membership m{{"t-a", "t-b"}};
  BOOST_REQUIRE(!m.join("t-a", 1000));
  BOOST_REQUIRE(!m.join("t-b", 1200));
  m.heard("t-a", 1400);
  m.heard("t-a", 6000);
  auto quiet = m.newly_silent(6300, 5000);
  BOOST_REQUIRE(quiet.size() == 1u);
  BOOST_TEST(quiet[0].name == "t-b");
  BOOST_TEST(quiet[0].silent_ms == 5100);
}

BOOST_AUTO_TEST_CASE(launched_cluster_delivers_every_sample_once) {
  auto report = tmp_path("report.json");
  auto log = tmp_path("launch.log");
  auto launcher = std::string{STOKER_SOURCE_DIR} + "/tools/ops/launch-cluster";
  ::setenv("STOKER_NODE", STOKER_NODE_BINARY, 1);
  auto c = start(launcher,
                 with_small({std::string{STOKER_SOURCE_DIR}
                               + "/config/loopback-cluster.ini",
                             "--report=" + report}),
                 log);
  BOOST_TEST(wait_exit(c, 120s) == 0);
  auto out = read_file(log);
  BOOST_TEST_MESSAGE(out);
  // The head told every node to exit, and each exited cleanly.
  for (auto node : {"trainer-0", "worker-a", "worker-b", "head"})
    BOOST_TEST(out.find("node " + std::string{node} + " exited 0")
                 != std::string::npos,
               node);
  auto json = read_file(report);
  BOOST_TEST(json.find("\"samples_delivered\": 512,") != std::string::npos);
  BOOST_TEST(json.find("\"missing\": 0,") != std::string::npos);
  BOOST_TEST(json.find("\"duplicates\": 0,") != std::string::npos);
  auto batches = batches_by_worker(json);
  BOOST_TEST(batches["worker-a/0"] > 0);
  BOOST_TEST(batches["worker-b/0"] > 0);
  BOOST_TEST(batches["worker-a/0"] + batches["worker-b/0"] == 16);
  std::remove(report.c_str());
}

BOOST_AUTO_TEST_CASE(with_log_format_json_every_line_is_one_object) {
  const std::vector<std::string> json = {"--log.format=json"};
  auto head = start_head("json", with_small({"--cluster.nodes=[\"t-0:trainer\""
                                             ", \"w-a:worker:1\"]",
                                             "--pipeline.dataset-size=96",
                                             "--pipeline.batch-size=16",
                                             "--log.format=json"}));
  auto trainer = start_member(head.at, "json", "trainer", "t-0",
                              with_small(json));
  auto worker = start_member(head.at, "json", "worker", "w-a",
                             {"--worker.count=1", "--log.format=json"});
  BOOST_TEST(wait_exit(head.proc, 120s) == 0, read_file(head.proc.log));
  BOOST_TEST(wait_exit(trainer, 20s) == 0);
  BOOST_TEST(wait_exit(worker, 20s) == 0);
  const std::regex utc{R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)"};
  struct node_log {
    child* proc;
    std::string node, role;
    std::string expected; // a line this node always says
  };
  for (auto& n : {node_log{&head.proc, "", "head", " node(s) joined, running"},
                  node_log{&trainer, "t-0", "trainer", "exits; peak RSS"},
                  node_log{&worker, "w-a", "worker", "exits; peak RSS"}}) {
    auto text = read_file(n.proc->log);
    std::istringstream lines{text};
    std::string line;
    size_t count = 0;
    bool expected_seen = false;
    while (std::getline(lines, line)) {
      if (line.empty())
        continue;
      ++count;
      nlohmann::json j;
      BOOST_REQUIRE_NO_THROW(j = nlohmann::json::parse(line));
      BOOST_TEST(std::regex_match(j.at("ts").get<std::string>(), utc), line);
      auto level = j.at("level").get<std::string>();
      BOOST_TEST((level == "info" || level == "warning"), line);
      BOOST_TEST(j.at("role").get<std::string>() == n.role, line);
      if (!n.node.empty())
        BOOST_TEST(j.at("node").get<std::string>() == n.node, line);
      expected_seen |= j.at("msg").get<std::string>().find(n.expected)
                       != std::string::npos;
    }
    BOOST_TEST(count > 2u, n.role << ": " << text);
    BOOST_TEST(expected_seen, n.role << ": " << text);
  }
}

BOOST_AUTO_TEST_CASE(a_worker_joining_late_still_receives_work) {
  auto report = tmp_path("late.json");
  auto head = start_head(
    "late",
    with_small({"--cluster.nodes=[\"t-0:trainer\", \"w-a:worker:1\"]",
                "--pipeline.dataset-size=1600", "--pipeline.batch-size=16",
                "--trainer.sim-step-ms=30", "--report=" + report}));
  auto trainer = start_member(head.at, "late", "trainer", "t-0", with_small({}));
  auto early = start_member(head.at, "late", "worker", "w-a",
                            {"--worker.count=1"});
  BOOST_REQUIRE(wait_for_text(head.proc.log, "running", 30s));
  auto late = start_member(head.at, "late", "worker", "w-b",
                           {"--worker.count=1"});
  BOOST_TEST(wait_exit(head.proc, 120s) == 0);
  for (auto* c : {&trainer, &early, &late})
    BOOST_TEST(wait_exit(*c, 20s) == 0);
  auto batches = batches_by_worker(read_file(report));
  BOOST_TEST_MESSAGE(read_file(head.proc.log));
  BOOST_TEST(batches["w-b/0"] > 0);
  BOOST_TEST(batches["w-a/0"] + batches["w-b/0"] == 100);
  // Every batch took the direct stream, none the middleman.
  BOOST_TEST(read_file(trainer.log).find("batch stream: 100 batch(es) received")
             != std::string::npos, read_file(trainer.log));
  std::remove(report.c_str());
}

BOOST_AUTO_TEST_CASE(batches_travel_as_caf_messages_with_the_stream_off) {
  auto report = tmp_path("nostream.json");
  auto head = start_head(
    "nostream",
    with_small({"--cluster.nodes=[\"t-0:trainer\", \"w-a:worker:1\"]",
                "--pipeline.dataset-size=96", "--pipeline.batch-size=16",
                "--transport.batch-stream=false", "--report=" + report}));
  auto trainer = start_member(head.at, "nostream", "trainer", "t-0",
                              with_small({}));
  auto worker = start_member(head.at, "nostream", "worker", "w-a",
                             {"--worker.count=1"});
  BOOST_TEST(wait_exit(head.proc, 120s) == 0);
  for (auto* c : {&trainer, &worker})
    BOOST_TEST(wait_exit(*c, 20s) == 0);
  auto json = read_file(report);
  BOOST_TEST(json.find("\"samples_delivered\": 96,") != std::string::npos,
             json);
  BOOST_TEST(json.find("\"missing\": 0,") != std::string::npos);
  BOOST_TEST(read_file(trainer.log).find("batch stream") == std::string::npos);
  std::remove(report.c_str());
}

BOOST_AUTO_TEST_CASE(least_loaded_gives_a_fast_worker_over_twice_a_slow_ones) {
  // 8x the work, not the 4x the hedging case uses: the workers' real
  // speeds are what the router sees, and beside other suites on 2 cores
  // the slow one's CPU share can be twice the fast one's (CI saw 63/37
  // at 4x). 8x keeps the split past 2x at that share.
  auto json = run_fast_and_slow("hetero", {"--router.policy=least-loaded"},
                                8);
  BOOST_TEST(json.find("\"missing\": 0,") != std::string::npos, json);
  auto batches = batches_by_worker(json);
  BOOST_TEST(batches["fast/0"] + batches["slow/0"] == 100);
  BOOST_TEST(batches["fast/0"] > 2 * batches["slow/0"],
             "fast " << batches["fast/0"] << ", slow " << batches["slow/0"]);
  BOOST_TEST(batches["slow/0"] > 0);
}

BOOST_AUTO_TEST_CASE(hedged_stragglers_are_trained_on_once) {
  // Round-robin hands the slow worker every other batch; each takes ~3x
  // the median, so with factor 1.5 most get a second copy. The router
  // looks for stragglers each report interval: 20 ms gives a run that
  // lasts ~0.3 s on 2 cores a dozen looks (the default 100 ms gave two).
  // Twice the samples: under ctest -j2 beside a heavy suite, one run of
  // 1,600 saw no straggler at all.
  auto json = run_fast_and_slow("hedge", {"--router.policy=round-robin",
                                          "--router.hedge-factor=1.5",
                                          "--router.report-interval=20ms",
                                          "--pipeline.dataset-size=3200"});
  BOOST_TEST(json.find("\"samples_delivered\": 3200,") != std::string::npos,
             json);
  BOOST_TEST(json.find("\"missing\": 0,") != std::string::npos);
  BOOST_TEST(json.find("\"duplicates\": 0,") != std::string::npos);
  std::smatch m;
  BOOST_REQUIRE(std::regex_search(json, m,
                                  std::regex{R"("batches_hedged": (\d+))"}));
  BOOST_TEST(std::stoi(m[1]) > 0);
  BOOST_REQUIRE(std::regex_search(json, m,
                                  std::regex{R"("dropped_copies": (\d+))"}));
  BOOST_TEST(std::stoi(m[1]) > 0);
  // Each dropped copy is the bits of the one trained on.
  BOOST_TEST(json.find("\"copy_mismatches\": 0,") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(random_bytes_on_the_heads_port_neither_crash_nor_stall_it) {
  auto report = tmp_path("junk.json");
  auto head = start_head(
    "junk",
    with_small({"--cluster.nodes=[\"t-0:trainer\", \"w-a:worker:1\"]",
                "--pipeline.dataset-size=64", "--pipeline.batch-size=16",
                "--report=" + report}));
  auto port = head.port;
  auto dial = [&] {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(port);
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    BOOST_REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to))
                  == 0);
    return fd;
  };
  // One peer sends garbage and leaves, one connects and says nothing.
  int junk = dial();
  std::vector<char> noise(64 * 1024);
  uint64_t x = 88172645463325252ull;
  for (auto& c : noise) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    c = static_cast<char>(x);
  }
  (void) ::send(junk, noise.data(), noise.size(), MSG_NOSIGNAL);
  ::close(junk);
  int silent = dial();
  auto trainer = start_member(head.at, "junk", "trainer", "t-0", with_small({}));
  auto worker = start_member(head.at, "junk", "worker", "w-a");
  BOOST_TEST(wait_exit(head.proc, 60s) == 0, read_file(head.proc.log));
  BOOST_TEST(wait_exit(trainer, 20s) == 0);
  BOOST_TEST(wait_exit(worker, 20s) == 0);
  ::close(silent);
  BOOST_TEST(read_file(report).find("\"missing\": 0,") != std::string::npos);
  std::remove(report.c_str());
}

BOOST_AUTO_TEST_CASE(a_node_of_another_release_is_refused_by_name) {
  auto head = start_head("release",
                         with_small({"--cluster.join-timeout=8s",
                                     "--cluster.nodes=[\"w:worker\"]"}));
  auto worker = start_member(
    head.at, "release", "worker", "w",
    {"--cluster.connect-timeout=3s",
     "--middleman.app-identifiers=[\"stoker 0.0.1\"]"});
  BOOST_TEST(wait_exit(worker, 30s) == 1);
  BOOST_TEST(read_file(worker.log).find("runs another Stoker release")
               != std::string::npos,
             read_file(worker.log));
  BOOST_TEST(wait_exit(head.proc, 30s) == 1); // nobody joined
}

BOOST_AUTO_TEST_CASE(a_port_in_use_is_named_and_the_head_exits_2) {
  taken_port taken;
  auto port = std::to_string(taken.port);
  auto head = start_node(with_small({"--role=head", "--cluster.port=" + port}),
                         tmp_path("inuse.log"));
  BOOST_TEST(wait_exit(head, 30s) == 2); // refused before anything ran
  auto log = read_file(head.log);
  BOOST_TEST(log.find("cluster.port = " + port + ": cannot listen on "
                      "127.0.0.1:" + port + " (Address already in use)")
               != std::string::npos,
             log);
}

BOOST_AUTO_TEST_CASE(a_node_without_a_head_fails_clearly_within_the_timeout) {
  auto port = std::to_string(free_port());
  auto t0 = std::chrono::steady_clock::now();
  auto c = start_node({"--role=worker", "--node.name=lonely",
                       "--cluster.head=127.0.0.1:" + port,
                       "--cluster.connect-timeout=1s"},
                      tmp_path("lonely.log"));
  BOOST_TEST(wait_exit(c, 30s) == 1);
  auto elapsed = std::chrono::steady_clock::now() - t0;
  BOOST_TEST((elapsed < 10s));
  BOOST_TEST(read_file(c.log).find("cannot reach the head at 127.0.0.1:"
                                   + port + " within 1000 ms")
             != std::string::npos);
}

BOOST_AUTO_TEST_CASE(head_names_the_nodes_that_never_joined) {
  auto c = start_node(with_small({"--role=head", "--cluster.port=0",
                                  "--cluster.join-timeout=1s",
                                  "--cluster.nodes=[\"ghost:worker\", "
                                  "\"phantom:trainer\"]"}),
                      tmp_path("ghost.log"));
  BOOST_TEST(wait_exit(c, 30s) == 1);
  auto out = read_file(c.log);
  BOOST_TEST(out.find("missing: ghost, phantom; joined: none")
             != std::string::npos);
}

BOOST_AUTO_TEST_CASE(worker_without_head_address_is_a_config_error) {
  auto c = start_node({"--role=worker"}, tmp_path("nohead.log"));
  BOOST_TEST(wait_exit(c, 30s) == 2);
  BOOST_TEST(read_file(c.log).find("--cluster.head=HOST:PORT")
             != std::string::npos);
}

BOOST_AUTO_TEST_CASE(sagemaker_hosts_given_one_command_line_find_their_roles) {
  // One fixture, three "hosts" on loopback (127.0.0.1-3); each process
  // gets the same flags but its own current host.
  auto file = std::string{STOKER_SOURCE_DIR}
              + "/tests/config/sagemaker/loopback.json";
  auto port = std::to_string(free_port());
  auto report = tmp_path("sagemaker.json");
  auto hosts = start_discovered(file, {"127.0.0.1", "127.0.0.2", "127.0.0.3"},
                                port, report, "sm-");
  for (auto& h : hosts)
    BOOST_TEST(wait_exit(h, 60s) == 0, read_file(h.log));
  auto head = read_file(hosts[0].log);
  BOOST_TEST(head.find("this host 127.0.0.1 runs head and trainer")
             != std::string::npos,
             head);
  BOOST_TEST(head.find("3 node(s) joined, running") != std::string::npos);
  BOOST_TEST(read_file(hosts[2].log).find("role worker, node 127.0.0.3, head "
                                          "127.0.0.1:" + port)
             != std::string::npos);
  auto json = read_file(report);
  BOOST_TEST(json.find("\"samples_delivered\": 640,") != std::string::npos,
             json);
  BOOST_TEST(json.find("\"missing\": 0,") != std::string::npos);
  std::remove(report.c_str());
  // --print-nodes shows the topology without starting anything; a broken
  // file is named, exit 2, and so is --role beside discovery.
  auto shown = start_node({"--cluster.discover=sagemaker",
                           "--cluster.sagemaker-config=" + file,
                           "--print-nodes"},
                          tmp_path("sm-print.log"));
  BOOST_TEST(wait_exit(shown, 30s) == 0);
  BOOST_TEST(read_file(shown.log).find("127.0.0.2 worker 0")
             != std::string::npos);
  auto broken = tmp_path("sm-broken.json");
  { std::ofstream{broken} << "{\"hosts\": [\"a\"]}"; }
  auto bad = start_node({"--cluster.discover=sagemaker",
                         "--cluster.sagemaker-config=" + broken},
                        tmp_path("sm-bad.log"));
  BOOST_TEST(wait_exit(bad, 30s) == 2);
  BOOST_TEST(read_file(bad.log).find(broken + ": no \"current_host\" field")
               != std::string::npos,
             read_file(bad.log));
  // On a GPU host beyond loopback without tls.*, printing the plan starts
  // nothing, so it needs no TLS (it was refused, exit 2, with no plan).
  auto article = std::string{STOKER_SOURCE_DIR}
                 + "/tests/config/sagemaker/article.json";
  auto on_gpu_host = start_node({"--cluster.discover=sagemaker",
                                 "--cluster.sagemaker-config=" + article,
                                 "--cluster.current-host=algo-1",
                                 "--print-nodes"},
                                tmp_path("sm-print-gpu.log"));
  BOOST_TEST(wait_exit(on_gpu_host, 30s) == 0, read_file(on_gpu_host.log));
  BOOST_TEST(read_file(on_gpu_host.log).find("algo-1 trainer 0\nalgo-2 worker 0")
               != std::string::npos,
             read_file(on_gpu_host.log));
  // Without --print-nodes the same host still needs tls.* (or insecure).
  auto unprotected = start_node({"--cluster.discover=sagemaker",
                                 "--cluster.sagemaker-config=" + article,
                                 "--cluster.current-host=algo-1"},
                                tmp_path("sm-unprotected.log"));
  BOOST_TEST(wait_exit(unprotected, 30s) == 2);
  BOOST_TEST(read_file(unprotected.log).find("cluster.bind = \"algo-1\"")
               != std::string::npos,
             read_file(unprotected.log));
  auto with_role = start_node({"--cluster.discover=sagemaker", "--role=worker",
                               "--cluster.sagemaker-config=" + file},
                              tmp_path("sm-role.log"));
  BOOST_TEST(wait_exit(with_role, 30s) == 2);
  BOOST_TEST(read_file(with_role.log).find("discovery decides each host's "
                                           "role")
             != std::string::npos);
  std::remove(broken.c_str());
}

// Every host in the trainer group (SageMaker's homogeneousCluster): the
// head said "1 node(s) joined, running" and waited for ever. Each trainer
// host now runs its own CPU workers (HOST-cpu) and the run completes.
BOOST_AUTO_TEST_CASE(a_discovered_cluster_of_trainer_hosts_only_runs_its_own_workers) {
  auto file = std::string{STOKER_SOURCE_DIR}
              + "/tests/config/sagemaker/loopback-homogeneous.json";
  auto report = tmp_path("homogeneous.json");
  auto hosts = start_discovered(file, {"127.0.0.1", "127.0.0.2"},
                                std::to_string(free_port()), report, "hom-");
  for (auto& h : hosts)
    BOOST_TEST(wait_exit(h, 90s) == 0, read_file(h.log));
  auto head = read_file(hosts[0].log);
  BOOST_TEST(head.find("this host 127.0.0.1 runs head and trainer 127.0.0.1 "
                       "and worker 127.0.0.1-cpu")
               != std::string::npos,
             head);
  BOOST_TEST(head.find("4 node(s) joined, running") != std::string::npos,
             head);
  auto json = read_file(report);
  BOOST_TEST(json.find("\"samples_delivered\": 640,") != std::string::npos,
             json);
  BOOST_TEST(json.find("\"missing\": 0,") != std::string::npos);
  BOOST_TEST(json.find("127.0.0.2-cpu/0") != std::string::npos, json);
  std::remove(report.c_str());
}

// A plan with no worker node at all (here written by hand) fails after
// cluster.join-timeout, naming it, instead of waiting for ever.
BOOST_AUTO_TEST_CASE(a_run_no_worker_ever_joins_fails_naming_the_join_timeout) {
  auto head = start_head("noworker",
                         with_small({"--cluster.nodes=[\"t-0:trainer\"]",
                                     "--cluster.join-timeout=2s",
                                     "--pipeline.dataset-size=64"}));
  auto trainer = start_member(head.at, "noworker", "trainer", "t-0",
                              with_small({}));
  BOOST_TEST(wait_exit(head.proc, 60s) == 1, read_file(head.proc.log));
  auto log = read_file(head.proc.log);
  BOOST_TEST(log.find("no CPU worker has joined yet; waiting up to 2000 ms "
                      "(cluster.join-timeout)")
               != std::string::npos,
             log);
  BOOST_TEST(log.find("no CPU worker joined (nothing makes batches") != std::string::npos,
             log);
  BOOST_TEST(wait_exit(trainer, 30s) != -1);
}

BOOST_AUTO_TEST_SUITE_END()
