#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include <caf/expected.hpp>

#include "stoker/log.hpp"
#include "transport/acceptor.hpp"
#include "transport/gate_verdict.hpp"
#include "transport/tls.hpp"

namespace stoker {

/// Follows a CAF 0.17 BASP byte stream (32-byte headers, each followed by
/// its payload) and refuses a header that declares more payload than
/// `max_payload` bytes, or an operation BASP does not have. CAF 0.17 has no
/// limit of its own: one header declaring 4 GiB makes its multiplexer
/// allocate and spin (docs/security.md), so no byte reaches CAF unchecked.
class basp_guard {
public:
  explicit basp_guard(uint64_t max_payload) : max_(max_payload) {}

  /// Takes the next `size` bytes of the stream. Empty while every header
  /// so far is fine; else why the stream is refused.
  std::string feed(const char* data, size_t size);

  static constexpr size_t header_bytes = 32;

private:
  uint64_t max_;
  bool first_ = true; // the stream's first header: a TLS ClientHello?
  unsigned char header_[header_bytes] = {};
  size_t have_ = 0;   // bytes of the current header read
  uint64_t skip_ = 0; // payload bytes left of the current message
};

/// What a gate checks on each connection.
struct gate_options {
  /// Names the port in messages ("the cluster port", "trainer 0's port").
  std::string what;
  /// Mutual TLS; null: plain TCP (loopback, or cluster.insecure).
  std::shared_ptr<const tls_context> tls;
  /// The BASP check (0 = none: the inner port does not speak BASP).
  uint64_t max_message_bytes = 0;
  /// How long a peer has to finish the TLS handshake, and (BASP ports)
  /// to send its first message after it was admitted: a peer that sends
  /// nothing is closed, with or without TLS.
  std::chrono::milliseconds handshake_timeout{10000};
  /// At most this many connections at once; more are refused.
  size_t max_connections = 512;
  /// At most this many at once from one peer address (cluster.
  /// max-connections-per-peer): one address cannot take every slot.
  size_t max_per_peer = 64;
  /// Node ports: answer a node's gate_hello with the verdict
  /// (gate_preface), and say a refusal to every client. Off for services
  /// that browsers and other clients reach (the console, /metrics).
  bool preface = false;
  /// Refusals are said at most once per peer address this often.
  std::chrono::milliseconds log_interval{10000};
  /// Where refusals and failures are said (any thread).
  std::function<void(const std::string&)> log;
};

/// A gate's options for a service that does not speak BASP (the console,
/// the HTTP endpoints): mutual TLS with `tls`, no BASP check, the default
/// limits, refusals said to `log` as warnings ("stoker-node: ...").
gate_options service_gate_options(std::string what,
                                  std::shared_ptr<const tls_context> tls,
                                  std::shared_ptr<const log_sink> log);

/// A node's port as the network sees it: listens on bind:port and relays
/// each accepted connection, once its TLS handshake has checked the peer's
/// certificate, to `inner_port` on loopback (CAF's middleman, published
/// there only) — with every BASP header checked on the way in and out.
/// A refused peer (no certificate, another CA, expired, not TLS, an
/// oversized message) is named with its address and reason to `log`; the
/// gate and every other connection go on. One thread per connection; the
/// destructor closes everything and joins.
class gate {
public:
  static caf::expected<std::unique_ptr<gate>>
  open(const std::string& bind, uint16_t port, uint16_t inner_port,
       gate_options options);

  ~gate();
  gate(const gate&) = delete;
  gate& operator=(const gate&) = delete;

  /// The port it listens on.
  uint16_t port() const noexcept { return port_; }

  /// Connections relayed so far / refused so far.
  uint64_t admitted() const noexcept { return admitted_.load(); }
  uint64_t refused() const noexcept { return refused_.load(); }

private:
  struct private_tag {};

public:
  gate(private_tag, uint16_t port, uint16_t inner_port,
       gate_options options);

private:
  // Serves one accepted client (its fd the outer socket; `extra` the relay
  // to CAF's port).
  void serve(acceptor::connection& c);
  // Says a refusal of `peer` (rate-limited per address).
  void say_refused(const std::string& peer, const std::string& why);

  uint16_t port_;
  uint16_t inner_port_;
  gate_options options_;
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> admitted_{0};
  std::atomic<uint64_t> refused_{0};
  refusal_log refusals_;
  std::unique_ptr<acceptor> acceptor_; // last: stopped first
};

/// The way out for a plain-TCP client on this node (CAF's remote_actor) to
/// another node's port: a connection to host:port that says gate_hello
/// and reads the gate's verdict (gate_preface), then, with `options.tls`, mutual TLS opened
/// and confirmed at once — so a refusal is an error here, with the
/// reason, not a hung or silent CAF connect — then relayed to the first
/// connection accepted on a loopback port of its own. A busy gate's
/// refusal is errc::io_failure (worth trying again); a TLS refusal, or
/// tls.* here and there that differ, errc::run_failure. Ends when either
/// side closes; the destructor closes and joins.
class tunnel {
public:
  static caf::expected<std::unique_ptr<tunnel>>
  open(const std::string& host, uint16_t port, gate_options options);

  ~tunnel();
  tunnel(const tunnel&) = delete;
  tunnel& operator=(const tunnel&) = delete;

  /// Where the local client connects (127.0.0.1).
  uint16_t local_port() const noexcept { return local_port_; }

  /// Whether the relay has ended.
  bool done() const noexcept { return done_.load(); }

private:
  struct private_tag {};

public:
  tunnel(private_tag, int listener, uint16_t local_port, int remote,
         std::optional<tls_stream> stream, std::string peer,
         gate_options options);

private:
  void run();

  int listener_;
  uint16_t local_port_;
  int remote_;
  std::atomic<int> local_{-1}; // set by the relay thread, read by ~tunnel
  std::optional<tls_stream> stream_; // none: plain TCP
  std::string peer_;
  gate_options options_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> done_{false};
  std::thread thread_;
};

} // namespace stoker
