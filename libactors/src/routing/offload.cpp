#include "routing/offload.hpp"

#include <algorithm>
#include <cstdio>

namespace stoker {

namespace {

std::string percent(double x) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f%%", 100.0 * x);
  return text;
}

} // namespace

offload_controller::offload_controller(blur_placement placement,
                                       offload_limits limits)
  : placement_(placement),
    limits_(limits),
    share_(placement == blur_placement::gpu ? 1.0 : 0.0) {
  last_reason_ = placement == blur_placement::automatic
                   ? "auto: no period judged yet"
                   : "pipeline.placement = " + to_string(placement);
}

std::optional<std::string>
offload_controller::decide(const offload_signals& s) {
  if (placement_ != blur_placement::automatic)
    return std::nullopt;
  double before = share_;
  std::string why;
  auto busy_ns = s.wait_ns + s.step_ns;
  if (!s.trainer_gpu) {
    share_ = 0.0;
    why = "the trainer has no CUDA blur stage";
  } else if (s.acks < limits_.min_acks || busy_ns == 0) {
    last_reason_ = "auto: too few acks to judge ("
                   + std::to_string(s.acks) + ")";
    return std::nullopt; // the period goes on
  } else {
    double idle = static_cast<double>(s.wait_ns)
                  / static_cast<double>(busy_ns);
    bool saturated = s.min_worker_busy >= limits_.saturated;
    auto figures = "trainer idle " + percent(idle) + ", least busy worker "
                   + (s.min_worker_busy < 0 ? std::string{"n/a"}
                                            : percent(s.min_worker_busy));
    if (idle > limits_.idle_high && saturated) {
      share_ = std::min(1.0, share_ + limits_.step);
      why = figures + ": the GPU has idle time and every worker is "
                      "saturated";
    } else if (idle < limits_.idle_low && share_ > 0.0) {
      share_ = std::max(0.0, share_ - limits_.step);
      why = figures + ": the GPU is busy";
    } else {
      why = figures + (idle > limits_.idle_high
                         ? ": workers have room, holding"
                         : ": holding");
    }
  }
  last_reason_ = "auto: " + why;
  if (share_ == before)
    return std::nullopt;
  ++changes_;
  last_change_ = "GPU share " + percent(before) + " -> " + percent(share_)
                 + ": " + why;
  return last_change_;
}

bool offload_controller::next_on_trainer() {
  carry_ += share_;
  if (carry_ >= 1.0 - 1e-9) {
    carry_ -= 1.0;
    return true;
  }
  return false;
}

} // namespace stoker
