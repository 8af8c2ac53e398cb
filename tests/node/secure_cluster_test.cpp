#include <boost/test/unit_test.hpp>

#include <regex>

#include "support/dev_certs.hpp"
#include "support/node_processes.hpp"

// The cluster as a security reviewer tries it (docs/security.md): mutual
// TLS between nodes, strangers refused with reasons on both sides while the
// run goes on, and a BASP header declaring 4 GiB stopped at the gate.

using namespace stoker_test;

namespace {

const std::vector<std::string> run_shape = {
  "--trainer.device=sim", "--pipeline.height=32", "--pipeline.width=32",
  "--pipeline.dataset-size=320", "--pipeline.batch-size=16"};

std::vector<std::string> shaped(std::vector<std::string> args) {
  args.insert(args.end(), run_shape.begin(), run_shape.end());
  return args;
}

// Sends `bytes` to 127.0.0.1:port and closes, as a stranger would.
void send_and_close(uint16_t port, const std::string& bytes) {
  int fd = connect_loopback(port);
  BOOST_REQUIRE(fd >= 0);
  BOOST_TEST(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL)
             == static_cast<ssize_t>(bytes.size()));
  ::close(fd);
}

// A BASP header declaring a 0xFFFFFFFF-byte payload, then 96 more bytes:
// the 128 bytes that stalled a head before the gate.
std::string four_gib_header() {
  return std::string("\x01\x00\x00\x00\xff\xff\xff\xff", 8)
         + std::string(120, '\0');
}

// What a stranger throws at a port: the 4 GiB header, 4 KiB of random
// bytes, each on a connection it then closes, and the start of a TLS
// ClientHello on one it keeps open (returned: close it at the end).
int attack(uint16_t port) {
  send_and_close(port, four_gib_header());
  std::string noise(4096, '\0');
  uint32_t x = 2463534242u;
  for (auto& c : noise) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    c = static_cast<char>(x);
  }
  send_and_close(port, noise);
  int fd = connect_loopback(port);
  BOOST_REQUIRE(fd >= 0);
  std::string hello_start("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11);
  ::send(fd, hello_start.data(), hello_start.size(), MSG_NOSIGNAL);
  return fd;
}

// The ports a trainer node's joined line names: its CAF port and its
// batch stream ("; port H:P; batch stream on H:P").
std::vector<uint16_t> trainer_ports(const std::string& log) {
  std::vector<uint16_t> ports;
  std::regex port{R"((?:port|batch stream on) [0-9.]+:(\d+))"};
  for (std::sregex_iterator i{log.begin(), log.end(), port}, end; i != end;
       ++i)
    ports.push_back(static_cast<uint16_t>(std::stoi((*i)[1])));
  return ports;
}

// An `openssl s_client` as a stranger would run it against 127.0.0.1:port,
// with `args` (certificate or none); its output is not needed.
void openssl_client(uint16_t port, const std::string& args) {
  auto cmd = "timeout 10 openssl s_client -connect 127.0.0.1:"
             + std::to_string(port) + " " + args
             + " </dev/null >/dev/null 2>&1";
  BOOST_TEST_MESSAGE(cmd << ": exit " << std::system(cmd.c_str()));
}

// The head's peak RSS in MB from its run line ("peak RSS N MB").
long peak_rss_mb(const std::string& log) {
  std::smatch m;
  std::regex rss{R"(peak RSS (\d+) MB)"};
  return std::regex_search(log, m, rss) ? std::stol(m[1]) : -1;
}

void expect_every_sample_once(const std::string& report, int samples = 320) {
  auto json = read_file(report);
  BOOST_TEST(json.find("\"samples_delivered\": " + std::to_string(samples)
                       + ",")
               != std::string::npos,
             json);
  BOOST_TEST(json.find("\"missing\": 0,") != std::string::npos);
  BOOST_TEST(json.find("\"duplicates\": 0,") != std::string::npos);
  std::remove(report.c_str());
}

} // namespace

BOOST_AUTO_TEST_SUITE(secure_cluster)

BOOST_AUTO_TEST_CASE(a_tls_cluster_runs_while_strangers_are_refused_by_name) {
  auto& certs = stoker::test::dev_certs();
  auto tls = "--tls.dir=" + certs.cluster;
  auto report = tmp_path("tls.json");
  // 40 steps of 50 ms: the strangers below meet a running trainer.
  auto longer = [&](std::vector<std::string> args) {
    auto all = shaped(std::move(args));
    all.insert(all.end(), {"--pipeline.dataset-size=640",
                           "--trainer.sim-step-ms=50"});
    return all;
  };
  auto head = start_head(
    "tls", longer({tls, "--node.name=head", "--report=" + report,
                   "--cluster.nodes=[\"trainer-0:trainer\", "
                   "\"worker-a:worker:1\", \"worker-b:worker:1\"]"}));
  std::vector<int> half_open{attack(head.port)};
  // Clients without a certificate and with an expired one.
  openssl_client(head.port, "-CAfile " + certs.cluster + "/ca.pem");
  openssl_client(head.port, "-CAfile " + certs.cluster + "/ca.pem -cert "
                              + certs.expired + "/stale.pem -key "
                              + certs.expired + "/stale.key");
  // A node with another CA's certificate, and one without TLS: both exit
  // non-zero saying why; the head names each and goes on. A node with an
  // expired certificate refuses itself, naming the file.
  auto stranger = start_member(head.at, "tls", "worker", "worker-x",
                               shaped({"--tls.dir=" + certs.other}));
  auto plain = start_member(head.at, "tls", "worker", "plain",
                            shaped({"--cluster.connect-timeout=1s"}));
  auto stale = start_member(head.at, "tls", "worker", "stale",
                            shaped({"--tls.dir=" + certs.expired}));
  BOOST_TEST(wait_exit(stranger, 30s) == 1);
  BOOST_TEST(read_file(stranger.log).find(
               "TLS failed: the server's certificate is not valid for this "
               "cluster's CA")
               != std::string::npos,
             read_file(stranger.log));
  BOOST_TEST(wait_exit(plain, 30s) == 1);
  BOOST_TEST(read_file(plain.log).find("set tls.certificate")
               != std::string::npos,
             read_file(plain.log));
  BOOST_TEST(wait_exit(stale, 30s) == 2);
  BOOST_TEST(read_file(stale.log).find("expired") != std::string::npos,
             read_file(stale.log));
  // The members join and the run completes, batches on the TLS stream,
  // while every port of the trainer node is attacked too.
  auto trainer = start_member(head.at, "tls", "trainer", "trainer-0",
                              longer({tls}));
  auto a = start_member(head.at, "tls", "worker", "worker-a",
                        shaped({tls, "--worker.count=1"}));
  auto b = start_member(head.at, "tls", "worker", "worker-b",
                        shaped({tls, "--worker.count=1"}));
  BOOST_REQUIRE(wait_for_text(trainer.log, "batch stream on", 30s));
  auto ports = trainer_ports(read_file(trainer.log));
  BOOST_TEST(ports.size() == 2u, read_file(trainer.log));
  for (auto port : ports)
    half_open.push_back(attack(port));
  BOOST_TEST(wait_exit(head.proc, 120s) == 0);
  for (auto* c : {&trainer, &a, &b})
    BOOST_TEST(wait_exit(*c, 20s) == 0);
  for (int fd : half_open)
    ::close(fd);
  auto log = read_file(head.proc.log);
  for (auto why : {"refused 127.0.0.1:", "not TLS", "alert unknown ca",
                   "the client sent no certificate",
                   "certificate has expired"})
    BOOST_TEST(log.find(why) != std::string::npos, why << " in\n" << log);
  auto trainer_log = read_file(trainer.log);
  BOOST_TEST(trainer_log.find("40 batch(es) received") != std::string::npos,
             trainer_log);
  BOOST_TEST(trainer_log.find("trainer 0's port: refused") != std::string::npos,
             trainer_log);
  BOOST_TEST(trainer_log.find("refused: wrong version number (not TLS")
               != std::string::npos,
             trainer_log);
  expect_every_sample_once(report, 640);
}

// docs/security.md's rule, checked on every socket every process listens
// on: with cluster.bind on loopback, nothing listens anywhere else, with
// and without TLS, in every role, with a data-parallel group of two
// trainer nodes (whose rendezvous store listened on every interface, with
// no authentication, as LibTorch's TCPStore), the console and /metrics on.
BOOST_AUTO_TEST_CASE(every_listening_socket_of_every_role_obeys_the_bind) {
  auto& certs = stoker::test::dev_certs();
  for (bool with_tls : {false, true}) {
    BOOST_TEST_CONTEXT("with TLS: " << with_tls) {
      std::vector<std::string> common = {
        "--cluster.bind=127.0.0.1", "--trainer.sim-step-ms=20",
        "--trainer.collective-timeout=20s"};
      if (with_tls)
        common.push_back("--tls.dir=" + certs.cluster);
      auto args = shaped(common);
      args.push_back("--pipeline.dataset-size=100000");
      auto head_args = args;
      head_args.insert(head_args.end(),
                       {"--node.name=head",
                        "--cluster.nodes=[\"trainer-0:trainer\", "
                        "\"trainer-1:trainer\", \"worker-a:worker:1\"]",
                        "--console.port=" + std::to_string(free_port()),
                        "--metrics.port=" + std::to_string(free_port())});
      auto tag = std::string{"bind-"} + (with_tls ? "tls" : "plain");
      auto head = start_head(tag, head_args);
      auto t0 = start_member(head.at, tag, "trainer", "trainer-0", args);
      auto t1 = start_member(head.at, tag, "trainer", "trainer-1", args);
      auto w = start_member(head.at, tag, "worker", "worker-a", args);
      BOOST_REQUIRE_MESSAGE(wait_for_text(t1.log, "Iteration", 60s)
                              || wait_for_text(t0.log, "Iteration", 1s),
                            read_file(head.proc.log) << read_file(t0.log)
                                                     << read_file(t1.log));
      size_t seen = 0;
      for (auto* c : {&head.proc, &t0, &t1, &w})
        for (auto& l : listening_sockets(c->pid)) {
          ++seen;
          BOOST_TEST(l.loopback, c->log << " listens on " << l.address
                                        << ":" << l.port);
        }
      BOOST_TEST(seen >= 4u); // the head's gate, console, /metrics, ...
      for (auto* c : {&head.proc, &t0, &t1, &w})
        ::kill(c->pid, SIGKILL);
      for (auto* c : {&head.proc, &t0, &t1, &w})
        wait_exit(*c, 5s);
    }
  }
}

BOOST_AUTO_TEST_CASE(a_four_gib_caf_header_is_closed_at_the_gate_on_loopback) {
  auto report = tmp_path("guard.json");
  auto head = start_head(
    "guard", shaped({"--report=" + report,
                     "--cluster.nodes=[\"t-0:trainer\", \"w:worker:1\"]"}));
  std::vector<int> half_open{attack(head.port)};
  auto trainer = start_member(head.at, "guard", "trainer", "t-0",
                              shaped({"--trainer.sim-step-ms=50"}));
  auto worker = start_member(head.at, "guard", "worker", "w",
                             shaped({"--worker.count=1"}));
  BOOST_REQUIRE(wait_for_text(trainer.log, "batch stream on", 30s));
  for (auto port : trainer_ports(read_file(trainer.log)))
    half_open.push_back(attack(port));
  BOOST_TEST(wait_exit(head.proc, 120s) == 0);
  for (auto* c : {&trainer, &worker})
    BOOST_TEST(wait_exit(*c, 20s) == 0);
  for (int fd : half_open)
    ::close(fd);
  auto trainer_log = read_file(trainer.log);
  BOOST_TEST(trainer_log.find("trainer 0's port: closed the connection")
               != std::string::npos,
             trainer_log);
  BOOST_TEST(trainer_log.find("refused: its hello lacks this run's stream "
                             "token")
               != std::string::npos,
             trainer_log);
  auto log = read_file(head.proc.log);
  BOOST_TEST(log.find("closed the connection from 127.0.0.1:")
               != std::string::npos,
             log);
  BOOST_TEST(log.find("declares 4294967295 bytes") != std::string::npos, log);
  // Before the gate, CAF allocated ~620 MB/s for it; now nothing.
  auto rss = peak_rss_mb(log);
  BOOST_TEST(rss > 0, log);
  BOOST_TEST(rss < 400, log);
  expect_every_sample_once(report);
}

BOOST_AUTO_TEST_CASE(a_console_beyond_loopback_takes_only_cluster_certificates) {
  auto& certs = stoker::test::dev_certs();
  auto console_port = std::to_string(free_port());
  auto head = start_head(
    "tls-console", {"--tls.dir=" + certs.cluster, "--node.name=head",
                    "--console.bind=0.0.0.0",
                    "--console.port=" + console_port,
                    "--cluster.join-timeout=30s",
                    "--cluster.nodes=[\"trainer-0:trainer\"]"});
  BOOST_REQUIRE(wait_for_text(head.proc.log, "over mutual TLS", 10s));
  auto client = [&](const std::string& tls_args, const std::string& out) {
    auto cmd = "printf 'nodes\\nquit\\n' | timeout 20 " STOKER_SOURCE_DIR
               "/tools/ops/stoker-console "
               + tls_args + " 127.0.0.1:" + console_port + " >" + out
               + " 2>&1";
    return WEXITSTATUS(std::system(cmd.c_str()));
  };
  auto member = tmp_path("console-member.out");
  BOOST_TEST(client("--tls.dir=" + certs.cluster + " --tls.name=worker-a",
                    member)
             == 0);
  BOOST_TEST(read_file(member).find("node  role") != std::string::npos,
             read_file(member));
  auto stranger = tmp_path("console-stranger.out");
  BOOST_TEST(client("--tls.dir=" + certs.other + " --tls.name=worker-x",
                    stranger)
             == 1);
  BOOST_TEST(read_file(stranger).find("TLS to 127.0.0.1:" + console_port
                                      + " failed")
               != std::string::npos,
             read_file(stranger));
  client("", tmp_path("console-plain.out")); // plain TCP: closed by the gate
  BOOST_TEST(wait_for_text(head.proc.log, "the console port: refused", 10s));
  ::kill(head.proc.pid, SIGTERM);
  wait_exit(head.proc, 30s);
  for (auto f : {member, stranger, tmp_path("console-plain.out")})
    std::remove(f.c_str());
}

BOOST_AUTO_TEST_CASE(listening_beyond_loopback_needs_tls_or_a_stated_choice) {
  // Any address but loopback counts; 0.0.0.0 is refused before binding.
  auto head = start_node({"--role=head", "--cluster.bind=0.0.0.0",
                          "--cluster.port=0"},
                         tmp_path("open-head.log"));
  BOOST_TEST(wait_exit(head, 30s) == 2);
  auto log = read_file(head.log);
  BOOST_TEST(log.find("cluster.bind = \"0.0.0.0\"") != std::string::npos, log);
  BOOST_TEST(log.find("cluster.insecure = true") != std::string::npos, log);
  // Half a TLS configuration is named too.
  auto half = start_node({"--role=head", "--tls.certificate=/nonexistent.pem"},
                         tmp_path("half-tls.log"));
  BOOST_TEST(wait_exit(half, 30s) == 2);
  BOOST_TEST(read_file(half.log).find("tls.key") != std::string::npos,
             read_file(half.log));
}

BOOST_AUTO_TEST_SUITE_END()
