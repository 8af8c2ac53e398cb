#pragma once

// Making a run's report from what the router, trainers and workers
// counted (the report itself: stoker/run_report.hpp).

#include <string>
#include <vector>

#include "stoker/router_status.hpp"
#include "stoker/run_report.hpp"

namespace stoker {

/// Combines what the router, the trainers (every rank's, in any order)
/// and the workers counted. With several ranks their ledgers merge into
/// one: a sample two ranks trained on is a duplicate.
run_report make_report(const router_summary& router,
                       std::vector<trainer_stats> trainers,
                       const std::vector<worker_stats>& workers);

/// make_report for a run of one trainer.
run_report make_report(const router_summary& router,
                       const trainer_stats& trainer,
                       const std::vector<worker_stats>& workers);

/// The report of a run that failed: status "failed", `why` as
/// first_error, and the counts so far. Without any trainer's counters
/// (they died, or do not answer) the samples delivered are the router's
/// acknowledged ones and the trainer's own fields stay empty.
run_report make_failed_report(const router_summary& so_far,
                              const std::vector<trainer_stats>& trainers,
                              const std::vector<worker_stats>& workers,
                              const std::string& why);

/// Fills `report`'s hosts and cost from what each node process used (every
/// trainer's and worker's stats carry their node's; a node counted once,
/// by name) and `extra` (the head's own process): per host its nodes' CPU
/// time over their time alive times its cores, its price; the cost is
/// every priced host's price for the run's wall time.
void account_hosts(run_report& report,
                   const std::vector<trainer_stats>& trainers,
                   const std::vector<worker_stats>& workers,
                   const std::vector<node_usage>& extra);

} // namespace stoker
