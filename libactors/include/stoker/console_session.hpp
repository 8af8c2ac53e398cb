#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>

#include "stoker/actors.hpp"
#include "stoker/cluster.hpp"

namespace stoker {

/// The console's tables, from what the head's actors answer. Plain
/// functions: tested without an actor system.
std::string format_nodes(const std::vector<node_row>& nodes);
std::string format_router(const router_status& status);
std::string format_trainer(const trainer_stats& stats,
                           const router_status& status);

/// One actor of the running job (the console's `actors`).
struct actor_row {
  uint64_t id = 0;
  std::string kind; ///< worker, trainer, router, registry
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

/// Runs console lines against a running head: asks the registry, the
/// router and the trainer (each request with a 2 s timeout) through its own
/// scoped actor, so every console connection gets one and uses it from its
/// own thread only. Bad lines answer with the usage, never throw.
class console_session {
public:
  console_session(caf::actor_system& sys, registry_actor registry,
                  router_actor router);

  console_reply execute(std::string_view line);

private:
  caf::expected<router_status> router_now();
  caf::expected<trainer_stats> trainer_now();
  caf::expected<std::string> stats_json();
  caf::expected<std::vector<actor_row>> actors();

  caf::scoped_actor self_;
  registry_actor registry_;
  router_actor router_;
};

} // namespace stoker
