#include "routing/run_series.hpp"

#include <algorithm>

namespace stoker {

run_series::run_series(double interval_s, size_t max_points)
  : interval_(interval_s), max_points_(max_points < 2 ? 2 : max_points) {
  kept_.push_back(sample{0, 0, 0, 0, 0, 0});
}

void run_series::offer(double t_s, uint64_t samples, uint64_t wait_ns,
                       uint64_t step_ns, uint32_t window,
                       uint64_t busy_ns, bool last) {
  auto since = t_s - kept_.back().t;
  if (since < interval_ && !(last && since > 0))
    return;
  // Workers report their busy time now and then: never let it run back.
  busy_ns = std::max(busy_ns, kept_.back().busy_ns);
  kept_.push_back(sample{t_s, samples, wait_ns, step_ns, window, busy_ns});
  if (kept_.size() <= max_points_ + 1)
    return;
  // Every other point goes (the start and the newest stay).
  std::vector<sample> half;
  half.reserve(kept_.size() / 2 + 2);
  for (size_t i = 0; i < kept_.size(); i += 2)
    half.push_back(kept_[i]);
  if (half.back().t != kept_.back().t)
    half.push_back(kept_.back());
  kept_ = std::move(half);
  interval_ *= 2;
}

std::vector<series_point> run_series::points() const {
  std::vector<series_point> out;
  for (size_t i = 1; i < kept_.size(); ++i) {
    auto& a = kept_[i - 1];
    auto& b = kept_[i];
    series_point p;
    p.t = b.t;
    double dt = b.t - a.t;
    p.samples_per_s = dt > 0 ? static_cast<double>(b.samples - a.samples) / dt
                             : 0;
    auto wait = static_cast<double>(b.wait_ns - a.wait_ns);
    auto step = static_cast<double>(b.step_ns - a.step_ns);
    p.idle = wait + step > 0 ? wait / (wait + step) : 0;
    p.window = b.window;
    p.busy_workers = dt > 0 ? static_cast<double>(b.busy_ns - a.busy_ns)
                                / (dt * 1e9)
                            : 0;
    out.push_back(p);
  }
  return out;
}

} // namespace stoker
