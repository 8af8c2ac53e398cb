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
  auto by_bytes = limits_.max_bytes / std::max<uint64_t>(limits_.batch_bytes, 1);
  max_ = static_cast<uint32_t>(
    std::clamp<uint64_t>(by_bytes, limits_.min, UINT32_MAX));
  size_ = std::clamp(limits_.initial, limits_.min, max_);
}

void inflight_window::on_ack(uint64_t wait_ns, uint64_t step_ns,
                             uint64_t queued_items, uint64_t trainer_backlog,
                             uint64_t live_workers) {
  // The first batch's wait is the pipeline filling up, not a shortage.
  if (acks_++ == 0) {
    queued_at_last_decision_ = queued_items;
    return;
  }
  wait_ns_ += wait_ns;
  step_ns_ += step_ns;
  backlog_ = std::min(backlog_, trainer_backlog);
  if ((acks_ - 1) % limits_.period == 0)
    decide(queued_items, live_workers);
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
  double total = static_cast<double>(wait_ns_ + step_ns_);
  double idle = total > 0 ? static_cast<double>(wait_ns_) / total : 0.0;
  last_idle_ = idle;
  auto queued_before = queued_at_last_decision_;
  auto backlog = backlog_; // the least: what stood in front all period
  backlog_ = UINT64_MAX;
  wait_ns_ = step_ns_ = 0;
  queued_at_last_decision_ = queued_items;
  auto before = size_;
  std::string why;
  // Widen only if the trainer ran dry (no batch in front of it after some
  // step of the period): a wait with batches queued is not a shortage that
  // more leases would fix (e.g. the trainer's thread waiting for a core).
  // Nor if every worker holds work already: the trainer waits for the
  // workers, and more leases would only queue at them.
  bool workers_full = live_workers > 0 && queued_items >= 2 * live_workers;
  bool would_widen = idle > limits_.idle_target && backlog == 0
                     && size_ < max_;
  // Narrow only if the trainer never waited while batches queued in front
  // of it or at the workers, and no other rank of its group waited either.
  bool would_narrow = idle < limits_.idle_target / 4 && size_ > limits_.min
                      && (backlog >= 2 || queued_items > queued_before);
  if (would_widen && workers_full) {
    ++held_workers_full_;
  } else if (would_widen) {
    size_ = std::min(max_, size_ + std::max<uint32_t>(1, size_ / 4));
    why = "trainer idle " + percent(idle) + " > target "
          + percent(limits_.idle_target);
    if (size_ == max_)
      why += " (at router.max-inflight-bytes)";
  } else if (would_narrow && group_idle_ > limits_.idle_target) {
    ++held_group_waited_;
  } else if (would_narrow) {
    size_ -= 1;
    why = "trainer never waited (idle " + percent(idle) + ") while ";
    why += backlog >= 2 ? std::to_string(backlog)
                            + " or more batches waited in front of it"
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
