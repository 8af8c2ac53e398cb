#include "stoker/routing.hpp"

#include <algorithm>
#include <cmath>

namespace stoker {

std::optional<routing_policy> parse_routing_policy(std::string_view name) {
  if (name == "least-loaded")
    return routing_policy::least_loaded;
  if (name == "round-robin")
    return routing_policy::round_robin;
  return std::nullopt;
}

std::string to_string(routing_policy p) {
  switch (p) {
    case routing_policy::least_loaded:
      return "least-loaded";
    case routing_policy::round_robin:
      return "round-robin";
  }
  return "unknown";
}

routing_table::routing_table(routing_policy policy) noexcept
  : policy_(policy) {
  // nop
}

size_t routing_table::add_worker(std::string name) {
  workers_.push_back(worker_load{});
  workers_.back().name = std::move(name);
  return workers_.size() - 1;
}

void routing_table::on_lease(size_t index, uint32_t samples) {
  auto& w = workers_.at(index);
  ++w.outstanding_items;
  w.outstanding_samples += samples;
}

void routing_table::on_done(size_t index, uint32_t samples, uint64_t busy_ns,
                            uint64_t mailbox_depth) {
  auto& w = workers_.at(index);
  w.outstanding_items -= std::min<uint64_t>(w.outstanding_items, 1);
  w.outstanding_samples -= std::min<uint64_t>(w.outstanding_samples, samples);
  w.mailbox_depth = mailbox_depth;
  ++w.items_done;
  if (busy_ns > 0 && samples > 0) {
    double rate = samples / (static_cast<double>(busy_ns) * 1e-9);
    w.rate_sps = w.has_rate ? rate_smoothing * rate
                                + (1.0 - rate_smoothing) * w.rate_sps
                            : rate;
    w.has_rate = true;
  }
}

double routing_table::assumed_rate(const worker_load& w) const {
  if (w.has_rate)
    return w.rate_sps;
  // Optimistic for newcomers, so a new worker gets work and gets measured.
  double best = 0.0;
  for (auto& other : workers_)
    if (other.has_rate)
      best = std::max(best, other.rate_sps);
  return best > 0.0 ? best : 1.0;
}

double routing_table::expected_delay(size_t index, uint32_t samples) const {
  auto& w = workers_.at(index);
  // The router's own count covers items still on the wire; the mailbox
  // depth covers what it cannot see. Take the larger, in samples.
  double per_item = w.outstanding_items > 0
                      ? static_cast<double>(w.outstanding_samples)
                          / static_cast<double>(w.outstanding_items)
                      : samples;
  double queued = std::max(static_cast<double>(w.outstanding_samples),
                           static_cast<double>(w.mailbox_depth) * per_item);
  return (queued + samples) / assumed_rate(w);
}

std::optional<size_t> routing_table::pick(uint32_t samples) {
  if (workers_.empty())
    return std::nullopt;
  if (policy_ == routing_policy::round_robin) {
    size_t i = next_rr_ % workers_.size();
    next_rr_ = i + 1;
    return i;
  }
  // Ties (common when the trainer, not the workers, is the bottleneck and
  // every worker idles) go to the worker that has had the least work, so
  // work spreads and a newcomer gets measured.
  auto work_of = [&](size_t i) {
    return workers_[i].items_done + workers_[i].outstanding_items;
  };
  size_t best = 0;
  double best_delay = expected_delay(0, samples);
  for (size_t i = 1; i < workers_.size(); ++i) {
    double d = expected_delay(i, samples);
    bool tie = std::abs(d - best_delay) <= 1e-9 * std::max(d, best_delay);
    if ((!tie && d < best_delay) || (tie && work_of(i) < work_of(best))) {
      best = i;
      best_delay = d;
    }
  }
  return best;
}

} // namespace stoker
