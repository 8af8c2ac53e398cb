#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>

#include "stoker/router_status.hpp"
#include "stoker/run_report.hpp"
#include "stoker/actors.hpp"
#include "protocol/job_query.hpp"

namespace stoker {

/// The console's tables, from what the head's actors answer. Plain
/// functions: tested without an actor system.
///
/// `nodes` with a last-heartbeat column taken from the router: a worker
/// node's freshest worker report, a trainer's last credit, ack or
/// checkpoint (see node_heard_ms_ago).
std::string format_nodes(const std::vector<node_row>& nodes,
                         const router_status& router);

std::string format_router(const router_status& status);
/// The `trainer` view of several ranks: one row each (one rank: as
/// format_trainer).
std::string format_trainers(const std::vector<trainer_stats>& stats,
                            const router_status& status);

std::string format_trainer(const trainer_stats& stats,
                           const router_status& status);

/// The `stages` table: each stage of the workers' chains (the report's
/// stages), its samples, time per sample and share of the chain's time.
std::string format_stages(const std::vector<stage_entry>& stages);

/// One actor of the running job (the console's `actors`).
struct actor_row {
  uint64_t id = 0;
  std::string kind; ///< worker, trainer, router, registry (membership)
  std::string node;
  std::string mailbox;   ///< "-" where the actor does not report it
  uint64_t processed = 0; ///< batches made, steps, leases
  double rate = 0.0;      ///< per second of run time (workers: busy time)
  double busy = -1.0;     ///< fraction; < 0: not measured
};

/// The `actors` table, only rows of `node` if it is not empty.
std::string format_actors(const std::vector<actor_row>& rows,
                          const std::string& node);

/// What a console line produced: text to show, and whether the user left.
struct console_reply {
  std::string text;
  bool quit = false;
};

/// Runs console lines against a running job: asks the membership actor, the
/// router and the trainer (each request with a 2 s timeout) through its own
/// scoped actor, so every console connection gets one and uses it from its
/// own thread only. Bad lines answer with the usage, never throw.
class console_session {
public:
  console_session(caf::actor_system& sys, job_target target);

  console_reply execute(std::string_view line);

  /// Every node's and worker's name (for completing `drain NODE|WORKER`);
  /// none of those whose actor does not answer.
  std::vector<std::string> node_names();

  /// The job now (look_at_job).
  caf::expected<job_view> view();

private:
  /// Every rank's counters, by rank.
  caf::expected<std::vector<trainer_stats>> trainers_now();
  caf::expected<std::string> stats_json();
  caf::expected<std::vector<actor_row>> actors();

  caf::scoped_actor self_;
  job_target target_;
};

} // namespace stoker
