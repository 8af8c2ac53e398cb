#include <algorithm>

#include "stoker/router_status.hpp"
#include "stoker/errors.hpp"
#include "routing/router_state.hpp"

// What the console asks of the router and changes in it.

namespace stoker::detail {

router_status status_of(router_ptr self) {
  auto& s = self->state;
  router_status out;
  out.summary = s.current_summary();
  if (s.run_requested)
    out.summary.wall_ns = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(
        clock_type::now() - s.run_started)
        .count());
  out.in_flight = s.book.in_flight();
  out.batch_bytes = s.limits.batch_bytes;
  out.trainer_present = s.group_complete();
  out.paused = s.paused;
  out.world = s.world();
  auto now = s.now_ns();
  for (uint32_t r = 0; r < s.trainers.size(); ++r) {
    auto& t = s.trainers[r];
    trainer_status ts;
    ts.rank = r;
    ts.node = t.node;
    ts.host = t.host;
    ts.present = static_cast<bool>(t.actor);
    ts.window = s.window && t.actor ? s.window->size() : 0;
    if (s.window && t.actor) { // the group's window: every rank's
      ts.window_last_change = s.window->last_change();
      ts.window_widened = s.window->widened();
      ts.window_narrowed = s.window->narrowed();
      ts.window_set = s.window->set_by_hand();
      ts.window_held_workers_full = s.window->held_workers_full();
      ts.window_held_group_waited = s.window->held_group_waited();
    }
    ts.in_flight = s.book.in_flight(r);
    ts.pending = s.book.pending(r);
    if (t.actor) {
      ts.heard_ms_ago = static_cast<int64_t>(
        (now - std::min(now, t.heard_ns)) / 1000000);
      // The console's one figure: the rank heard from longest ago.
      out.trainer_heard_ms_ago = std::max(out.trainer_heard_ms_ago,
                                          ts.heard_ms_ago);
    }
    ts.period_ms = t.period_ns * 1e-6;
    ts.wait_ms = t.wait_ns * 1e-6;
    ts.collective_ms = t.collective_ns * 1e-6;
    out.trainers.push_back(std::move(ts));
  }
  auto next = s.book.front_pending();
  auto samples = next == nullptr
                   ? uint32_t{0}
                   : static_cast<uint32_t>(next->sample_ids.size());
  for (size_t i = 0; i < s.table.workers().size(); ++i) {
    auto& w = s.table.workers()[i];
    worker_status ws;
    ws.load = w;
    ws.expected_delay_s = s.table.expected_delay(i, samples, now);
    ws.overdue_ms = s.table.overdue_ns(i, now) / 1000000;
    ws.heard_ms_ago = (now - std::min(now, w.last_report_ns)) / 1000000;
    out.workers.push_back(std::move(ws));
  }
  return out;
}

std::string set_policy(router_ptr self, const policy_change& change) {
  auto& s = self->state;
  s.table.set_policy(change.policy);
  dispatch(self);
  return "router.policy is now " + to_string(change.policy);
}

std::string set_window(router_ptr self, const window_change& change) {
  auto& s = self->state;
  auto n = change.size;
  s.limits.initial = n;
  std::optional<uint32_t> took;
  if (s.window) // the group's: every rank's
    took = s.window->set_size(n, "set from the console");
  if (!took)
    return "router.window will start at " + std::to_string(n);
  dispatch(self);
  return "router.window is now " + std::to_string(*took)
         + (s.trainers.size() > 1 ? " for every trainer" : "")
         + (*took != n ? " (clamped to [trainer.prefetch, "
                        "router.max-inflight-bytes])"
                      : "");
}

caf::result<std::string> steer(router_ptr self, const steer_command& cmd) {
  auto& s = self->state;
  auto in_flight = std::to_string(s.book.in_flight()) + " batch(es) in flight";
  switch (cmd.verb) {
    case steer_verb::drain:
    case steer_verb::undrain: {
      bool drain = cmd.verb == steer_verb::drain;
      auto n = s.table.set_draining(cmd.target, drain);
      if (n == 0)
        return make_error(errc::invalid_config,
                          "no live worker on node '" + cmd.target
                            + "' nor named so; see nodes and router");
      dispatch(self);
      bool one = std::any_of(s.table.workers().begin(),
                             s.table.workers().end(),
                             [&](auto& w) { return w.name == cmd.target; });
      return (drain ? "draining " : "undrained ")
             + (one ? "worker '" + cmd.target + "'"
                    : std::to_string(n) + " worker(s) of node '" + cmd.target
                        + "'");
    }
    case steer_verb::pause:
      s.paused = true;
      return "paused: no new leases; " + in_flight + " finish";
    case steer_verb::resume:
      s.paused = false;
      dispatch(self);
      return std::string{"resumed"};
    case steer_verb::trace_start:
      if (s.trace)
        return make_error(errc::invalid_config,
                          "a trace is already being recorded to "
                            + s.trace_path + "; trace stop first");
      s.trace.emplace();
      s.trace_path = cmd.target;
      return "recording a trace to " + cmd.target
             + " (trace stop writes it)";
    case steer_verb::trace_stop: {
      auto done = finish_trace(self);
      if (!done)
        return std::move(done.error());
      return *done;
    }
    case steer_verb::shutdown:
      s.stopping = "shutdown from the console";
      maybe_finish(self);
      return "stopping: no new leases; the head reports once the "
             + in_flight + " are acknowledged";
  }
  return make_error(errc::invalid_config,
                    "unknown steering command " + to_string(cmd.verb));
}

caf::expected<std::string> finish_trace(router_ptr self) {
  auto& s = self->state;
  if (!s.trace)
    return make_error(errc::invalid_config,
                      "no trace is being recorded; trace start FILE first");
  auto spans = s.trace->spans();
  auto dropped = s.trace->dropped();
  auto err = s.trace->write(s.trace_path);
  auto path = s.trace_path;
  s.trace.reset();
  if (err)
    return err;
  return "trace: " + std::to_string(spans) + " span(s) written to " + path
         + (dropped > 0 ? " (" + std::to_string(dropped) + " dropped)" : "");
}

} // namespace stoker::detail
