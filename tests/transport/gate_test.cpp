#include <boost/test/unit_test.hpp>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <poll.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

#include "stoker/errors.hpp"
#include "support/dev_certs.hpp"
#include "transport/gate.hpp"
#include "transport/sockets.hpp"

// The gate in front of CAF's ports and the tunnel out of them, driven over
// loopback sockets without an actor system: an echo server stands in for
// CAF's middleman behind the gate.

using namespace stoker;
using namespace std::chrono_literals;

namespace {

// A BASP header (CAF 0.17: operation in byte 0, payload length in bytes
// 4-7, network order) followed by `payload` bytes.
std::string basp_message(unsigned char operation, uint32_t payload) {
  std::string m(32 + payload, '\0');
  m[0] = static_cast<char>(operation);
  m[4] = static_cast<char>(payload >> 24);
  m[5] = static_cast<char>(payload >> 16);
  m[6] = static_cast<char>(payload >> 8);
  m[7] = static_cast<char>(payload);
  for (uint32_t i = 0; i < payload; ++i)
    m[32 + i] = static_cast<char>('a' + i % 26);
  return m;
}

// Echoes every connection's bytes back until it closes; one thread each.
class echo_server {
public:
  echo_server() {
    auto s = detail::tcp_listen("127.0.0.1", 0, "the echo server");
    BOOST_REQUIRE(s);
    fd_ = s->fd;
    port = s->port;
    acceptor_ = std::thread{[this] {
      for (;;) {
        std::string peer;
        int c = detail::tcp_accept(fd_, peer);
        if (c < 0)
          return;
        std::lock_guard<std::mutex> guard{mutex_};
        clients_.push_back(c);
        threads_.emplace_back([c] {
          char buf[4096];
          for (;;) {
            auto n = ::recv(c, buf, sizeof buf, 0);
            if (n <= 0 || ::send(c, buf, static_cast<size_t>(n), MSG_NOSIGNAL)
                            != n)
              break;
          }
          ::shutdown(c, SHUT_RDWR);
        });
      }
    }};
  }
  ~echo_server() {
    ::shutdown(fd_, SHUT_RDWR);
    acceptor_.join();
    ::close(fd_);
    std::lock_guard<std::mutex> guard{mutex_};
    for (int c : clients_)
      ::shutdown(c, SHUT_RDWR);
    for (auto& t : threads_)
      t.join();
    for (int c : clients_)
      ::close(c);
  }
  uint16_t port = 0;

private:
  int fd_ = -1;
  std::mutex mutex_;
  std::vector<int> clients_;
  std::vector<std::thread> threads_;
  std::thread acceptor_;
};

// What a gate or tunnel said, from any thread.
struct said {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::string> lines;

  std::function<void(const std::string&)> log() {
    return [this](const std::string& line) {
      std::lock_guard<std::mutex> guard{mutex};
      lines.push_back(line);
      changed.notify_all();
    };
  }
  // Waits up to 10 s for a line containing `text`; returns it, or "".
  std::string wait_for(const std::string& text) {
    std::unique_lock<std::mutex> guard{mutex};
    std::string found;
    changed.wait_for(guard, 10s, [&] {
      for (auto& l : lines)
        if (l.find(text) != std::string::npos) {
          found = l;
          return true;
        }
      return false;
    });
    return found;
  }
  std::string all() {
    std::lock_guard<std::mutex> guard{mutex};
    std::string out;
    for (auto& l : lines)
      out += l + "\n";
    return out;
  }
};

int connect_to(uint16_t port) {
  auto fd = detail::tcp_connect("127.0.0.1", port, "the gate");
  BOOST_REQUIRE(fd);
  timeval tv{10, 0};
  ::setsockopt(*fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return *fd;
}

void send_all(int fd, const std::string& bytes) {
  BOOST_REQUIRE(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL)
                == static_cast<ssize_t>(bytes.size()));
}

// Reads exactly `size` bytes (or fewer when the peer closes first).
std::string receive(int fd, size_t size) {
  std::string got;
  char buf[4096];
  while (got.size() < size) {
    auto n = ::recv(fd, buf, std::min(sizeof buf, size - got.size()), 0);
    if (n <= 0)
      break;
    got.append(buf, static_cast<size_t>(n));
  }
  return got;
}

// Whether the peer closes `fd` within 10 s: what it says first (a gate's
// verdict) is read and dropped; a receive timeout is not a close.
bool closed_by_peer(int fd) {
  char buf[256];
  for (;;) {
    auto n = ::recv(fd, buf, sizeof buf, 0);
    if (n > 0)
      continue;
    return n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
  }
}

// A node port's options (the verdict first, as node_links' gates) unless
// `preface` is false; every refusal said (no rate limit) unless a test
// sets one.
gate_options options(said& log, std::shared_ptr<const tls_context> tls,
                     bool preface = true) {
  gate_options o;
  o.what = "the test port";
  o.tls = std::move(tls);
  o.max_message_bytes = 1u << 20;
  o.handshake_timeout = 500ms;
  o.log = log.log();
  o.preface = preface;
  o.log_interval = 0ms;
  return o;
}

// How many lines of `log` contain `text`.
size_t count_lines(said& log, const std::string& text) {
  std::lock_guard<std::mutex> guard{log.mutex};
  size_t n = 0;
  for (auto& l : log.lines)
    n += l.find(text) != std::string::npos ? 1 : 0;
  return n;
}

} // namespace

BOOST_AUTO_TEST_SUITE(gate)

BOOST_AUTO_TEST_CASE(basp_guard_passes_well_formed_messages_split_anywhere) {
  auto stream = basp_message(1, 0) + basp_message(3, 5) + basp_message(6, 100)
                + basp_message(0, 1u << 20);
  basp_guard whole{1u << 20};
  BOOST_TEST(whole.feed(stream.data(), stream.size()) == "");
  basp_guard bytewise{1u << 20};
  for (char c : stream)
    BOOST_REQUIRE(bytewise.feed(&c, 1) == "");
}

BOOST_AUTO_TEST_CASE(basp_guard_refuses_a_payload_over_the_limit_naming_it) {
  basp_guard guard{1u << 20};
  // A well-formed message first: the guard follows payloads, so the next
  // header is where it is checked.
  auto ok = basp_message(1, 7);
  BOOST_TEST(guard.feed(ok.data(), ok.size()) == "");
  auto header = basp_message(1, 0);
  for (int i = 4; i < 8; ++i)
    header[i] = '\xff';
  auto why = guard.feed(header.data(), header.size());
  BOOST_TEST(why.find("4294967295") != std::string::npos, why);
  BOOST_TEST(why.find("cluster.max-message-bytes") != std::string::npos, why);
  // Exactly at the limit is fine.
  basp_guard at_limit{100};
  auto hundred = basp_message(2, 100);
  BOOST_TEST(at_limit.feed(hundred.data(), hundred.size()) == "");
}

BOOST_AUTO_TEST_CASE(basp_guard_refuses_what_is_not_basp) {
  basp_guard guard{1u << 20};
  std::string http = "GET / HTTP/1.1\r\nHost: x\r\n\r\n and some more bytes";
  auto why = guard.feed(http.data(), http.size());
  BOOST_TEST(why.find("not a CAF message") != std::string::npos, why);
}

BOOST_AUTO_TEST_CASE(a_plain_gate_relays_both_ways_and_closes_an_oversized_message) {
  echo_server inner;
  said log;
  auto g = stoker::gate::open("127.0.0.1", 0, inner.port,
                              options(log, nullptr, false));
  BOOST_REQUIRE_MESSAGE(g, (g ? "" : describe(g.error())));
  auto good = basp_message(1, 3000);
  int fd = connect_to((*g)->port());
  send_all(fd, good);
  BOOST_TEST(receive(fd, good.size()) == good);
  BOOST_TEST((*g)->admitted() == 1u);
  // A second connection stays up while the first is closed for its header.
  int other = connect_to((*g)->port());
  send_all(fd, std::string("\x01\x00\x00\x00\xff\xff\xff\xff", 8)
                 + std::string(24, '\0'));
  BOOST_TEST(closed_by_peer(fd));
  auto line = log.wait_for("closed the connection from 127.0.0.1:");
  BOOST_TEST(line.find("4294967295") != std::string::npos, log.all());
  BOOST_TEST((*g)->refused() == 1u);
  send_all(other, good);
  BOOST_TEST(receive(other, good.size()) == good);
  ::close(fd);
  ::close(other);
}

BOOST_AUTO_TEST_CASE(a_tls_gate_admits_a_member_through_a_tunnel) {
  auto& certs = stoker::test::dev_certs();
  echo_server inner;
  said gate_log;
  said tunnel_log;
  auto g = stoker::gate::open("127.0.0.1", 0, inner.port,
                      options(gate_log,
                              stoker::test::tls_of(certs.cluster, "head")));
  BOOST_REQUIRE_MESSAGE(g, (g ? "" : describe(g.error())));
  auto t = tunnel::open(
    "127.0.0.1", (*g)->port(),
    options(tunnel_log, stoker::test::tls_of(certs.cluster, "worker-a")));
  BOOST_REQUIRE_MESSAGE(t, (t ? "" : describe(t.error())));
  int fd = connect_to((*t)->local_port());
  auto good = basp_message(4, 70000); // spans several TLS records
  send_all(fd, good);
  BOOST_TEST(receive(fd, good.size()) == good);
  BOOST_TEST((*g)->admitted() == 1u);
  BOOST_TEST((*g)->refused() == 0u);
  // The tunnel checks what leaves as the gate checks what comes in.
  send_all(fd, std::string("\x01\x00\x00\x00\x7f\xff\xff\xff", 8)
                 + std::string(24, '\0'));
  BOOST_TEST(closed_by_peer(fd));
  BOOST_TEST(tunnel_log.wait_for("2147483647") != "", tunnel_log.all());
  ::close(fd);
}

BOOST_AUTO_TEST_CASE(a_tls_gate_refuses_strangers_and_both_sides_say_why) {
  auto& certs = stoker::test::dev_certs();
  echo_server inner;
  said gate_log;
  said tunnel_log;
  auto g = stoker::gate::open("127.0.0.1", 0, inner.port,
                      options(gate_log,
                              stoker::test::tls_of(certs.cluster, "head")));
  BOOST_REQUIRE(g);
  // Another CA's certificate: refused at connect, with the reason.
  auto t = tunnel::open(
    "127.0.0.1", (*g)->port(),
    options(tunnel_log, stoker::test::tls_of(certs.other, "worker-x")));
  BOOST_REQUIRE(!t);
  BOOST_TEST(is(t.error(), errc::run_failure),
             describe(t.error()));
  BOOST_TEST(describe(t.error()).find("TLS failed") != std::string::npos,
             describe(t.error()));
  BOOST_TEST(gate_log.wait_for("refused 127.0.0.1:") != "", gate_log.all());
  // Plain TCP, a CAF peer without tls.*: refused as not TLS.
  int plain = connect_to((*g)->port());
  send_all(plain, basp_message(0, 10));
  BOOST_TEST(closed_by_peer(plain));
  BOOST_TEST(gate_log.wait_for("not TLS") != "", gate_log.all());
  ::close(plain);
  // A peer that connects and says nothing is dropped after the handshake
  // timeout, and the gate goes on.
  int silent = connect_to((*g)->port());
  BOOST_TEST(closed_by_peer(silent));
  ::close(silent);
  BOOST_TEST((*g)->refused() == 3u, gate_log.all());
  BOOST_TEST((*g)->admitted() == 0u);
  auto member = tunnel::open(
    "127.0.0.1", (*g)->port(),
    options(tunnel_log, stoker::test::tls_of(certs.cluster, "worker-b")));
  BOOST_TEST(static_cast<bool>(member));
}

// Without TLS too, a peer that connects and sends nothing is closed after
// the handshake timeout (1,000 idle connections held a gate for ever).
BOOST_AUTO_TEST_CASE(a_plain_gate_closes_a_peer_that_sends_nothing) {
  echo_server inner;
  said log;
  auto g = stoker::gate::open("127.0.0.1", 0, inner.port,
                              options(log, nullptr, false));
  BOOST_REQUIRE(g);
  auto t0 = std::chrono::steady_clock::now();
  int silent = connect_to((*g)->port());
  BOOST_TEST(closed_by_peer(silent));
  BOOST_TEST((std::chrono::steady_clock::now() - t0 < 5s));
  BOOST_TEST(log.wait_for("sent nothing within 500 ms") != "", log.all());
  ::close(silent);
  // One that speaks in time is relayed as before.
  int fd = connect_to((*g)->port());
  auto good = basp_message(1, 10);
  send_all(fd, good);
  BOOST_TEST(receive(fd, good.size()) == good);
  ::close(fd);
}

// One address cannot take every slot; a node refused for it hears why
// (the gate's verdict) and gets in once a slot is free. Repeated
// refusals from one address are one line.
BOOST_AUTO_TEST_CASE(a_gate_caps_one_address_and_says_why_to_the_refused) {
  echo_server inner;
  said log;
  auto o = options(log, nullptr);
  o.max_per_peer = 2;
  o.handshake_timeout = 5s;
  o.log_interval = 60s;
  auto g = stoker::gate::open("127.0.0.1", 0, inner.port, o);
  BOOST_REQUIRE(g);
  // Two nodes' connections: each says hello and is admitted.
  int a = connect_to((*g)->port());
  int b = connect_to((*g)->port());
  send_all(a, gate_hello());
  send_all(b, gate_hello());
  BOOST_TEST(receive(a, 6) == gate_preface('P'));
  BOOST_TEST(receive(b, 6) == gate_preface('P'));
  said tunnel_log;
  auto refused = tunnel::open("127.0.0.1", (*g)->port(),
                              options(tunnel_log, nullptr));
  BOOST_REQUIRE(!refused);
  BOOST_TEST(is(refused.error(), errc::io_failure), describe(refused.error()));
  BOOST_TEST(describe(refused.error())
                 .find("refused this connection: 2 connections from "
                       "127.0.0.1 already open")
               != std::string::npos,
             describe(refused.error()));
  BOOST_TEST(describe(refused.error()).find("max-connections-per-peer")
               != std::string::npos);
  for (int i = 0; i < 20; ++i) {
    int extra = connect_to((*g)->port());
    BOOST_TEST(closed_by_peer(extra));
    ::close(extra);
  }
  BOOST_TEST(log.wait_for("already open") != "");
  BOOST_TEST(count_lines(log, "already open") == 1u, log.all());
  BOOST_TEST((*g)->refused() == 21u);
  ::close(a);
  ::close(b);
  std::this_thread::sleep_for(100ms); // the gate sees them go
  auto member = tunnel::open("127.0.0.1", (*g)->port(),
                             options(tunnel_log, nullptr));
  BOOST_TEST(static_cast<bool>(member),
             (member ? "" : describe(member.error())));
}

BOOST_AUTO_TEST_CASE(a_refusal_log_says_an_address_and_reason_once_per_interval) {
  refusal_log r{10s};
  auto t = std::chrono::steady_clock::now();
  BOOST_TEST(r.note("10.0.0.1:5000", "full", "refused 10.0.0.1:5000: full", t)
             == "refused 10.0.0.1:5000: full");
  BOOST_TEST(r.note("10.0.0.1:5001", "full", "x", t + 1s) == "");
  BOOST_TEST(r.note("10.0.0.1:5002", "full", "x", t + 2s) == "");
  // Another reason, or another address, is said at once.
  BOOST_TEST(r.note("10.0.0.1:5003", "not TLS", "y", t + 2s) == "y");
  BOOST_TEST(r.note("10.0.0.2:5000", "full", "z", t + 2s) == "z");
  auto later = r.note("10.0.0.1:6000", "full", "again", t + 11s);
  BOOST_TEST(later.find("again (and 2 more refused from 10.0.0.1") == 0u,
             later);
}

// tls.* on one side only: both sides say so at once. The plain gate
// names the TLS ClientHello it got (it said "not a CAF message (BASP
// operation 22)"); the node says which side has what.
BOOST_AUTO_TEST_CASE(tls_on_one_side_only_is_named_on_both) {
  auto& certs = stoker::test::dev_certs();
  echo_server inner;
  said plain_log;
  auto plain = stoker::gate::open("127.0.0.1", 0, inner.port,
                                  options(plain_log, nullptr));
  BOOST_REQUIRE(plain);
  said tunnel_log;
  auto t = tunnel::open(
    "127.0.0.1", (*plain)->port(),
    options(tunnel_log, stoker::test::tls_of(certs.cluster, "worker-a")));
  BOOST_REQUIRE(!t);
  BOOST_TEST(describe(t.error()).find("speaks plain TCP (no tls.* set "
                                      "there) and this node has tls.* set")
               != std::string::npos,
             describe(t.error()));
  BOOST_TEST(plain_log.wait_for("the peer speaks TLS (its first bytes are a "
                                "TLS ClientHello) and this node has no "
                                "tls.* set")
               != "",
             plain_log.all());
  // Any TLS client (openssl, an older node: no hello) meets the same words.
  auto bare = stoker::gate::open("127.0.0.1", 0, inner.port,
                                 options(plain_log, nullptr));
  BOOST_REQUIRE(bare);
  int fd = connect_to((*bare)->port());
  send_all(fd, std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11)
                 + std::string(40, '\0'));
  BOOST_TEST(closed_by_peer(fd));
  ::close(fd);
  BOOST_TEST(count_lines(plain_log, "speaks TLS") == 2u, plain_log.all());
  said tls_log;
  auto secure = stoker::gate::open(
    "127.0.0.1", 0, inner.port,
    options(tls_log, stoker::test::tls_of(certs.cluster, "head")));
  BOOST_REQUIRE(secure);
  auto naked = tunnel::open("127.0.0.1", (*secure)->port(),
                            options(tunnel_log, nullptr));
  BOOST_REQUIRE(!naked);
  BOOST_TEST(describe(naked.error()).find("requires mutual TLS and this node "
                                          "has no tls.* set")
               != std::string::npos,
             describe(naked.error()));
}

BOOST_AUTO_TEST_CASE(an_expired_or_mismatched_certificate_does_not_load) {
  auto& certs = stoker::test::dev_certs();
  tls_spec spec;
  spec.certificate = certs.expired + "/stale.pem";
  spec.key = certs.expired + "/stale.key";
  spec.ca_file = certs.expired + "/ca.pem";
  auto expired = tls_context::load(spec);
  BOOST_REQUIRE(!expired);
  auto why = describe(expired.error());
  BOOST_TEST(why.find("expired") != std::string::npos, why);
  BOOST_TEST(why.find("stale.pem") != std::string::npos, why);
  spec.certificate = certs.cluster + "/worker-a.pem";
  spec.key = certs.cluster + "/worker-b.key";
  spec.ca_file = certs.cluster + "/ca.pem";
  auto mismatched = tls_context::load(spec);
  BOOST_REQUIRE(!mismatched);
  BOOST_TEST(describe(mismatched.error()).find("worker-b.key")
               != std::string::npos,
             describe(mismatched.error()));
  spec.key = certs.cluster + "/worker-a.key";
  spec.ca_file = certs.other + "/ca.pem";
  auto foreign = tls_context::load(spec);
  BOOST_REQUIRE(!foreign);
  BOOST_TEST(describe(foreign.error()).find("tls.ca-file")
               != std::string::npos,
             describe(foreign.error()));
}

// A port that closes before its gate says anything (a node going away, or
// one starting again on the same port: a head resumed from its journal) is
// worth another try within the connect timeout, not the end of a node
// (faults' resumed head: a trainer stopped at once on it).
BOOST_AUTO_TEST_CASE(a_port_that_closes_without_a_word_is_worth_another_try) {
  auto listener = detail::tcp_listen("127.0.0.1", 0, "a closing port");
  BOOST_REQUIRE(listener);
  std::thread closer{[fd = listener->fd] {
    std::string peer;
    int c = detail::tcp_accept(fd, peer);
    if (c >= 0)
      ::close(c); // accepted, then gone without a preface
  }};
  said log;
  auto t = tunnel::open("127.0.0.1", listener->port, options(log, nullptr));
  closer.join();
  ::close(listener->fd);
  BOOST_REQUIRE(!t);
  BOOST_TEST(is(t.error(), errc::io_failure), describe(t.error()));
  BOOST_TEST(describe(t.error()).find("no answer from its gate")
               != std::string::npos,
             describe(t.error()));
}

BOOST_AUTO_TEST_SUITE_END()
