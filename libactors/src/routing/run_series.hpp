#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "stoker/router_status.hpp"

namespace stoker {

/// The run's time series for the report: the router offers its running
/// counts on every tick, and a point is kept once per `interval_s`. A long
/// run keeps at most `max_points`: past that every other point goes and
/// the interval doubles, so memory stays bounded and the rates, made from
/// cumulative counts, stay right over the longer intervals. Plain code,
/// owned by the router actor; not thread-safe.
class run_series {
public:
  explicit run_series(double interval_s = 1.0, size_t max_points = 3600);

  /// The counts at `t_s` seconds since the run began: samples acknowledged,
  /// the trainers' summed data wait and step time, rank 0's window, the
  /// workers' summed busy time (as they last reported it). Kept when
  /// `interval` passed since the last, or with `last` (the run's end) when
  /// any time did.
  void offer(double t_s, uint64_t samples, uint64_t wait_ns,
             uint64_t step_ns, uint32_t window, uint64_t busy_ns,
             bool last = false);

  /// The points: rates over each interval.
  std::vector<series_point> points() const;

  /// The interval between points now (seconds).
  double interval() const noexcept { return interval_; }

private:
  struct sample {
    double t;
    uint64_t samples;
    uint64_t wait_ns;
    uint64_t step_ns;
    uint32_t window;
    uint64_t busy_ns;
  };

  double interval_;
  size_t max_points_;
  std::vector<sample> kept_; // kept_[0]: the run's start (all zero)
};

} // namespace stoker
