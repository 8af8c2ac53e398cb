#pragma once

// stoker layer: core
//
// The router's view of the run, as the console, /metrics, the dashboard
// and the report read it: each rank and worker now (router_status) and
// the run so far (router_summary), built on the wire messages of
// messages.hpp.

#include <cstdint>
#include <string>
#include <vector>

#include <caf/meta/type_name.hpp>

#include "stoker/messages.hpp"

namespace stoker {

/// One trainer (rank) as the router sees it now (for the console).
struct trainer_status {
  uint32_t rank = 0;
  std::string node;
  std::string host;
  bool present = false;
  uint32_t window = 0;     ///< its in-flight window
  uint64_t in_flight = 0;  ///< batches leased for it, not acknowledged
  uint64_t pending = 0;    ///< pulled from the source, not leased yet
  int64_t heard_ms_ago = -1;
  double period_ms = 0.0;  ///< step + collective wait per step (average)
  double wait_ms = 0.0;    ///< data wait per step (average)
  double collective_ms = 0.0; ///< collective wait per step (average)
  std::string window_last_change;
  /// How often its window changed, by reason (inflight_window).
  uint32_t window_widened = 0;
  uint32_t window_narrowed = 0;
  uint32_t window_set = 0; ///< by hand (the console's `set router.window`)
  /// Decision periods it held instead: the trainer ran dry but every worker
  /// held two items; it would have narrowed but another rank of its group
  /// waited for data.
  uint32_t window_held_workers_full = 0;
  uint32_t window_held_group_waited = 0;
};

/// One second (or more, in a long run) of the run, for the report's time
/// series: what the trainers took in and waited, the window, the workers.
struct series_point {
  double t = 0;             ///< seconds since the run began (interval end)
  double samples_per_s = 0; ///< acknowledged samples over the interval
  double idle = 0;          ///< trainers' data wait / (wait + steps)
  uint32_t window = 0;      ///< rank 0's in-flight window
  double busy_workers = 0;  ///< workers' busy time / the interval
};

/// One rank of the group as the router saw it: the report names every
/// rank of the group that ran, also one that cannot answer (hung in a
/// collective, gone).
struct rank_summary {
  std::string node;
  uint64_t batches_acked = 0; ///< its batches acknowledged (steps taken)
};

/// What the router knows when a run ends (and, as the console asks, so
/// far).
struct router_summary {
  std::string policy;
  uint64_t batches_leased = 0;
  uint64_t batches_acked = 0;
  uint64_t batches_hedged = 0; ///< leased a second time as stragglers
  uint64_t batches_released = 0; ///< re-leased because a worker was lost
  uint64_t batches_resumed = 0;  ///< trained before a restart: skipped
  /// Training samples in acknowledged batches: what the router can vouch
  /// for when the trainer cannot answer (a failed run's report).
  uint64_t samples_acked = 0;
  std::string stopped_by; ///< set when the run was ended early, and how
  std::vector<std::string> lost_workers; ///< died or went silent
  /// What the router last saw of each lost worker (its reports' counters,
  /// its finished items): a lost worker cannot answer for the report.
  std::vector<worker_stats> lost_worker_stats;
  uint64_t samples_expected = 0;
  group_plan plan; ///< the group's epoch plan (world, dropped, padded)
  uint64_t wall_ns = 0;
  uint32_t window = 0;     ///< the in-flight window at the end
  uint32_t window_max = 0; ///< its ceiling (router.max-inflight-bytes)
  uint32_t window_changes = 0;
  std::string window_last_change; ///< why it last changed
  std::string placement = "cpu";   ///< pipeline.placement
  double gpu_share = 0.0; ///< batches leased for the trainer's GPU blur now
  uint64_t batches_gpu_blur = 0;   ///< leased so, over the run
  uint32_t placement_changes = 0;
  std::string placement_last_change; ///< why the share last changed
  std::string placement_reason;      ///< why it holds now
  /// The run second by second (routing/run_series.hpp); only in the
  /// summary the run ends with, not in the console's status.
  std::vector<series_point> series;
  /// From a batch's (last) lease to its ack, over the run (5% buckets).
  double lease_to_ack_ms_p50 = 0;
  double lease_to_ack_ms_p99 = 0;
  /// Start-up: from `run` to the first acknowledged batch (0: none yet),
  /// and the samples in it (what the steady rate leaves out).
  uint64_t first_ack_ns = 0;
  uint64_t first_ack_samples = 0;
  /// The run has ended (its answer was given): the report's status is
  /// "running" until then.
  bool finished = false;
  std::vector<rank_summary> ranks; ///< by rank: the group that ran
};

/// What the router knows of one worker: its row of the routing table
/// (routing/routing_table.hpp), which the console, /metrics and the
/// dashboard read as it is (worker_status).
struct worker_load {
  std::string name;
  std::string host;                 ///< the machine it runs on (node.host)
  bool local = false;               ///< on the trainer's machine
  uint64_t outstanding_items = 0;   ///< leased by the router, not yet done
  uint64_t outstanding_samples = 0; ///< samples in those items
  uint64_t mailbox_depth = 0;       ///< as last reported by the worker
  double rate_sps = 0.0;            ///< samples/s of busy time (moving avg.)
  bool has_rate = false;            ///< false until the first finished item
  uint64_t items_done = 0;
  uint64_t samples_done = 0;   ///< samples of the items it finished
  uint64_t items_leased = 0;   ///< leases it was given, over the run
  uint64_t last_report_ns = 0; ///< when it last reported (router's clock)
  bool alive = true;           ///< false once lost: never picked again
  bool draining = false;       ///< finishes what it holds, gets nothing new
};

/// One worker as the router sees it now (for the console, /metrics and the
/// dashboard): the routing table's row, and what the table works out from it.
struct worker_status {
  worker_load load;
  double expected_delay_s = 0.0; ///< for one more batch
  uint64_t overdue_ms = 0;       ///< its report is this late (stale if > 0)
  uint64_t heard_ms_ago = 0;     ///< since its last report (a heartbeat)
};

/// The router now (for the console's `router` and `stats --json`).
struct router_status {
  router_summary summary; ///< counters so far (wall_ns: since the run began)
  uint64_t in_flight = 0; ///< batches leased, not acknowledged
  uint64_t batch_bytes = 0;
  bool trainer_present = false;
  bool paused = false;
  /// Since the trainer's last credit, ack or checkpoint; < 0: none yet.
  int64_t trainer_heard_ms_ago = -1;
  std::vector<worker_status> workers;
  std::vector<trainer_status> trainers; ///< by rank
  uint32_t world = 1;                   ///< the group's size
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, trainer_status& x) {
  return f(caf::meta::type_name("trainer_status"), x.rank, x.node, x.host,
           x.present, x.window, x.in_flight, x.pending, x.heard_ms_ago,
           x.period_ms, x.wait_ms, x.collective_ms, x.window_last_change,
           x.window_widened, x.window_narrowed, x.window_set,
           x.window_held_workers_full, x.window_held_group_waited);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, series_point& x) {
  return f(caf::meta::type_name("series_point"), x.t, x.samples_per_s, x.idle,
           x.window, x.busy_workers);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, rank_summary& x) {
  return f(caf::meta::type_name("rank_summary"), x.node, x.batches_acked);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, router_summary& x) {
  return f(caf::meta::type_name("router_summary"), x.policy,
           x.batches_leased, x.batches_acked, x.batches_hedged,
           x.batches_released, x.batches_resumed, x.samples_acked,
           x.stopped_by,
           x.lost_workers, x.lost_worker_stats,
           x.samples_expected, x.plan, x.wall_ns, x.window, x.window_max,
           x.window_changes, x.window_last_change, x.placement, x.gpu_share,
           x.batches_gpu_blur, x.placement_changes, x.placement_last_change,
           x.placement_reason, x.series, x.lease_to_ack_ms_p50,
           x.lease_to_ack_ms_p99, x.first_ack_ns, x.first_ack_samples,
           x.finished, x.ranks);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, worker_load& x) {
  return f(caf::meta::type_name("worker_load"), x.name, x.host, x.local,
           x.outstanding_items, x.outstanding_samples, x.mailbox_depth,
           x.rate_sps, x.has_rate, x.items_done, x.samples_done,
           x.items_leased, x.last_report_ns, x.alive, x.draining);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, worker_status& x) {
  return f(caf::meta::type_name("worker_status"), x.load,
           x.expected_delay_s, x.overdue_ms, x.heard_ms_ago);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, router_status& x) {
  return f(caf::meta::type_name("router_status"), x.summary, x.in_flight,
           x.batch_bytes, x.trainer_present, x.paused,
           x.trainer_heard_ms_ago, x.workers, x.trainers, x.world);
}

} // namespace stoker
