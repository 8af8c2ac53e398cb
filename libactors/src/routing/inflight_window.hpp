#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace stoker {

/// Bounds of a trainer's in-flight window (`router.*` settings).
struct window_limits {
  uint32_t initial = 8;  ///< batches in flight at the start (router.window)
  uint32_t min = 1;      ///< never fewer (the trainer's prefetch)
  uint64_t max_bytes = uint64_t{1} << 30; ///< router.max-inflight-bytes
  uint64_t batch_bytes = 1;               ///< one batch on the wire
  double idle_target = 0.02; ///< trainer idle fraction the router aims below
  uint32_t period = 8;       ///< acknowledged batches per decision
  /// The ranks of the data-parallel group that share this window (1: a
  /// trainer of its own). Every rank's acks feed it, and every rank may
  /// have size() batches in flight.
  uint32_t ranks = 1;
};

/// One acknowledged batch as the window sees it.
struct window_ack {
  uint64_t wait_ns = 0; ///< the trainer's data wait before the step
  uint64_t step_ns = 0; ///< its step
  /// Its time in the group's collective after the step (0 for a group of
  /// one): waiting for the other ranks, then reducing.
  uint64_t collective_ns = 0;
  uint64_t queued_items = 0;    ///< leased to workers, not yet made, now
  uint64_t trainer_backlog = 0; ///< batches waiting at the trainer after it
  uint64_t live_workers = 0;    ///< 0: unknown (the workers' room unseen)
  uint32_t rank = 0;            ///< the trainer's rank in its group
};

/// How many batches the router keeps in flight for one trainer, or for
/// each rank of a data-parallel group (leased, not yet acknowledged),
/// adapted to what the trainers report. Every `period` acks (for a group,
/// every `period` x 3 of its steps, each an ack of every rank) it looks at
/// the *exposed* idle fraction: the time the steps waited for data over
/// all their time. For a trainer of its own that is its data wait. For a
/// group it is each rank's data wait plus its wait at the collective
/// above that rank's least in the period (the reduce itself, and any
/// steady compute imbalance: a rank that always finishes first always
/// waits): the group's step waits for its slowest rank, so with 64 ranks
/// each waiting 0.7% of the time for data, the group waits 13%.
///
/// Above `idle_target`, if a trainer ran dry during the period (no batch
/// in front of it after some step, and it waited) and the workers have
/// room (fewer items leased and not made than two per live worker: one in
/// the making and one queued each), it widens the window by a quarter (at
/// least one; a group's by one, as that is a batch more on every rank).
/// Where every worker already holds work the workers are what the
/// trainers wait for, and more leases would only queue: memory, latency,
/// and more to re-lease when a worker dies. When the exposed idle
/// is under a quarter of the target while batches queued up in front of
/// every trainer (two or more at each ack) or, for a trainer of its own,
/// the workers' queues grew, it narrows by one: more leases would only
/// wait, holding memory.
///
/// Why one window for a whole group, and a longer look: a group's waits
/// come in rare bursts (one rank of many runs dry now and then), so over
/// a few steps they read as nothing or as plenty. A window per rank
/// widened only the rank that happened to wait, while every rank narrowed
/// together in a quiet stretch: the windows sank until the group waited
/// 13%. One window sees every rank's evidence; it narrows a group only
/// after two quiet periods in a row. The window stays within [min,
/// max_bytes / batch_bytes]. Plain code, owned by the router actor; not
/// thread-safe.
class inflight_window {
public:
  /// A group decides over this many times `period` of its steps, and
  /// narrows only after this many quiet periods in a row.
  static constexpr uint32_t group_periods = 3;
  static constexpr uint32_t group_quiet_periods = 2;

  explicit inflight_window(const window_limits& limits);

  /// One acknowledged batch (see window_ack).
  void on_ack(const window_ack& ack);

  /// The trainer's own data wait over the last decided period, as a
  /// fraction of its time (a group's: its ranks' together).
  double last_idle() const noexcept { return last_idle_; }

  /// The exposed idle fraction of the last decided period (what the rule
  /// compares with the target; last_idle() for a trainer of its own).
  double last_exposed_idle() const noexcept { return last_exposed_; }

  /// Batches that may be in flight now.
  uint32_t size() const noexcept { return size_; }

  /// Sets the window by hand (the console's `set router.window`), clamped
  /// to [min, max]; it adapts from there. Returns the size it took.
  uint32_t set_size(uint32_t n, const std::string& why);

  /// The most it may grow to: the byte budget in batches (at least min).
  uint32_t max() const noexcept { return max_; }

  /// How often it changed, and why it last did ("" if never).
  uint32_t changes() const noexcept { return changes_; }
  const std::string& last_change() const noexcept { return last_change_; }

  /// The changes by reason: widened (the trainer waited), narrowed (it
  /// never did while batches queued), set by hand; the periods the trainer
  /// ran dry but every worker already held work (not widened); and those
  /// a group would have narrowed on its ranks' own idle but its steps
  /// waited, or its quiet stretch was one period only.
  uint32_t widened() const noexcept { return widened_; }
  uint32_t narrowed() const noexcept { return narrowed_; }
  uint32_t set_by_hand() const noexcept { return set_by_hand_; }
  uint32_t held_workers_full() const noexcept { return held_workers_full_; }
  uint32_t held_group_waited() const noexcept { return held_group_waited_; }

private:
  void decide(uint64_t queued_items, uint64_t live_workers);

  uint64_t backlog_ = UINT64_MAX; // least trainer backlog in the period
  double last_idle_ = 0.0;
  double last_exposed_ = 0.0;
  uint32_t quiet_streak_ = 0; // quiet periods in a row (exposed idle low)

  window_limits limits_;
  uint32_t size_;
  uint32_t max_;
  uint64_t acks_ = 0;
  uint64_t wait_ns_ = 0; // over the current period
  uint64_t step_ns_ = 0;
  struct rank_collective { // one rank's collective waits in the period
    uint64_t sum_ns = 0;
    uint64_t least_ns = UINT64_MAX;
    uint64_t acks = 0;
  };
  std::vector<rank_collective> collective_; // by rank
  uint64_t queued_at_last_decision_ = 0;
  uint32_t changes_ = 0;
  uint32_t widened_ = 0;
  uint32_t narrowed_ = 0;
  uint32_t set_by_hand_ = 0;
  uint32_t held_workers_full_ = 0;
  uint32_t held_group_waited_ = 0;
  std::string last_change_;
};

} // namespace stoker
