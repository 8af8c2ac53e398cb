#include <algorithm>
#include <cstdlib>

#include "stoker/errors.hpp"
#include "routing/router_state.hpp"

namespace stoker::detail {

router_status status_of(router_ptr self) {
  auto& s = self->state;
  router_status out;
  out.summary = s.summary;
  out.summary.policy = to_string(s.table.policy());
  if (s.run_requested)
    out.summary.wall_ns = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(
        clock_type::now() - s.run_started)
        .count());
  if (s.window) {
    out.summary.window = s.window->size();
    out.summary.window_max = s.window->max();
    out.summary.window_changes = s.window->changes();
    out.summary.window_last_change = s.window->last_change();
  }
  out.in_flight = s.leases.size();
  out.batch_bytes = s.limits.batch_bytes;
  out.trainer_present = static_cast<bool>(s.trainer);
  out.paused = s.paused;
  auto now = s.now_ns();
  if (s.trainer)
    out.trainer_heard_ms_ago = static_cast<int64_t>(
      (now - std::min(now, s.trainer_heard_ns)) / 1000000);
  auto samples = s.pending.empty()
                   ? uint32_t{0}
                   : static_cast<uint32_t>(
                     s.pending.front().sample_ids.size());
  for (size_t i = 0; i < s.table.workers().size(); ++i) {
    auto& w = s.table.workers()[i];
    worker_status ws;
    ws.name = w.name;
    ws.host = w.host;
    ws.alive = w.alive;
    ws.local = w.local;
    ws.outstanding = w.outstanding_items;
    ws.mailbox = w.mailbox_depth;
    ws.items_done = w.items_done;
    ws.draining = w.draining;
    ws.rate_sps = w.has_rate ? w.rate_sps : 0.0;
    ws.expected_delay_s = s.table.expected_delay(i, samples, now);
    ws.overdue_ms = s.table.overdue_ns(i, now) / 1000000;
    ws.heard_ms_ago = (now - std::min(now, w.last_report_ns)) / 1000000;
    out.workers.push_back(std::move(ws));
  }
  return out;
}

caf::result<std::string> set_option(router_ptr self, const std::string& key,
                                  const std::string& value) {
  auto& s = self->state;
  if (key == "router.policy") {
    auto p = parse_enum<routing_policy>(value);
    if (!p)
      return make_error(errc::invalid_config,
                        "router.policy = " + value
                          + ": expected least-loaded, round-robin, "
                            "local-only or power-of-two");
    s.table.set_policy(*p);
    s.summary.policy = to_string(*p);
    dispatch(self);
    return "router.policy is now " + value;
  }
  if (key == "router.window") {
    char* end = nullptr;
    auto n = std::strtoul(value.c_str(), &end, 10);
    if (value.empty() || *end != '\0' || n < 1 || n > 100000)
      return make_error(errc::invalid_config,
                        "router.window = " + value
                          + ": expected a whole number from 1 to 100000");
    s.limits.initial = static_cast<uint32_t>(n);
    if (!s.window)
      return "router.window will start at " + value;
    auto took = s.window->set_size(static_cast<uint32_t>(n),
                                   "set from the console");
    dispatch(self);
    return "router.window is now " + std::to_string(took)
           + (took != n ? " (clamped to [trainer.prefetch, "
                          "router.max-inflight-bytes])"
                        : "");
  }
  return make_error(errc::invalid_config,
                    "cannot set '" + key
                      + "'; expected router.policy or router.window");
}

caf::result<std::string> control(router_ptr self, const std::string& what,
                               const std::string& arg) {
  auto& s = self->state;
  auto in_flight = std::to_string(s.leases.size()) + " batch(es) in flight";
  if (what == "drain" || what == "undrain") {
    auto n = s.table.set_draining(arg, what == "drain");
    if (n == 0)
      return make_error(errc::invalid_config,
                        "no live worker on node '" + arg
                          + "' nor named so; see nodes and router");
    dispatch(self);
    bool one = std::any_of(s.table.workers().begin(), s.table.workers().end(),
                           [&](auto& w) { return w.name == arg; });
    return (what == "drain" ? "draining " : "undrained ")
           + (one ? "worker '" + arg + "'"
                  : std::to_string(n) + " worker(s) of node '" + arg + "'");
  }
  if (what == "pause") {
    s.paused = true;
    return "paused: no new leases; " + in_flight + " finish";
  }
  if (what == "resume") {
    s.paused = false;
    dispatch(self);
    return std::string{"resumed"};
  }
  if (what == "trace-start") {
    if (s.trace)
      return make_error(errc::invalid_config,
                        "a trace is already being recorded to "
                          + s.trace_path + "; trace stop first");
    s.trace.emplace();
    s.trace_path = arg;
    return "recording a trace to " + arg + " (trace stop writes it)";
  }
  if (what == "trace-stop") {
    auto done = finish_trace(self);
    if (!done)
      return std::move(done.error());
    return *done;
  }
  if (what == "shutdown") {
    s.stopping = "shutdown from the console";
    maybe_finish(self);
    return "stopping: no new leases; the head reports once the "
           + in_flight + " are acknowledged";
  }
  return make_error(errc::invalid_config,
                    "unknown control '" + what + "'");
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
