#pragma once

#include <string>
#include <string_view>

#include "protocol/job_query.hpp"

namespace stoker {

/// The job as Prometheus metrics (docs/metrics.md lists every family):
/// counters from the trainers', workers' and router's own counts, gauges
/// from the router's view now. One `stoker_` prefix, base units, counters
/// ending in `_total`; labels are node, worker, trainer ("NODE/RANK") and
/// reason, never a batch or sample id. Plain function of a snapshot.
std::string render_metrics(const job_view& job, std::string_view version);

/// What /metrics serves while there is no view of the job (the first look
/// has not come back, or the router does not answer): what is known
/// without one (build info, the nodes `nodes` names as up) and
/// `stoker_job_view_ready 0`, with `why` as a comment. A scraper gets a
/// 200 from the first request, never a 503.
std::string render_pending_metrics(std::string_view version,
                                   const std::vector<node_row>& nodes,
                                   const std::string& why);

/// The job as the dashboard's JSON (`/api/state`): `report` is exactly the
/// console's `stats --json` (null before a trainer has joined); `nodes`,
/// `workers` and `trainers` add what the router sees now (heartbeats,
/// queues, leases, each trainer's window and why it last changed) and the
/// raw counters the page turns into rates between two polls.
std::string render_state_json(const job_view& job, std::string_view version);

} // namespace stoker
