#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include <caf/actor_system.hpp>
#include <caf/expected.hpp>

#include "stoker/options.hpp"
#include "console/console_session.hpp"
#include "transport/gate.hpp"
#include "transport/tls.hpp"

namespace httplib {
class Server;
}

namespace stoker {

/// The head's (or a local run's) HTTP endpoints on metrics.bind:port:
///   GET /metrics     the Prometheus text format (render_metrics)
///   GET /api/state   the dashboard's JSON (render_state_json)
///   GET /            the dashboard page
/// Served by cpp-httplib on two threads of its own; each request asks the
/// job through its own console_session (2 s timeouts per actor), so a
/// scrape costs the actors one status message each and nothing per batch.
/// Other paths answer 404, other methods 405; requests are bounded (8 KiB
/// body, 5 s to read). With `tls` and a bind beyond loopback the server
/// listens on loopback behind a gate that speaks mutual TLS. The destructor
/// stops serving and joins; close it before the actors it asks exit.
class http_observer {
public:
  /// Starts serving, or an error naming the address (errc::io_failure).
  static caf::expected<std::unique_ptr<http_observer>>
  start(caf::actor_system& sys, const metrics_spec& spec,
        console_target target, std::shared_ptr<const tls_context> tls);

  ~http_observer();
  http_observer(const http_observer&) = delete;
  http_observer& operator=(const http_observer&) = delete;

  /// Where clients connect (the gate's port when gated).
  uint16_t port() const noexcept;

private:
  struct private_tag {};

public:
  http_observer(private_tag, caf::actor_system& sys, console_target target);

private:
  caf::actor_system& sys_;
  console_target target_;
  std::unique_ptr<httplib::Server> server_;
  uint16_t port_ = 0;
  std::unique_ptr<gate> gate_;
  std::thread thread_;
};

/// What a head or local node opens: nothing (null) when metrics.port is 0;
/// else the endpoints, said on standard output as "WHO: dashboard on
/// http://BIND:PORT/ (...)". Errors name the address.
caf::expected<std::unique_ptr<http_observer>>
open_http_observer(caf::actor_system& sys, const metrics_spec& spec,
                   console_target target,
                   std::shared_ptr<const tls_context> tls,
                   const std::string& who);

/// Keeps `observer` (if any) serving for metrics.linger after a run ended,
/// saying so first.
void linger(const http_observer* observer, const metrics_spec& spec,
            const std::string& who);

} // namespace stoker
