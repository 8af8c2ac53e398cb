#pragma once

#include <caf/actor_system.hpp>
#include <caf/expected.hpp>
#include <caf/scoped_actor.hpp>

#include "stoker/actors.hpp"

#include "config/run_config.hpp"
#include "core/run_report.hpp"

namespace stoker {

class registry;

/// Runs the whole pipeline in this process: a source, a router,
/// `cfg.workers` detached CPU workers and one trainer, until every work item
/// of every epoch has been acknowledged. Blocks the calling thread.
/// Returns the run report, or the error that ended the run early. The
/// sources, transforms and model come from `reg` (read while the actors
/// are set up; they keep no reference to it).
caf::expected<run_report> run_local(caf::actor_system& sys,
                                    const run_config& cfg,
                                    const registry& reg);

/// Asks the trainer and every worker for their counters and combines them
/// with the router's summary. A worker that does not answer within 2 s (one
/// the router lost) is left out. Blocks `self`.
caf::expected<run_report>
collect_report(caf::scoped_actor& self, const router_summary& summary,
               const trainer_actor& trainer,
               const std::vector<worker_actor>& workers);

/// Prints the outcome of a run (or its error), writes the report if asked.
/// Returns the process exit code: 0 when every sample was trained on
/// exactly once, 1 otherwise.
int finish_run(const caf::expected<run_report>& report,
               const run_config& cfg);

/// Prints what a node runs (one short block), for every role.
void print_banner(const run_config& cfg);

/// `stoker-node --role=local`: prints what it runs, runs it, prints the
/// outcome, writes the report if asked. Returns the process exit code:
/// 0 when every sample was trained on exactly once, 1 otherwise.
int local_role_main(caf::actor_system& sys, const run_config& cfg,
                    const registry& reg);

} // namespace stoker
