#pragma once

// The few bytes a node port's gate and a node's tunnel say before anything
// else (the verdict), and the gate's rate-limited refusal lines: the
// protocol and bookkeeping of transport/gate, apart from its relaying.

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include <caf/expected.hpp>

namespace stoker {

/// What a node's tunnel says first on a node port: "STKC", version 1.
/// A gate with gate_options::preface answers it with its verdict
/// (gate_preface) before any TLS; any other client (openssl, a browser, a
/// bare CAF peer) is served as before, without one, so its TLS refusal
/// still names what is wrong with its certificate.
std::string gate_hello();

/// A node port's verdict: "STKG", version 1, then 'T' (admitted; mutual
/// TLS follows), 'P' (admitted; plain TCP follows) or 'R', a 2-byte
/// big-endian length and why it refused (full, too many from one
/// address). The tunnel reads it, so a refused node says why and tries
/// again, and a node whose tls.* differs from the port's says so at once.
/// A refusal is sent to every client at once (it is closed anyway).
std::string gate_preface(char verdict, const std::string& why = {});

/// A gate's preface as a tunnel read it.
struct gate_verdict {
  char verdict = 0; ///< 'T', 'P' or 'R'
  std::string why;  ///< the refusal's reason
};

/// Reads a gate's preface from `fd` until `deadline`; an error says what
/// came instead: errc::io_failure for nothing at all (the port closed, or
/// stayed silent: a node starting or going away, worth another try),
/// errc::run_failure for an answer that is not a gate's.
caf::expected<gate_verdict>
read_gate_preface(int fd, std::chrono::steady_clock::time_point deadline);

/// Says a gate's refusals at most once per peer address and reason per
/// interval, with how many more there were: a flood (or a node retrying)
/// from one address is one line, not thousands, while another reason from
/// it (on loopback every node is 127.0.0.1) is still said. Thread-safe:
/// the gate's threads share it.
class refusal_log {
public:
  using clock_type = std::chrono::steady_clock;

  explicit refusal_log(std::chrono::milliseconds interval)
    : interval_(interval) {}

  /// `line` about refusing `peer` ("ADDRESS:PORT") for `why`, at `now`:
  /// the text to say, or empty when this address and reason were said
  /// within the interval (then it is counted into the next such line).
  std::string note(const std::string& peer, const std::string& why,
                   const std::string& line, clock_type::time_point now);

private:
  struct entry {
    clock_type::time_point said;
    uint64_t unsaid = 0;
  };

  std::chrono::milliseconds interval_;
  std::mutex mutex_;
  std::map<std::pair<std::string, std::string>, entry> by_address_;
};

/// The address of a peer "ADDRESS:PORT" (or "[ADDRESS]:PORT").
std::string address_of(const std::string& peer);

/// How a new client began (read_hello).
enum class first_bytes {
  hello,  ///< a node's gate_hello, now taken off the stream
  other,  ///< anything else, left there (a TLS ClientHello, BASP)
  closed, ///< it closed first
  silent, ///< nothing by the deadline
};

/// Looks at what a new client on `fd` sends first, until `deadline`.
first_bytes read_hello(int fd, std::chrono::steady_clock::time_point deadline);

} // namespace stoker
