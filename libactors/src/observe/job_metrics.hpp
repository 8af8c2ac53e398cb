#pragma once

#include <string>
#include <string_view>

#include "console/console_session.hpp"

namespace stoker {

/// The job as Prometheus metrics (docs/metrics.md lists every family):
/// counters from the trainers', workers' and router's own counts, gauges
/// from the router's view now. One `stoker_` prefix, base units, counters
/// ending in `_total`; labels are node, worker, trainer ("NODE/RANK") and
/// reason, never a batch or sample id. Plain function of a snapshot.
std::string render_metrics(const job_view& job, std::string_view version);

/// The job as the dashboard's JSON (`/api/state`): `report` is exactly the
/// console's `stats --json` (null before a trainer has joined); `nodes`,
/// `workers` and `trainers` add what the router sees now (heartbeats,
/// queues, leases, each trainer's window and why it last changed) and the
/// raw counters the page turns into rates between two polls.
std::string render_state_json(const job_view& job, std::string_view version);

} // namespace stoker
