#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "stoker/router_status.hpp"
#include "stoker/options.hpp"

namespace stoker {

/// The routing decisions, free of actors: the router actor feeds it leases
/// and worker reports and asks it where the next item goes. Times are
/// nanoseconds on one monotonic clock of the caller's choice. Not
/// thread-safe: owned by the router actor.
class routing_table {
public:
  /// Weight of the newest rate sample in the moving average.
  static constexpr double rate_smoothing = 0.3;

  /// No worker excluded (see pick).
  static constexpr size_t none = std::numeric_limits<size_t>::max();

  /// Least-loaded compares every worker up to this many; past it, a
  /// decision compares `sampled_candidates` workers drawn at random plus
  /// every worker on the machine the item is for. A scan costs ~6 ns a
  /// worker (tools/bench/bench-routing: 17 k decisions/s at 10,000), the
  /// sample a fixed ~1 us a decision (888 k/s at 10,000); the best of 64
  /// random draws lies in the best 5% of the workers with probability
  /// 1 - 0.95^64 > 0.96.
  static constexpr size_t exact_up_to = 1024;
  static constexpr size_t sampled_candidates = 64;

  /// A worker whose last report is older than `stale_after_ns` plus the
  /// time one item takes it counts as slower the longer it stays silent
  /// (see expected_delay). `seed` drives power-of-two's draws.
  explicit routing_table(routing_policy policy,
                         uint64_t stale_after_ns = 300'000'000,
                         uint64_t seed = 0) noexcept;

  /// Adds a worker on machine `host` that joined at `now_ns`; returns its
  /// index (indices are stable).
  size_t add_worker(std::string name, std::string host = {},
                    uint64_t now_ns = 0);

  /// Which machine the trainer is on: workers there are `local`
  /// (local-only's pool and least-loaded's tie-break).
  void set_trainer_host(const std::string& host);

  /// The machines of every trainer of a data-parallel group: a worker on
  /// any of them is `local`.
  void set_trainer_hosts(std::vector<std::string> hosts);

  /// Records that `samples` samples were leased to worker `index`.
  void on_lease(size_t index, uint32_t samples);

  /// Records a finished item: its size, the busy time it took, and the
  /// worker's mailbox depth when it reported at `now_ns`.
  void on_done(size_t index, uint32_t samples, uint64_t busy_ns,
               uint64_t mailbox_depth, uint64_t now_ns = 0);

  /// Records a periodic report (no item finished): the worker is alive and
  /// has `mailbox_depth` items waiting.
  void on_report(size_t index, uint64_t mailbox_depth, uint64_t now_ns);

  /// Marks worker `index` lost (it died or hung): it is never picked again
  /// and its outstanding work is forgotten (the router re-leases it).
  void remove_worker(size_t index);

  /// Workers not lost (kept as they change: the router asks on every ack).
  size_t alive_workers() const noexcept { return alive_; }

  /// Items leased and not yet made, over every worker (kept as they
  /// change: the router asks on every ack).
  uint64_t outstanding_items() const noexcept { return outstanding_total_; }

  /// Stops (or resumes) giving new work to the live worker named `name`,
  /// or to every live worker of node `name` (names "NODE/i"); returns how
  /// many workers that touched.
  size_t set_draining(const std::string& name, bool draining);

  /// How long worker `index` has been silent beyond the time its current
  /// item should take (it cannot report mid-item), at `now_ns`.
  uint64_t silence_ns(size_t index, uint64_t now_ns) const;

  /// The worker for an item of `samples` samples, other than `exclude`, or
  /// nothing if no worker qualifies (none joined; local-only: none on the
  /// trainer's machine). `near`, when set, is the machine of the trainer
  /// the item is for: workers there win ties (and local-only takes only
  /// them), so a batch skips the network where that costs nothing.
  std::optional<size_t> pick(uint32_t samples, uint64_t now_ns = 0,
                             size_t exclude = none,
                             const std::string& near = {});

  /// Expected seconds until worker `index` would finish one more item of
  /// `samples` samples: (queued + in flight + samples) / rate, times
  /// (1 + overdue / stale_after) for a worker overdue with its report.
  /// Workers without a rate yet are assumed as fast as the fastest known.
  double expected_delay(size_t index, uint32_t samples,
                        uint64_t now_ns = 0) const;

  /// Nanoseconds by which worker `index`'s report is overdue at `now_ns`
  /// (0: not stale).
  uint64_t overdue_ns(size_t index, uint64_t now_ns) const;

  routing_policy policy() const noexcept { return policy_; }

  /// Changes the policy from the next pick on (the console's `set`).
  void set_policy(routing_policy policy) noexcept { policy_ = policy; }

  const std::vector<worker_load>& workers() const noexcept { return workers_; }

private:
  double assumed_rate(const worker_load& w) const;
  // Whether worker `index` is on the machine `near` (any trainer's when
  // `near` is empty).
  bool near_to(size_t index, const std::string& near) const;
  bool eligible(size_t index, size_t exclude, const std::string& near) const;
  // Whether `a` beats `b` at equal delay: near first, then less work.
  bool preferred_on_tie(size_t a, size_t b, const std::string& near) const;
  std::optional<size_t> least_delay(uint32_t samples, uint64_t now_ns,
                                    size_t exclude,
                                    const std::string& near) const;
  std::optional<size_t> better_of_two(uint32_t samples, uint64_t now_ns,
                                      size_t exclude,
                                      const std::string& near);
  uint64_t next_random() noexcept;
  // A worker drawn uniformly among the eligible ones by rejection, or
  // nothing after `tries` ineligible draws.
  std::optional<size_t> draw_eligible(size_t exclude, const std::string& near,
                                      size_t tries);
  std::optional<size_t> sampled_least_delay(uint32_t samples, uint64_t now_ns,
                                            size_t exclude,
                                            const std::string& near);
  // The workers on machine `near` (on any trainer's when empty).
  const std::vector<size_t>& workers_near(const std::string& near) const;
  void index_local();

  routing_policy policy_;
  uint64_t stale_after_ns_;
  uint64_t rng_state_;
  std::vector<std::string> trainer_hosts_;
  std::vector<worker_load> workers_;
  size_t next_rr_ = 0;
  double fastest_rate_ = 0.0; // the highest rate_sps of any measured worker
  uint64_t outstanding_total_ = 0; // sum of outstanding_items
  size_t alive_ = 0;               // workers not lost
  std::unordered_map<std::string, std::vector<size_t>> by_host_;
  std::vector<size_t> local_; // workers on any trainer's machine
};

} // namespace stoker
