#pragma once

#include <cstdint>
#include <string>

namespace stoker {

/// Bounds of a trainer's in-flight window (`router.*` settings).
struct window_limits {
  uint32_t initial = 8;  ///< batches in flight at the start (router.window)
  uint32_t min = 1;      ///< never fewer (the trainer's prefetch)
  uint64_t max_bytes = uint64_t{1} << 30; ///< router.max-inflight-bytes
  uint64_t batch_bytes = 1;               ///< one batch on the wire
  double idle_target = 0.02; ///< trainer idle fraction the router aims below
  uint32_t period = 8;       ///< acknowledged batches per decision
};

/// How many batches the router keeps in flight for one trainer (leased,
/// not yet acknowledged), adapted to what the trainer reports. Every
/// `period` acks it looks at the trainer's idle fraction (time waiting for
/// data over waiting + stepping): above `idle_target`, if the trainer ran
/// dry during the period and the workers have room (fewer items leased
/// and not made than two per live worker: one in the making and one
/// queued each), it widens the window by a quarter (at least one). Where
/// every worker already holds work the workers are what the trainer waits
/// for, and more leases would only queue: memory, latency, and more to
/// re-lease when a worker dies. When the trainer did not wait at all (idle
/// under a quarter of the target) while batches queued up in front of it
/// (two or more waiting at the trainer) or the workers' queues grew, it
/// narrows it by one: more leases would only wait, holding memory. A rank
/// of a data-parallel group does not narrow while another rank of the
/// group waited for data above the target (see set_group_idle): its own
/// steps waited as long, at the all-reduce. The window stays within [min,
/// max_bytes / batch_bytes]. Plain code, owned by the router actor; not
/// thread-safe.
class inflight_window {
public:
  explicit inflight_window(const window_limits& limits);

  /// One acknowledged batch: the time the trainer waited for it and spent
  /// on its step, the items leased to workers and not yet made now, the
  /// batches waiting at the trainer after its step, and the live workers
  /// (0: unknown, the workers' room is not looked at).
  void on_ack(uint64_t wait_ns, uint64_t step_ns, uint64_t queued_items,
              uint64_t trainer_backlog = 0, uint64_t live_workers = 0);

  /// The highest idle fraction the other ranks of this trainer's
  /// data-parallel group had in their last period (0 for a group of one).
  /// A rank ahead of the others waits at the all-reduce with batches
  /// queued, which alone reads as "never waited while batches queued";
  /// above the target the group waited for data, so this window holds
  /// instead of narrowing. Kept until set again.
  void set_group_idle(double idle) noexcept { group_idle_ = idle; }

  /// The trainer's idle fraction over the last decided period.
  double last_idle() const noexcept { return last_idle_; }

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
  /// it would have narrowed but another rank of its group waited.
  uint32_t widened() const noexcept { return widened_; }
  uint32_t narrowed() const noexcept { return narrowed_; }
  uint32_t set_by_hand() const noexcept { return set_by_hand_; }
  uint32_t held_workers_full() const noexcept { return held_workers_full_; }
  uint32_t held_group_waited() const noexcept { return held_group_waited_; }

private:
  void decide(uint64_t queued_items, uint64_t live_workers);

  uint64_t backlog_ = UINT64_MAX; // least trainer backlog in the period
  double group_idle_ = 0.0;
  double last_idle_ = 0.0;

  window_limits limits_;
  uint32_t size_;
  uint32_t max_;
  uint64_t acks_ = 0;
  uint64_t wait_ns_ = 0; // over the current period
  uint64_t step_ns_ = 0;
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
