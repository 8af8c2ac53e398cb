#pragma once

// How a run's outcome is collected and shown, for the local and head roles.

#include <vector>

#include <caf/expected.hpp>
#include <caf/scoped_actor.hpp>

#include "stoker/actors.hpp"
#include "stoker/options.hpp"
#include "core/run_report.hpp"

namespace stoker {

/// Asks every trainer (each rank) and every worker for their counters and
/// combines them with the router's summary; `own` is this process's usage
/// (the head's, or the local run's) for the hosts and the cost. A worker
/// that does not answer within 2 s (one the router lost) is left out.
/// Blocks `self`.
caf::expected<run_report>
collect_report(caf::scoped_actor& self, const router_summary& summary,
               const std::vector<trainer_actor>& trainers,
               const std::vector<worker_actor>& workers,
               const node_usage& own);

/// The report of a run that ended with `why`: the router's counts so far,
/// the trainers' and workers' if they answer within half a second (a
/// trainer that died, or is stuck in a collective, does not), status
/// "failed". Never blocks much longer than that, whatever the actors do.
run_report collect_failed_report(caf::scoped_actor& self,
                                 const router_actor& router,
                                 const std::vector<trainer_actor>& trainers,
                                 const std::vector<worker_actor>& workers,
                                 const caf::error& why);

/// Prints the outcome of a run (or its error), writes the report if asked
/// (a failed run's too). Returns the process exit code: 0 when every
/// sample was trained on exactly once, 1 otherwise.
int finish_run(const caf::expected<run_report>& report,
               const run_config& cfg);

/// Why a run failed, as finish_run() says it after "run failed: " (the
/// error, or the report's first error); empty when it did not fail, or
/// was refused for a setting (said as "refused: ...").
std::string run_failure_text(const caf::expected<run_report>& report);

/// Prints what a node runs (one short block), for every role.
void print_banner(const run_config& cfg);

} // namespace stoker
