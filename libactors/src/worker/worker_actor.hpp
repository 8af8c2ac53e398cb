#pragma once

// The CPU worker actor: glue over the mappers and transforms below it.

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/error.hpp>

#include "stoker/actors.hpp"
#include "stoker/options.hpp"
#include "transport/tls.hpp"
#include "worker/batch_maker.hpp"

namespace stoker {

class registry;

/// What a worker makes and how it behaves.
struct worker_setup {
  std::string name;
  /// Makes each batch (shared by the node's workers).
  std::shared_ptr<const batch_maker> maker;
  /// Where every batch's image buffer comes from and, once the batch is
  /// sent on a batch stream, goes back to (the node's; in a local run the
  /// trainer's too, which returns them after its step).
  std::shared_ptr<buffer_pool> buffers;
  dtype wire = dtype::float32; ///< transport.dtype
  double slowdown = 1.0;       ///< worker.slowdown (benchmarks and tests)
  std::chrono::milliseconds sim_item{0}; ///< worker.sim-item (the same)
  std::chrono::milliseconds report_interval{100};
  /// A batch for a trainer in `routes` goes on that trainer's batch stream
  /// (one connection per worker, opened on first use); any other trainer
  /// gets it as a CAF message.
  std::vector<batch_route> routes;
  /// Mutual TLS for the batch streams (the node's; null: plain TCP) and
  /// how long a stream's handshake may take.
  std::shared_ptr<const tls_context> tls;
  std::chrono::milliseconds handshake_timeout{10000};
  /// The node sets it when it shuts down, before it stops its workers: a
  /// batch that cannot be sent then is dropped silently, not sent another
  /// way (the run is over). Null: never.
  std::shared_ptr<const std::atomic<bool>> stopping;
  /// Its node (name, host, price), for the usage its stats carry.
  node_options node;
};

/// The setup every worker of a node of `cfg` starts from: the node's
/// slowdown, the pipeline's wire dtype and report interval, one
/// batch_maker opened for the node (its workers share the datasets) and
/// `buffers` for their batches. Name and routes are the caller's to add.
/// `log`: where a Python stage's first traceback goes (the node's sink).
/// Errors name what cannot be opened (batch_maker::open).
caf::expected<worker_setup>
node_worker_setup(const run_config& cfg, const registry& reg,
                  std::shared_ptr<buffer_pool> buffers,
                  std::shared_ptr<const log_sink> log = nullptr);

/// How many idle batch buffers a node of `cfg` keeps: as many as can be in
/// flight (router.max-inflight-bytes over one batch, at most 64) plus one
/// per worker, so the steady state never frees one it will need again.
size_t batch_buffers_for(const run_config& cfg);

/// Spawns a detached worker that reports to `router` after each item and
/// every `report_interval` between items.
worker_actor spawn_worker(caf::actor_system& sys, worker_setup setup,
                          router_actor router);

} // namespace stoker
