#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include <caf/actor_system.hpp>
#include <caf/expected.hpp>

#include "stoker/options.hpp"
#include "protocol/job_query.hpp"
#include "observe/snapshot_cache.hpp"
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
/// Served by cpp-httplib on 8 threads of its own from a snapshot_cache: the
/// job is asked (look_at_job, 2 s timeouts per actor) at most once
/// per metrics.refresh however many scrape, so a scrape costs the actors
/// nothing of its own. A request that waited over a second for a thread
/// is answered 503 at once, not late; the listen backlog is 1,024.
/// Other paths answer 404, other methods 405; requests are bounded (8 KiB
/// body, 2 s to read, idle keep-alive 1 s). With `tls` and a bind beyond loopback the server
/// listens on loopback behind a gate that speaks mutual TLS. The destructor
/// stops serving and joins; close it before the actors it asks exit.
class http_observer {
public:
  /// Starts serving, or an error naming the address (errc::io_failure).
  static caf::expected<std::unique_ptr<http_observer>>
  start(caf::actor_system& sys, const metrics_spec& spec,
        job_target target, std::shared_ptr<const tls_context> tls);

  ~http_observer();
  http_observer(const http_observer&) = delete;
  http_observer& operator=(const http_observer&) = delete;

  /// Where clients connect (the gate's port when gated).
  uint16_t port() const noexcept;

  /// The run is over: takes a snapshot of the final figures now (waiting
  /// up to 3 s), so the next scrape reads them rather than the last ones
  /// of the run. Called on the node's main thread.
  void run_over();

  /// Says `line` to the node's log (info), from any thread.
  void say_info(const std::string& line) const;

private:
  struct private_tag {};

public:
  http_observer(private_tag, caf::actor_system& sys, job_target target);

private:
  caf::actor_system& sys_;
  job_target target_;
  std::unique_ptr<snapshot_cache> snapshots_;
  std::unique_ptr<httplib::Server> server_;
  uint16_t port_ = 0;
  std::unique_ptr<gate> gate_;
  std::thread thread_;
};

/// What a head or local node opens: nothing (null) when metrics.port is 0;
/// else the endpoints, said to the node's log as "WHO: dashboard on
/// http://BIND:PORT/ (...)". Errors name the address.
caf::expected<std::unique_ptr<http_observer>>
open_http_observer(caf::actor_system& sys, const metrics_spec& spec,
                   job_target target,
                   std::shared_ptr<const tls_context> tls,
                   const std::string& who);

/// Keeps `observer` (if any) serving for metrics.linger after a run ended,
/// its final figures taken (run_over) and the lingering said first.
void linger(http_observer* observer, const metrics_spec& spec,
            const std::string& who);

} // namespace stoker
