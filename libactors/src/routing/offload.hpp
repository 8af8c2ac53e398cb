#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "stoker/options.hpp"

namespace stoker {

/// Thresholds of the automatic placement.
struct offload_limits {
  /// The trainer waits for data more than this share of its time: its GPU
  /// has room for blur work.
  double idle_high = 0.05;
  /// It waits less than this: its GPU is the bottleneck; give work back.
  double idle_low = 0.01;
  /// A worker busier than this share of the period is saturated.
  double saturated = 0.9;
  /// How much of the batches one decision moves.
  double step = 0.125;
  /// Acks a period needs before it is judged (fewer: too little to tell).
  uint32_t min_acks = 8;
};

/// What the router saw over one period, for one decision.
struct offload_signals {
  bool trainer_gpu = false;  ///< the trainer opened a CUDA blur stage
  uint64_t wait_ns = 0;      ///< the trainer's data wait, summed over acks
  uint64_t step_ns = 0;      ///< its busy time (steps and GPU blur)
  uint32_t acks = 0;
  /// The least busy share of the period among live, undrained workers
  /// (busy time over wall time); < 0: no worker reported.
  double min_worker_busy = -1.0;
};

/// The share of batches whose blur runs on the trainer's GPU, and how it
/// came to be. Plain code, owned by the router actor (one thread).
///
/// `cpu` holds the share at 0 and `gpu` at 1. `automatic` starts at 0
/// and, once per judged period, raises it by `step` while the trainer
/// idles (> idle_high) and every worker is saturated, lowers it while the
/// trainer is busy (< idle_low), and holds it otherwise: between the two
/// thresholds, or when the workers have room (they are not the
/// bottleneck, so more GPU work would not help).
class offload_controller {
public:
  explicit offload_controller(blur_placement placement = blur_placement::cpu,
                              offload_limits limits = {});

  /// Judges one period. Returns the reason when the share changed (for
  /// the log, the console and the report), nothing when it held.
  std::optional<std::string> decide(const offload_signals& s);

  /// Whether the next leased batch goes to the trainer unblurred: spreads
  /// the share evenly (a running remainder, no randomness).
  bool next_on_trainer();

  double share() const noexcept { return share_; }
  blur_placement placement() const noexcept { return placement_; }
  const offload_limits& limits() const noexcept { return limits_; }
  uint32_t changes() const noexcept { return changes_; }
  /// The reason of the last change; "" before any.
  const std::string& last_change() const noexcept { return last_change_; }
  /// Why the share holds now (the latest decision, change or not).
  const std::string& last_reason() const noexcept { return last_reason_; }

private:
  blur_placement placement_;
  offload_limits limits_;
  double share_ = 0.0;
  double carry_ = 0.0;
  uint32_t changes_ = 0;
  std::string last_change_;
  std::string last_reason_;
};

} // namespace stoker
