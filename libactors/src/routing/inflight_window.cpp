#include "routing/inflight_window.hpp"

#include <algorithm>
#include <cstdio>

namespace stoker {

namespace {

std::string percent(double fraction) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f%%", fraction * 100.0);
  return text;
}

} // namespace

inflight_window::inflight_window(const window_limits& limits)
  : limits_(limits) {
  limits_.min = std::max<uint32_t>(limits_.min, 1);
  limits_.period = std::max<uint32_t>(limits_.period, 1);
  limits_.ranks = std::max<uint32_t>(limits_.ranks, 1);
  if (limits_.ranks > 1)
    limits_.period *= limits_.ranks * group_periods;
  collective_.resize(limits_.ranks);
  auto by_bytes = limits_.max_bytes / std::max<uint64_t>(limits_.batch_bytes, 1);
  max_ = static_cast<uint32_t>(
    std::clamp<uint64_t>(by_bytes, limits_.min, UINT32_MAX));
  size_ = std::clamp(limits_.initial, limits_.min, max_);
}

void inflight_window::on_ack(const window_ack& ack) {
  // The first batch's wait is the pipeline filling up, not a shortage.
  if (acks_++ == 0) {
    queued_at_last_decision_ = ack.queued_items;
    return;
  }
  wait_ns_ += ack.wait_ns;
  step_ns_ += ack.step_ns;
  auto& c = collective_[std::min<size_t>(ack.rank, collective_.size() - 1)];
  c.sum_ns += ack.collective_ns;
  c.least_ns = std::min(c.least_ns, ack.collective_ns);
  ++c.acks;
  backlog_ = std::min(backlog_, ack.trainer_backlog);
  if ((acks_ - 1) % limits_.period == 0)
    decide(ack.queued_items, ack.live_workers);
}

uint32_t inflight_window::set_size(uint32_t n, const std::string& why) {
  auto before = size_;
  size_ = std::clamp(n, limits_.min, max_);
  if (size_ != before) {
    ++changes_;
    ++set_by_hand_;
    last_change_ = "set " + std::to_string(before) + " -> "
                   + std::to_string(size_) + ": " + why;
  }
  return size_;
}

void inflight_window::decide(uint64_t queued_items, uint64_t live_workers) {
  // A rank's least collective of the period is the reduce itself (and
  // its steady lead over the slowest rank's compute): the rest it waited
  // for a rank that waited for data.
  auto exposed_wait = wait_ns_;
  for (auto& c : collective_) {
    if (c.acks > 0)
      exposed_wait += c.sum_ns - c.acks * c.least_ns;
    c = rank_collective{};
  }
  auto own_total = static_cast<double>(wait_ns_ + step_ns_);
  double idle = own_total > 0 ? static_cast<double>(wait_ns_) / own_total : 0.0;
  auto total = static_cast<double>(exposed_wait + step_ns_);
  double exposed = total > 0 ? static_cast<double>(exposed_wait) / total : 0.0;
  bool waited = wait_ns_ > 0;
  last_idle_ = idle;
  last_exposed_ = exposed;
  quiet_streak_ = exposed < limits_.idle_target / 4 ? quiet_streak_ + 1 : 0;
  auto queued_before = queued_at_last_decision_;
  auto backlog = backlog_; // the least: what stood in front all period
  backlog_ = UINT64_MAX;
  wait_ns_ = step_ns_ = 0;
  queued_at_last_decision_ = queued_items;
  const uint32_t quiet_needed = limits_.ranks > 1 ? group_quiet_periods : 1;
  auto before = size_;
  std::string why;
  // Widen only if the trainer ran dry (no batch in front of it after some
  // step of the period, and it waited): a wait with batches queued is not
  // a shortage that more leases would fix (e.g. the trainer's thread
  // waiting for a core). Nor if every worker holds work already: the
  // trainer waits for the workers, and more leases would only queue at
  // them.
  bool workers_full = live_workers > 0 && queued_items >= 2 * live_workers;
  bool would_widen = exposed > limits_.idle_target && waited && backlog == 0
                     && size_ < max_;
  // Narrow only if the trainer never waited while batches queued in front
  // of it or at the workers, and its group's steps did not wait either.
  // (Queues growing at the workers over a group's few steps are noise.)
  bool quiet = idle < limits_.idle_target / 4 && size_ > limits_.min
               && (backlog >= 2
                   || (limits_.ranks == 1 && queued_items > queued_before));
  if (would_widen && workers_full) {
    ++held_workers_full_;
  } else if (would_widen) {
    // A group's window is every rank's: one more is a batch more on each
    // of its trainers, and its long period already waited for evidence.
    auto step = limits_.ranks > 1 ? 1u : std::max<uint32_t>(1, size_ / 4);
    size_ = std::min(max_, size_ + step);
    why = limits_.ranks > 1
            ? "the group's steps waited " + percent(exposed)
                + " for data (its ranks' own wait " + percent(idle)
                + ") > target " + percent(limits_.idle_target)
            : "trainer idle " + percent(idle) + " > target "
                + percent(limits_.idle_target);
    if (size_ == max_)
      why += " (at router.max-inflight-bytes)";
  } else if (quiet
             && (exposed >= limits_.idle_target / 4
                 || quiet_streak_ < quiet_needed)) {
    ++held_group_waited_;
  } else if (quiet) {
    size_ -= 1;
    why = limits_.ranks > 1 ? "no rank waited (idle " + percent(idle)
                                + ") in " + std::to_string(quiet_needed)
                                + " periods while "
                            : "trainer never waited (idle " + percent(idle)
                                + ") while ";
    why += backlog >= 2 ? std::to_string(backlog)
                            + " or more batches waited in front of "
                            + (limits_.ranks > 1 ? "each" : "it")
                        : "worker queues grew from "
                            + std::to_string(queued_before) + " to "
                            + std::to_string(queued_items) + " items";
  }
  if (size_ != before) {
    ++changes_;
    ++(size_ > before ? widened_ : narrowed_);
    last_change_ = (size_ > before ? "widened " : "narrowed ")
                   + std::to_string(before) + " -> " + std::to_string(size_)
                   + ": " + why;
  }
}

} // namespace stoker
