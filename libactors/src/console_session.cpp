#include "stoker/console_session.hpp"

#include <chrono>
#include <ctime>

#include "stoker/console_commands.hpp"
#include "stoker/errors.hpp"
#include "stoker/run_report.hpp"

namespace stoker {

namespace {

constexpr auto ask_timeout = std::chrono::seconds(2);

std::string clock_time(int64_t unix_s) {
  auto t = static_cast<std::time_t>(unix_s);
  std::tm parts{};
  ::localtime_r(&t, &parts);
  char text[16];
  std::strftime(text, sizeof(text), "%H:%M:%S", &parts);
  return text;
}

// Why the router is not giving a worker work, or "" if it is.
std::string idle_reason(const worker_status& w) {
  if (!w.alive)
    return "down";
  if (w.draining)
    return "draining";
  if (w.overdue_ms > 0)
    return "stale report (" + std::to_string(w.overdue_ms) + " ms late)";
  if (w.mailbox > 0 && w.outstanding > 0)
    return "queue of " + std::to_string(w.mailbox);
  return "";
}

} // namespace

std::string format_nodes(const std::vector<node_row>& nodes) {
  std::vector<std::vector<std::string>> rows;
  for (auto& n : nodes)
    rows.push_back({n.name, n.role, n.host, std::to_string(n.cores),
                    n.role == "worker" ? std::to_string(n.workers) : "-",
                    n.device.empty() ? "-" : n.device,
                    clock_time(n.joined_unix_s), n.state});
  return format_table({"node", "role", "host", "cores", "workers", "device",
                       "joined", "state"},
                      rows);
}

std::string format_router(const router_status& st) {
  auto& s = st.summary;
  std::string out = "policy " + s.policy + ", window "
                    + std::to_string(s.window) + " of at most "
                    + std::to_string(s.window_max) + ", in flight "
                    + std::to_string(st.in_flight) + " batch(es) ("
                    + human_bytes(st.in_flight * st.batch_bytes) + ")"
                    + (st.trainer_present ? "" : ", no trainer")
                    + (st.paused ? ", PAUSED" : "") + "\n";
  if (!s.window_last_change.empty())
    out += "last window change: " + s.window_last_change + "\n";
  out += "leased " + std::to_string(s.batches_leased) + ", acked "
         + std::to_string(s.batches_acked) + ", re-leased "
         + std::to_string(s.batches_released) + ", hedged "
         + std::to_string(s.batches_hedged) + "\n";
  uint64_t total = 0;
  for (auto& w : st.workers)
    total += w.items_done;
  std::vector<std::vector<std::string>> rows;
  for (auto& w : st.workers) {
    auto share = total > 0 ? 100.0 * static_cast<double>(w.items_done)
                               / static_cast<double>(total)
                           : 0.0;
    rows.push_back({w.name, w.host + (w.local ? " (trainer's)" : ""),
                    std::to_string(w.items_done), human_number(share) + "%",
                    std::to_string(w.outstanding), std::to_string(w.mailbox),
                    human_number(w.rate_sps),
                    human_duration_ns(static_cast<uint64_t>(
                      w.expected_delay_s * 1e9)),
                    idle_reason(w)});
  }
  out += format_table({"worker", "host", "batches", "share", "leased",
                       "mailbox", "samples/s", "delay", "note"},
                      rows);
  return out;
}

std::string format_trainer(const trainer_stats& t, const router_status& st) {
  double busy = static_cast<double>(t.step_ns);
  double wait = static_cast<double>(t.wait_ns);
  auto steps = std::max<uint64_t>(t.steps, 1);
  double wall_s = static_cast<double>(st.summary.wall_ns) * 1e-9;
  std::vector<std::vector<std::string>> rows{
    {"device", t.device + (t.simulated ? " [simulated accelerator]" : "")},
    {"step", std::to_string(t.steps)},
    {"time per step",
     human_duration_ns(
       static_cast<uint64_t>((busy + wait) / static_cast<double>(steps)))},
    {"compute per step", human_duration_ns(t.step_ns / steps)},
    {"throughput",
     human_number(wall_s > 0 ? static_cast<double>(t.samples_delivered
                                                   - t.resumed_samples)
                                 / wall_s
                             : 0.0)
       + " samples/s"},
    {"accelerator idle",
     human_number(busy + wait > 0 ? 100.0 * wait / (busy + wait) : 0.0) + "%"},
    {"loss", t.simulated ? "- (simulated)" : human_number(t.last_loss)},
    {"samples", std::to_string(t.samples_delivered) + " delivered, "
                  + std::to_string(t.duplicates) + " duplicates"}};
  return format_table({"trainer", ""}, rows);
}

console_session::console_session(caf::actor_system& sys,
                                 registry_actor registry, router_actor router)
  : self_(sys), registry_(std::move(registry)), router_(std::move(router)) {
  // nop
}

caf::expected<router_status> console_session::router_now() {
  caf::expected<router_status> result{caf::error{}};
  self_->request(router_, ask_timeout, status_atom::value)
    .receive([&](router_status& s) { result = std::move(s); },
             [&](caf::error& err) { result = std::move(err); });
  return result;
}

caf::expected<trainer_stats> console_session::trainer_now() {
  roster members;
  caf::error failure;
  self_->request(registry_, ask_timeout, roster_atom::value)
    .receive([&](roster& r) { members = std::move(r); },
             [&](caf::error& err) { failure = std::move(err); });
  if (failure)
    return failure;
  if (members.trainers.empty())
    return make_error(errc::run_failure, "no trainer has joined");
  caf::expected<trainer_stats> result{caf::error{}};
  self_->request(members.trainers.front(), ask_timeout, stats_atom::value)
    .receive([&](trainer_stats& s) { result = std::move(s); },
             [&](caf::error& err) { result = std::move(err); });
  return result;
}

caf::expected<std::string> console_session::stats_json() {
  auto router = router_now();
  if (!router)
    return std::move(router.error());
  auto trainer = trainer_now();
  if (!trainer)
    return std::move(trainer.error());
  roster members;
  self_->request(registry_, ask_timeout, roster_atom::value)
    .receive([&](roster& r) { members = std::move(r); },
             [](caf::error&) {});
  std::vector<worker_stats> workers;
  for (auto& w : members.workers)
    self_->request(w, ask_timeout, stats_atom::value)
      .receive([&](worker_stats& s) { workers.push_back(std::move(s)); },
               [](caf::error&) {});
  return to_json(make_report(router->summary, *trainer, workers));
}

console_reply console_session::execute(std::string_view line) {
  auto cmd = parse_console_line(line);
  if (!cmd)
    return {describe(cmd.error()) + "\n"};
  auto fail = [](const caf::error& err) {
    return console_reply{"error: " + describe(err) + "\n"};
  };
  if (cmd->name.empty())
    return {};
  if (cmd->name == "help") {
    auto text = console_help(cmd->args.empty() ? "" : cmd->args[0]);
    return text ? console_reply{*text} : fail(text.error());
  }
  if (cmd->name == "quit")
    return {"bye; the job goes on\n", true};
  if (cmd->name == "nodes") {
    caf::expected<std::vector<node_row>> rows{caf::error{}};
    self_->request(registry_, ask_timeout, nodes_atom::value)
      .receive([&](std::vector<node_row>& r) { rows = std::move(r); },
               [&](caf::error& err) { rows = std::move(err); });
    return rows ? console_reply{format_nodes(*rows)} : fail(rows.error());
  }
  if (cmd->name == "router") {
    auto st = router_now();
    return st ? console_reply{format_router(*st)} : fail(st.error());
  }
  if (cmd->name == "trainer") {
    auto st = router_now();
    if (!st)
      return fail(st.error());
    auto t = trainer_now();
    return t ? console_reply{format_trainer(*t, *st)} : fail(t.error());
  }
  if (cmd->name == "stats") {
    auto json = stats_json();
    return json ? console_reply{*json} : fail(json.error());
  }
  if (cmd->name == "drain" || cmd->name == "undrain" || cmd->name == "pause"
      || cmd->name == "resume" || cmd->name == "shutdown"
      || cmd->name == "trace") {
    auto what = cmd->name;
    auto arg = cmd->args.empty() ? std::string{} : cmd->args[0];
    if (what == "trace") { // trace start FILE | trace stop
      what = "trace-" + cmd->args[0];
      arg = cmd->args.size() > 1 ? cmd->args[1] : std::string{};
    }
    caf::expected<std::string> answer{caf::error{}};
    self_->request(router_, ask_timeout, control_atom::value, what, arg)
      .receive([&](std::string& text) { answer = std::move(text); },
               [&](caf::error& err) { answer = std::move(err); });
    return answer ? console_reply{*answer + "\n"} : fail(answer.error());
  }
  if (cmd->name == "set") {
    caf::expected<std::string> answer{caf::error{}};
    self_->request(router_, ask_timeout, set_atom::value, cmd->args[0],
                   cmd->args[1])
      .receive([&](std::string& text) { answer = std::move(text); },
               [&](caf::error& err) { answer = std::move(err); });
    return answer ? console_reply{*answer + "\n"} : fail(answer.error());
  }
  return {"command '" + cmd->name + "' has no handler\n"};
}

} // namespace stoker
