#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace stoker {

/// How the router picks a worker for the next work item.
enum class routing_policy {
  least_loaded, ///< least expected delay: (outstanding + 1 item) / rate
  round_robin,  ///< every worker in turn, whatever its load (a baseline)
};

/// Parses "least-loaded" or "round-robin".
std::optional<routing_policy> parse_routing_policy(std::string_view name);

/// The config-file name of `p`.
std::string to_string(routing_policy p);

/// What the router knows of one worker.
struct worker_load {
  std::string name;
  uint64_t outstanding_items = 0;   ///< leased by the router, not yet done
  uint64_t outstanding_samples = 0; ///< samples in those items
  uint64_t mailbox_depth = 0;       ///< as last reported by the worker
  double rate_sps = 0.0;            ///< samples/s of busy time (moving avg.)
  bool has_rate = false;            ///< false until the first report
  uint64_t items_done = 0;
};

/// The routing decisions, free of actors: the router actor feeds it leases
/// and worker reports and asks it where the next item goes. Not
/// thread-safe: owned by the router actor.
class routing_table {
public:
  /// Weight of the newest rate sample in the moving average.
  static constexpr double rate_smoothing = 0.3;

  explicit routing_table(routing_policy policy) noexcept;

  /// Adds a worker; returns its index (indices are stable).
  size_t add_worker(std::string name);

  /// Records that `samples` samples were leased to worker `index`.
  void on_lease(size_t index, uint32_t samples);

  /// Records a finished item: its size, the busy time it took, and the
  /// worker's mailbox depth when it reported.
  void on_done(size_t index, uint32_t samples, uint64_t busy_ns,
               uint64_t mailbox_depth);

  /// The worker for an item of `samples` samples, or nothing without
  /// workers.
  std::optional<size_t> pick(uint32_t samples);

  /// Expected seconds until worker `index` would finish one more item of
  /// `samples` samples: (queued + in flight + samples) / rate. Workers
  /// without a report yet are assumed as fast as the fastest one known.
  double expected_delay(size_t index, uint32_t samples) const;

  const std::vector<worker_load>& workers() const noexcept { return workers_; }

private:
  double assumed_rate(const worker_load& w) const;

  routing_policy policy_;
  std::vector<worker_load> workers_;
  size_t next_rr_ = 0;
};

} // namespace stoker
