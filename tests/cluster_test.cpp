#include <boost/test/unit_test.hpp>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <tuple>

#include "stoker/membership.hpp"
#include "stoker/run_config.hpp"

// Real stoker-node processes on 127.0.0.1, as a user would run them.

namespace {

using namespace std::chrono_literals;

std::string tmp_path(const std::string& what) {
  return "/tmp/stoker-cluster-test-" + std::to_string(::getpid()) + "-" + what;
}

std::string read_file(const std::string& path) {
  std::ifstream in{path};
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A child process with stdout and stderr in a log file.
struct child {
  pid_t pid = -1;
  std::string log;
};

child start(const std::string& program, std::vector<std::string> args,
            const std::string& log) {
  child c;
  c.log = log;
  c.pid = ::fork();
  BOOST_REQUIRE(c.pid >= 0);
  if (c.pid == 0) {
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    std::vector<char*> argv{const_cast<char*>(program.c_str())};
    for (auto& a : args)
      argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(program.c_str(), argv.data());
    ::_exit(127);
  }
  return c;
}

child start_node(std::vector<std::string> args, const std::string& log) {
  return start(STOKER_NODE_BINARY, std::move(args), log);
}

// The exit code, or -1 if it ran past `timeout` (then it is killed).
int wait_exit(child& c, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    if (::waitpid(c.pid, &status, WNOHANG) == c.pid)
      return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::this_thread::sleep_for(20ms);
  }
  ::kill(c.pid, SIGKILL);
  ::waitpid(c.pid, &status, 0);
  BOOST_TEST_MESSAGE("killed after timeout; log:\n" << read_file(c.log));
  return -1;
}

bool wait_for_text(const std::string& path, const std::string& text,
                   std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (read_file(path).find(text) != std::string::npos)
      return true;
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

// A port nothing listens on: bound to find it, then closed.
uint16_t free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

// Batches per worker name in a JSON run report.
std::map<std::string, int> batches_by_worker(const std::string& json) {
  std::map<std::string, int> result;
  std::regex entry{R"re("name": "([^"]+)", "batches": (\d+))re"};
  for (std::sregex_iterator i{json.begin(), json.end(), entry}, end; i != end;
       ++i)
    result[(*i)[1]] = std::stoi((*i)[2]);
  return result;
}

const std::vector<std::string> small = {
  "--trainer.device=sim", "--pipeline.height=32", "--pipeline.width=32"};

std::vector<std::string> with_small(std::vector<std::string> args) {
  args.insert(args.end(), small.begin(), small.end());
  return args;
}

// Head, a sim trainer and two one-worker nodes, `fast` and `slow` (3x the
// blur work), as processes; 100 batches of 16 96x96 images, workers the
// bottleneck. Returns the JSON run report.
std::string run_fast_and_slow(const std::string& tag,
                              std::vector<std::string> head_args) {
  auto port_file = tmp_path(tag + ".port");
  auto report = tmp_path(tag + ".json");
  std::remove(port_file.c_str());
  const std::vector<std::string> shape = {"--pipeline.height=96",
                                          "--pipeline.width=96",
                                          "--trainer.device=sim",
                                          "--trainer.sim-step-ms=1"};
  auto with_shape = [&](std::vector<std::string> args) {
    args.insert(args.end(), shape.begin(), shape.end());
    return args;
  };
  std::vector<std::string> args = {
    "--role=head", "--cluster.port=0", "--cluster.port-file=" + port_file,
    "--cluster.nodes=[\"t-0:trainer\", \"fast:worker:1\", "
    "\"slow:worker:1\"]",
    "--pipeline.dataset-size=1600", "--pipeline.batch-size=16",
    "--report=" + report};
  args.insert(args.end(), head_args.begin(), head_args.end());
  auto head = start_node(with_shape(args), tmp_path(tag + "-head.log"));
  BOOST_REQUIRE(wait_for_text(port_file, "\n", 20s));
  auto at = "--cluster.head=127.0.0.1:" + std::to_string(std::stoi(
                                             read_file(port_file)));
  auto trainer = start_node(with_shape({"--role=trainer", "--node.name=t-0",
                                        at}),
                            tmp_path(tag + "-t0.log"));
  auto fast = start_node({"--role=worker", "--node.name=fast",
                          "--worker.count=1", at},
                         tmp_path(tag + "-fast.log"));
  auto slow = start_node({"--role=worker", "--node.name=slow",
                          "--worker.count=1", "--worker.slowdown=3", at},
                         tmp_path(tag + "-slow.log"));
  BOOST_TEST(wait_exit(head, 120s) == 0);
  for (auto* c : {&trainer, &fast, &slow})
    BOOST_TEST(wait_exit(*c, 20s) == 0);
  BOOST_TEST_MESSAGE(read_file(head.log));
  auto json = read_file(report);
  std::remove(report.c_str());
  std::remove(port_file.c_str());
  return json;
}

// Head, a sim trainer and three one-worker nodes as processes; once the
// trainer has taken 10 steps, worker w-b gets `signal` (SIGKILL: dies;
// SIGSTOP: hangs with its connections open). Returns the run report.
std::string run_with_a_failing_worker(const std::string& tag, int signal,
                                      std::vector<std::string> head_args) {
  auto port_file = tmp_path(tag + ".port");
  auto report = tmp_path(tag + ".json");
  std::remove(port_file.c_str());
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
    "--role=head", "--cluster.port=0", "--cluster.port-file=" + port_file,
    "--cluster.nodes=[\"t-0:trainer\", \"w-a:worker:1\", \"w-b:worker:1\", "
    "\"w-c:worker:1\"]",
    "--pipeline.dataset-size=6400", "--pipeline.batch-size=16",
    "--report=" + report};
  args.insert(args.end(), head_args.begin(), head_args.end());
  auto head = start_node(with_shape(args), tmp_path(tag + "-head.log"));
  BOOST_REQUIRE(wait_for_text(port_file, "\n", 20s));
  auto at = "--cluster.head=127.0.0.1:" + std::to_string(std::stoi(
                                             read_file(port_file)));
  auto trainer = start_node(with_shape({"--role=trainer", "--node.name=t-0",
                                        at}),
                            tmp_path(tag + "-t0.log"));
  std::vector<child> workers;
  for (auto name : {"w-a", "w-b", "w-c"})
    workers.push_back(start_node({"--role=worker",
                                  "--node.name=" + std::string{name},
                                  "--worker.count=1", at},
                                 tmp_path(tag + "-" + name + ".log")));
  BOOST_REQUIRE(wait_for_text(trainer.log, "Iteration 10:", 60s));
  ::kill(workers[1].pid, signal);
  BOOST_TEST(wait_exit(head, 120s) == 0);
  BOOST_TEST_MESSAGE(read_file(head.log));
  std::smatch m;
  auto log = read_file(head.log);
  BOOST_REQUIRE(std::regex_search(
    log, m, std::regex{R"(router: worker 'w-b/0' lost \((.*)\); re-leasing (\d+))"}));
  BOOST_TEST(std::stoi(m[2]) > 0, "it held nothing when it failed");
  BOOST_TEST_MESSAGE("lost: " << m[1]);
  BOOST_TEST(wait_exit(trainer, 20s) == 0);
  BOOST_TEST(wait_exit(workers[0], 20s) == 0);
  BOOST_TEST(wait_exit(workers[2], 20s) == 0);
  ::kill(workers[1].pid, SIGKILL); // the hung one, if it still is
  int status = 0;
  ::waitpid(workers[1].pid, &status, 0);
  auto json = read_file(report);
  std::remove(report.c_str());
  std::remove(port_file.c_str());
  return json;
}

// A line-based console client, as `nc` would be.
struct console_client {
  int fd = -1;

  explicit console_client(uint16_t port) {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(port);
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    BOOST_REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to))
                  == 0);
    timeval limit{10, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
  }

  ~console_client() { ::close(fd); }

  // Sends a line (none if empty), returns what came back up to the next
  // prompt or the goodbye.
  std::string ask(const std::string& line) {
    if (!line.empty())
      ::send(fd, (line + "\n").data(), line.size() + 1, MSG_NOSIGNAL);
    std::string out;
    char buf[4096];
    while (out.size() < 2 || out.compare(out.size() - 2, 2, "> ") != 0) {
      auto n = ::recv(fd, buf, sizeof(buf), 0);
      if (n <= 0)
        break;
      out.append(buf, static_cast<size_t>(n));
      if (out.find("bye") != std::string::npos)
        break;
    }
    BOOST_TEST_MESSAGE("> " << line << "\n" << out);
    return out;
  }
};

} // namespace

BOOST_AUTO_TEST_SUITE(cluster)

BOOST_AUTO_TEST_CASE(topology_entries_parse_and_bad_ones_are_named) {
  auto w = stoker::parse_node_spec("worker-a:worker:3");
  BOOST_REQUIRE(w);
  BOOST_TEST(w->name == "worker-a");
  BOOST_TEST(w->role == "worker");
  BOOST_TEST(w->workers == 3u);
  auto t = stoker::parse_node_spec("gpu:trainer");
  BOOST_REQUIRE(t);
  BOOST_TEST(t->role == "trainer");
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
  auto joins = [&](const std::string& name) { return !m.join(name); };
  BOOST_TEST(joins("a"));
  BOOST_TEST(joins("late")); // not expected, still welcome
  BOOST_TEST(!joins("a"));   // a second node of the same name is not
  BOOST_TEST(m.missing() == (std::vector<std::string>{"t", "b"}));
  BOOST_TEST(!m.complete());
  BOOST_TEST(joins("t"));
  BOOST_TEST(joins("b"));
  BOOST_TEST(m.complete());
}

BOOST_AUTO_TEST_CASE(launched_cluster_delivers_every_sample_once) {
  auto report = tmp_path("report.json");
  auto log = tmp_path("launch.log");
  auto launcher = std::string{STOKER_SOURCE_DIR} + "/tools/launch-cluster";
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

BOOST_AUTO_TEST_CASE(a_worker_joining_late_still_receives_work) {
  auto port_file = tmp_path("late.port");
  auto report = tmp_path("late.json");
  std::remove(port_file.c_str());
  auto head = start_node(
    with_small({"--role=head", "--cluster.port=0",
                "--cluster.port-file=" + port_file,
                "--cluster.nodes=[\"t-0:trainer\", \"w-a:worker:1\"]",
                "--pipeline.dataset-size=1600", "--pipeline.batch-size=16",
                "--trainer.sim-step-ms=30", "--report=" + report}),
    tmp_path("late-head.log"));
  BOOST_REQUIRE(wait_for_text(port_file, "\n", 20s));
  auto at = "--cluster.head=127.0.0.1:" + std::to_string(std::stoi(
                                             read_file(port_file)));
  auto trainer = start_node(
    with_small({"--role=trainer", "--node.name=t-0", at}),
    tmp_path("late-t0.log"));
  auto early = start_node({"--role=worker", "--node.name=w-a",
                           "--worker.count=1", at},
                          tmp_path("late-wa.log"));
  BOOST_REQUIRE(wait_for_text(head.log, "running", 30s));
  auto late = start_node({"--role=worker", "--node.name=w-b",
                          "--worker.count=1", at},
                         tmp_path("late-wb.log"));
  BOOST_TEST(wait_exit(head, 120s) == 0);
  for (auto* c : {&trainer, &early, &late})
    BOOST_TEST(wait_exit(*c, 20s) == 0);
  auto batches = batches_by_worker(read_file(report));
  BOOST_TEST_MESSAGE(read_file(head.log));
  BOOST_TEST(batches["w-b/0"] > 0);
  BOOST_TEST(batches["w-a/0"] + batches["w-b/0"] == 100);
  // Every batch took the direct stream, none the middleman.
  BOOST_TEST(read_file(trainer.log).find("batch stream: 100 batch(es) received")
             != std::string::npos, read_file(trainer.log));
  std::remove(report.c_str());
  std::remove(port_file.c_str());
}

BOOST_AUTO_TEST_CASE(batches_travel_as_caf_messages_with_the_stream_off) {
  auto port_file = tmp_path("nostream.port");
  auto report = tmp_path("nostream.json");
  std::remove(port_file.c_str());
  auto head = start_node(
    with_small({"--role=head", "--cluster.port=0",
                "--cluster.port-file=" + port_file,
                "--cluster.nodes=[\"t-0:trainer\", \"w-a:worker:1\"]",
                "--pipeline.dataset-size=96", "--pipeline.batch-size=16",
                "--transport.batch-stream=false", "--report=" + report}),
    tmp_path("nostream-head.log"));
  BOOST_REQUIRE(wait_for_text(port_file, "\n", 20s));
  auto at = "--cluster.head=127.0.0.1:" + std::to_string(std::stoi(
                                             read_file(port_file)));
  auto trainer = start_node(with_small({"--role=trainer", "--node.name=t-0", at}),
                            tmp_path("nostream-t0.log"));
  auto worker = start_node({"--role=worker", "--node.name=w-a",
                            "--worker.count=1", at},
                           tmp_path("nostream-wa.log"));
  BOOST_TEST(wait_exit(head, 120s) == 0);
  for (auto* c : {&trainer, &worker})
    BOOST_TEST(wait_exit(*c, 20s) == 0);
  auto json = read_file(report);
  BOOST_TEST(json.find("\"samples_delivered\": 96,") != std::string::npos,
             json);
  BOOST_TEST(json.find("\"missing\": 0,") != std::string::npos);
  BOOST_TEST(read_file(trainer.log).find("batch stream") == std::string::npos);
  std::remove(report.c_str());
  std::remove(port_file.c_str());
}

BOOST_AUTO_TEST_CASE(least_loaded_gives_a_fast_worker_over_twice_a_slow_ones) {
  auto json = run_fast_and_slow("hetero", {"--router.policy=least-loaded"});
  BOOST_TEST(json.find("\"missing\": 0,") != std::string::npos, json);
  auto batches = batches_by_worker(json);
  BOOST_TEST(batches["fast/0"] + batches["slow/0"] == 100);
  BOOST_TEST(batches["fast/0"] > 2 * batches["slow/0"],
             "fast " << batches["fast/0"] << ", slow " << batches["slow/0"]);
  BOOST_TEST(batches["slow/0"] > 0);
}

BOOST_AUTO_TEST_CASE(hedged_stragglers_are_trained_on_once) {
  // Round-robin hands the slow worker every other batch; each takes ~3x
  // the median, so with factor 1.5 most get a second copy.
  auto json = run_fast_and_slow("hedge", {"--router.policy=round-robin",
                                          "--router.hedge-factor=1.5"});
  BOOST_TEST(json.find("\"samples_delivered\": 1600,") != std::string::npos,
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
}

BOOST_AUTO_TEST_CASE(a_worker_killed_mid_epoch_loses_no_sample) {
  auto json = run_with_a_failing_worker("kill9", SIGKILL, {});
  BOOST_TEST(json.find("\"samples_delivered\": 6400,") != std::string::npos,
             json);
  BOOST_TEST(json.find("\"missing\": 0,") != std::string::npos);
  BOOST_TEST(json.find("\"duplicates\": 0,") != std::string::npos);
  BOOST_TEST(json.find("\"lost_workers\": [\"w-b/0\"]") != std::string::npos);
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

BOOST_AUTO_TEST_CASE(random_bytes_on_the_heads_port_neither_crash_nor_stall_it) {
  auto port_file = tmp_path("junk.port");
  auto report = tmp_path("junk.json");
  std::remove(port_file.c_str());
  auto head = start_node(
    with_small({"--role=head", "--cluster.port=0",
                "--cluster.port-file=" + port_file,
                "--cluster.nodes=[\"t-0:trainer\", \"w-a:worker:1\"]",
                "--pipeline.dataset-size=64", "--pipeline.batch-size=16",
                "--report=" + report}),
    tmp_path("junk-head.log"));
  BOOST_REQUIRE(wait_for_text(port_file, "\n", 20s));
  auto port = static_cast<uint16_t>(std::stoi(read_file(port_file)));
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
  auto at = "--cluster.head=127.0.0.1:" + std::to_string(port);
  auto trainer = start_node(with_small({"--role=trainer", "--node.name=t-0", at}),
                            tmp_path("junk-t0.log"));
  auto worker = start_node({"--role=worker", "--node.name=w-a", at},
                           tmp_path("junk-wa.log"));
  BOOST_TEST(wait_exit(head, 60s) == 0, read_file(head.log));
  BOOST_TEST(wait_exit(trainer, 20s) == 0);
  BOOST_TEST(wait_exit(worker, 20s) == 0);
  ::close(silent);
  BOOST_TEST(read_file(report).find("\"missing\": 0,") != std::string::npos);
  std::remove(report.c_str());
  std::remove(port_file.c_str());
}

BOOST_AUTO_TEST_CASE(a_node_of_another_release_is_refused_by_name) {
  auto port_file = tmp_path("release.port");
  std::remove(port_file.c_str());
  auto head = start_node(with_small({"--role=head", "--cluster.port=0",
                                     "--cluster.port-file=" + port_file,
                                     "--cluster.join-timeout=8s",
                                     "--cluster.nodes=[\"w:worker\"]"}),
                         tmp_path("release-head.log"));
  BOOST_REQUIRE(wait_for_text(port_file, "\n", 20s));
  auto worker = start_node(
    {"--role=worker", "--node.name=w", "--cluster.connect-timeout=3s",
     "--middleman.app-identifiers=[\"stoker 0.0.1\"]",
     "--cluster.head=127.0.0.1:"
       + std::to_string(std::stoi(read_file(port_file)))},
    tmp_path("release-w.log"));
  BOOST_TEST(wait_exit(worker, 30s) == 1);
  BOOST_TEST(read_file(worker.log).find("runs another Stoker release")
               != std::string::npos,
             read_file(worker.log));
  BOOST_TEST(wait_exit(head, 30s) == 1); // nobody joined
  std::remove(port_file.c_str());
}

BOOST_AUTO_TEST_CASE(a_port_in_use_is_named_and_the_head_exits_1) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  BOOST_REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr)
                == 0);
  BOOST_REQUIRE(::listen(fd, 1) == 0);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  auto port = std::to_string(ntohs(addr.sin_port));
  auto head = start_node(with_small({"--role=head", "--cluster.port=" + port}),
                         tmp_path("inuse.log"));
  BOOST_TEST(wait_exit(head, 30s) == 1);
  BOOST_TEST(read_file(head.log).find("cannot listen on 127.0.0.1:" + port)
               != std::string::npos,
             read_file(head.log));
  ::close(fd);
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
    auto port_file = tmp_path(tag + ".port");
    std::remove(port_file.c_str());
    auto head_args = run;
    // Not long to wait for a trainer that is not coming back.
    head_args.push_back("--cluster.join-timeout=5s");
    for (auto a : {"--role=head", "--cluster.port=0"})
      head_args.push_back(a);
    head_args.push_back("--cluster.port-file=" + port_file);
    head_args.push_back("--report=" + report);
    auto head = start_node(head_args, tmp_path(tag + "-head.log"));
    BOOST_REQUIRE(wait_for_text(port_file, "\n", 20s));
    auto at = "--cluster.head=127.0.0.1:" + std::to_string(std::stoi(
                                               read_file(port_file)));
    trainer_args.insert(trainer_args.end(),
                        {"--role=trainer", "--node.name=t-0", at,
                         "--trainer.device=sim",
                         "--trainer.checkpoint-dir=" + dir,
                         "--trainer.checkpoint-every=10"});
    auto trainer = start_node(trainer_args, tmp_path(tag + "-t0.log"));
    auto worker = start_node({"--role=worker", "--node.name=w-a", at},
                             tmp_path(tag + "-wa.log"));
    std::remove(port_file.c_str());
    return std::vector<child>{head, trainer, worker};
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
  auto port_file = tmp_path("rejoin.port");
  std::remove(port_file.c_str());
  const std::vector<std::string> run = {
    "--trainer.device=sim", "--trainer.sim-step-ms=10",
    "--pipeline.height=32", "--pipeline.width=32",
    "--pipeline.dataset-size=3200", "--pipeline.batch-size=16"};
  auto head_args = run;
  head_args.insert(head_args.end(),
                   {"--role=head", "--cluster.port=0",
                    "--cluster.port-file=" + port_file, "--report=" + report,
                    "--cluster.nodes=[\"t-0:trainer\", \"w-a:worker:1\"]"});
  auto head = start_node(head_args, tmp_path("rejoin-head.log"));
  BOOST_REQUIRE(wait_for_text(port_file, "\n", 20s));
  auto at = "--cluster.head=127.0.0.1:" + std::to_string(std::stoi(
                                             read_file(port_file)));
  std::vector<std::string> trainer_args = {
    "--role=trainer", "--node.name=t-0", at, "--trainer.device=sim",
    "--trainer.checkpoint-dir=" + dir, "--trainer.checkpoint-every=10"};
  auto trainer = start_node(trainer_args, tmp_path("rejoin-t0.log"));
  auto worker = start_node({"--role=worker", "--node.name=w-a", at},
                           tmp_path("rejoin-wa.log"));
  BOOST_REQUIRE(wait_for_text(trainer.log, "checkpoint: step 20 saved", 60s));
  ::kill(trainer.pid, SIGKILL);
  wait_exit(trainer, 5s);
  BOOST_REQUIRE(wait_for_text(head.log, "for a trainer started with --resume",
                              20s));
  trainer_args.push_back("--resume");
  auto again = start_node(trainer_args, tmp_path("rejoin-t0b.log"));
  BOOST_TEST(wait_exit(head, 60s) == 0, read_file(head.log));
  BOOST_TEST(wait_exit(again, 20s) == 0);
  BOOST_TEST(wait_exit(worker, 20s) == 0);
  BOOST_TEST(read_file(head.log).find("a trainer rejoined from its checkpoint")
             != std::string::npos);
  auto json = read_file(report);
  BOOST_TEST(json.find("\"samples_delivered\": 3200,") != std::string::npos,
             json);
  BOOST_TEST(json.find("\"missing\": 0,") != std::string::npos);
  BOOST_TEST(json.find("\"duplicates\": 0,") != std::string::npos);
  std::remove(report.c_str());
  std::remove(port_file.c_str());
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
  BOOST_TEST(code == 1);
  BOOST_TEST(out.find("saved with pipeline.dataset-size = 64, this run has "
                      "128")
               != std::string::npos,
             out);
  std::remove((dir + "/checkpoint.stoker").c_str());
  ::rmdir(dir.c_str());
}

BOOST_AUTO_TEST_CASE(the_tcp_console_inspects_and_steers_a_running_head) {
  auto port_file = tmp_path("console.port");
  auto report = tmp_path("console.json");
  std::remove(port_file.c_str());
  auto console_port = free_port();
  auto head = start_node(
    with_small({"--role=head", "--cluster.port=0",
                "--cluster.port-file=" + port_file,
                "--console.port=" + std::to_string(console_port),
                "--cluster.nodes=[\"t-0:trainer\", \"w-a:worker:1\"]",
                "--pipeline.dataset-size=6400", "--pipeline.batch-size=16",
                "--trainer.sim-step-ms=10", "--report=" + report}),
    tmp_path("console-head.log"));
  BOOST_REQUIRE(wait_for_text(port_file, "\n", 20s));
  console_client console{console_port};
  auto ask = [&](const std::string& line) { return console.ask(line); };
  auto has = [](const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
  };
  BOOST_TEST(has(ask(""), "stoker console"));
  auto at = "--cluster.head=127.0.0.1:" + std::to_string(std::stoi(
                                             read_file(port_file)));
  auto trainer = start_node(with_small({"--role=trainer", "--node.name=t-0", at}),
                            tmp_path("console-t0.log"));
  auto worker = start_node({"--role=worker", "--node.name=w-a", at},
                           tmp_path("console-wa.log"));
  BOOST_REQUIRE(wait_for_text(head.log, "running", 30s));
  auto nodes = ask("nodes");
  BOOST_TEST(has(nodes, "t-0"), nodes);
  BOOST_TEST(has(nodes, "w-a"), nodes);
  BOOST_TEST(has(nodes, "joined"), nodes);
  BOOST_TEST(has(ask("router"), "policy least-loaded"));
  BOOST_TEST(has(ask("set router.policy round-robin"),
                 "router.policy is now round-robin"));
  BOOST_TEST(has(ask("router"), "policy round-robin"));
  BOOST_TEST(has(ask("set router.window 0"), "expected a whole number"));
  BOOST_TEST(has(ask("set router.policy fastest"), "expected least-loaded"));
  BOOST_TEST(has(ask("trainer"), "[simulated accelerator]"));
  BOOST_TEST(has(ask("stats --json"), "\"samples_delivered\":"));
  BOOST_TEST(has(ask("dance"), "unknown command 'dance'"));
  BOOST_TEST(has(ask("help set"), "set router.policy POLICY"));
  BOOST_TEST(has(ask("pause"), "paused: no new leases"));
  BOOST_TEST(has(ask("router"), "PAUSED"));
  BOOST_TEST(has(ask("resume"), "resumed"));
  BOOST_TEST(has(ask("drain nobody"), "no live worker on node 'nobody'"));
  BOOST_TEST(has(ask("drain w-a"), "draining 2 worker(s) of node 'w-a'"));
  BOOST_TEST(has(ask("router"), "draining"));
  BOOST_TEST(has(ask("undrain w-a"), "undrained 2 worker(s)"));
  BOOST_TEST(has(ask("quit"), "bye"));
  BOOST_TEST(wait_exit(head, 60s) == 0, read_file(head.log));
  BOOST_TEST(wait_exit(trainer, 20s) == 0);
  BOOST_TEST(wait_exit(worker, 20s) == 0);
  auto json = read_file(report);
  BOOST_TEST(json.find("\"policy\": \"round-robin\"") != std::string::npos,
             json);
  BOOST_TEST(json.find("\"missing\": 0,") != std::string::npos);
  std::remove(report.c_str());
  std::remove(port_file.c_str());
}

BOOST_AUTO_TEST_CASE(shutdown_from_the_console_ends_the_run_cleanly) {
  auto port_file = tmp_path("stop.port");
  auto report = tmp_path("stop.json");
  std::remove(port_file.c_str());
  auto console_port = free_port();
  auto head = start_node(
    with_small({"--role=head", "--cluster.port=0",
                "--cluster.port-file=" + port_file,
                "--console.port=" + std::to_string(console_port),
                "--cluster.nodes=[\"t-0:trainer\", \"w-a:worker:1\"]",
                "--pipeline.dataset-size=64000", "--pipeline.batch-size=16",
                "--trainer.sim-step-ms=10", "--report=" + report}),
    tmp_path("stop-head.log"));
  BOOST_REQUIRE(wait_for_text(port_file, "\n", 20s));
  auto at = "--cluster.head=127.0.0.1:" + std::to_string(std::stoi(
                                             read_file(port_file)));
  auto trainer = start_node(with_small({"--role=trainer", "--node.name=t-0", at}),
                            tmp_path("stop-t0.log"));
  auto worker = start_node({"--role=worker", "--node.name=w-a", at},
                           tmp_path("stop-wa.log"));
  BOOST_REQUIRE(wait_for_text(head.log, "running", 30s));
  console_client console{console_port};
  console.ask("");
  BOOST_TEST(console.ask("shutdown").find("stopping: no new leases")
             != std::string::npos);
  BOOST_TEST(wait_exit(head, 60s) == 0, read_file(head.log));
  BOOST_TEST(wait_exit(trainer, 20s) == 0);
  BOOST_TEST(wait_exit(worker, 20s) == 0);
  BOOST_TEST(read_file(head.log).find("run stopped early (shutdown from the "
                                      "console)")
             != std::string::npos);
  auto json = read_file(report);
  BOOST_TEST(json.find("\"stopped_by\": \"shutdown from the console\"")
               != std::string::npos,
             json);
  BOOST_TEST(json.find("\"duplicates\": 0,") != std::string::npos);
  BOOST_TEST(json.find("\"missing\": 0,") == std::string::npos); // early
  std::remove(report.c_str());
  std::remove(port_file.c_str());
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

BOOST_AUTO_TEST_SUITE_END()
