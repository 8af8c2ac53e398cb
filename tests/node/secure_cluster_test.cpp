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
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  BOOST_REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr)
                == 0);
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

// The head's peak RSS in MB from its run line ("peak RSS N MB").
long peak_rss_mb(const std::string& log) {
  std::smatch m;
  std::regex rss{R"(peak RSS (\d+) MB)"};
  return std::regex_search(log, m, rss) ? std::stol(m[1]) : -1;
}

void expect_every_sample_once(const std::string& report) {
  auto json = read_file(report);
  BOOST_TEST(json.find("\"samples_delivered\": 320,") != std::string::npos,
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
  auto head = start_head(
    "tls", shaped({tls, "--node.name=head", "--report=" + report,
                   "--cluster.nodes=[\"trainer-0:trainer\", "
                   "\"worker-a:worker:1\", \"worker-b:worker:1\"]"}));
  // A BASP header declaring 4 GiB, in plain TCP.
  send_and_close(head.port, four_gib_header());
  // A node with another CA's certificate, and one without TLS: both exit
  // non-zero saying why; the head names each and goes on.
  auto stranger = start_member(head.at, "tls", "worker", "worker-x",
                               shaped({"--tls.dir=" + certs.other}));
  auto plain = start_member(head.at, "tls", "worker", "plain",
                            shaped({"--cluster.connect-timeout=1s"}));
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
  // The members join and the run completes, batches on the TLS stream.
  auto trainer = start_member(head.at, "tls", "trainer", "trainer-0",
                              shaped({tls}));
  auto a = start_member(head.at, "tls", "worker", "worker-a",
                        shaped({tls, "--worker.count=1"}));
  auto b = start_member(head.at, "tls", "worker", "worker-b",
                        shaped({tls, "--worker.count=1"}));
  BOOST_TEST(wait_exit(head.proc, 120s) == 0);
  for (auto* c : {&trainer, &a, &b})
    BOOST_TEST(wait_exit(*c, 20s) == 0);
  auto log = read_file(head.proc.log);
  BOOST_TEST(log.find("refused 127.0.0.1:") != std::string::npos, log);
  BOOST_TEST(log.find("not TLS") != std::string::npos, log);
  BOOST_TEST(log.find("alert unknown ca") != std::string::npos, log);
  BOOST_TEST(read_file(trainer.log).find("20 batch(es) received")
               != std::string::npos,
             read_file(trainer.log));
  expect_every_sample_once(report);
}

BOOST_AUTO_TEST_CASE(a_four_gib_caf_header_is_closed_at_the_gate_on_loopback) {
  auto report = tmp_path("guard.json");
  auto head = start_head(
    "guard", shaped({"--report=" + report,
                     "--cluster.nodes=[\"t-0:trainer\", \"w:worker:1\"]"}));
  send_and_close(head.port, four_gib_header());
  auto trainer = start_member(head.at, "guard", "trainer", "t-0", shaped({}));
  auto worker = start_member(head.at, "guard", "worker", "w",
                             shaped({"--worker.count=1"}));
  BOOST_TEST(wait_exit(head.proc, 120s) == 0);
  for (auto* c : {&trainer, &worker})
    BOOST_TEST(wait_exit(*c, 20s) == 0);
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
               "/tools/stoker-console "
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
