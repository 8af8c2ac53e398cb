#include "console/console_session.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>

#include "stoker/errors.hpp"
#include "config/option_table.hpp"
#include "console/console_commands.hpp"
#include "core/run_report.hpp"

namespace stoker {

namespace {

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
  if (!w.load.alive)
    return "down";
  if (w.load.draining)
    return "draining";
  if (w.overdue_ms > 0)
    return "stale report (" + std::to_string(w.overdue_ms) + " ms late)";
  if (w.load.mailbox_depth > 0 && w.load.outstanding_items > 0)
    return "queue of " + std::to_string(w.load.mailbox_depth);
  return "";
}

} // namespace

std::string format_nodes(const std::vector<node_row>& nodes,
                         const router_status& router) {
  std::vector<std::vector<std::string>> rows;
  for (auto& n : nodes) {
    auto heard = node_heard_ms_ago(n, router);
    bool trainer = n.role == role_kind::trainer;
    rows.push_back({n.name, to_string(n.role), n.host, std::to_string(n.cores),
                    trainer ? "-" : std::to_string(n.workers),
                    n.device.empty() ? "-" : n.device,
                    clock_time(n.joined_unix_s),
                    !heard      ? "-"
                    : *heard == 0 ? "< 1 ms ago"
                                  : human_duration_ns(*heard * 1000000)
                                      + " ago",
                    n.state});
  }
  return format_table({"node", "role", "host", "cores", "workers", "device",
                       "joined", "heartbeat", "state"},
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
  if (s.placement != "cpu") {
    char share[16];
    std::snprintf(share, sizeof share, "%.1f%%", 100.0 * s.gpu_share);
    out += "placement " + s.placement + ": GPU blur share " + share + ", "
           + std::to_string(s.batches_gpu_blur) + " batch(es) so far; "
           + s.placement_reason + "\n";
    if (!s.placement_last_change.empty())
      out += "last placement change: " + s.placement_last_change + "\n";
  }
  if (st.world > 1) {
    // Each rank's own window: a slow rank shows in its period and the
    // others' collective wait; a starving one in its data wait, which the
    // "step" column (period + data wait: a whole step as the rank lives
    // it) adds back, so it no longer looks the fastest.
    std::vector<std::vector<std::string>> ranks;
    const trainer_status* exposed = nullptr;
    auto ns = [](double ms) {
      return human_duration_ns(static_cast<uint64_t>(ms * 1e6));
    };
    for (auto& t : st.trainers) {
      if (!exposed || t.wait_ms > exposed->wait_ms)
        exposed = &t;
      ranks.push_back(
        {std::to_string(t.rank), t.node.empty() ? "-" : t.node,
         t.present ? std::to_string(t.window) : "-",
         std::to_string(t.in_flight), std::to_string(t.pending),
         ns(t.period_ms + t.wait_ms), ns(t.period_ms), ns(t.wait_ms),
         ns(t.collective_ms),
         t.window_last_change.empty() ? "-" : t.window_last_change});
    }
    out += format_table({"rank", "node", "window", "in flight", "pending",
                         "step", "period", "data wait", "collective",
                         "last change"},
                        ranks);
    if (exposed)
      out += "group's exposed data wait " + ns(exposed->wait_ms)
             + " per step (rank " + std::to_string(exposed->rank)
             + (exposed->node.empty() ? "" : ", " + exposed->node) + ")\n";
  }
  out += "leased " + std::to_string(s.batches_leased) + ", acked "
         + std::to_string(s.batches_acked) + ", re-leased "
         + std::to_string(s.batches_released) + ", hedged "
         + std::to_string(s.batches_hedged) + "\n";
  uint64_t total = 0;
  for (auto& w : st.workers)
    total += w.load.items_done;
  std::vector<std::vector<std::string>> rows;
  for (auto& ws : st.workers) {
    auto& w = ws.load;
    auto share = total > 0 ? 100.0 * static_cast<double>(w.items_done)
                               / static_cast<double>(total)
                           : 0.0;
    rows.push_back({w.name, w.host + (w.local ? " (trainer's)" : ""),
                    std::to_string(w.items_done), human_number(share) + "%",
                    std::to_string(w.outstanding_items),
                    std::to_string(w.mailbox_depth), human_number(w.rate_sps),
                    human_duration_ns(static_cast<uint64_t>(
                      ws.expected_delay_s * 1e9)),
                    idle_reason(ws)});
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

std::string format_stages(const std::vector<stage_entry>& stages) {
  if (stages.empty())
    return "no transform chain has run (the synthetic blur pipeline has "
           "none), or no worker answered\n";
  double total = 0;
  for (auto& t : stages)
    total += t.ms_per_sample;
  std::vector<std::vector<std::string>> rows;
  for (auto& t : stages)
    rows.push_back({t.stage, std::to_string(t.samples),
                    human_duration_ns(
                      static_cast<uint64_t>(t.ms_per_sample * 1e6)),
                    human_number(total > 0 ? 100.0 * t.ms_per_sample / total
                                           : 0.0)
                      + "%"});
  return format_table({"stage", "samples", "per sample", "share"}, rows);
}

std::string format_trainers(const std::vector<trainer_stats>& ts,
                            const router_status& st) {
  if (ts.size() == 1)
    return format_trainer(ts.front(), st);
  std::vector<std::vector<std::string>> rows;
  for (auto& t : ts) {
    double busy = static_cast<double>(t.step_ns);
    double wait = static_cast<double>(t.wait_ns);
    double coll = static_cast<double>(t.collective_ns);
    double total = std::max(1.0, busy + wait + coll);
    auto steps = std::max<uint64_t>(t.steps, 1);
    rows.push_back({std::to_string(t.rank), t.node.empty() ? "-" : t.node,
                    t.device, std::to_string(t.steps),
                    std::to_string(t.unique_samples),
                    human_duration_ns(t.step_ns / steps),
                    human_duration_ns(t.wait_ns / steps),
                    human_duration_ns(t.collective_ns / steps),
                    human_number(100.0 * wait / total) + "%",
                    human_number(100.0 * coll / total) + "%",
                    t.simulated ? "-" : human_number(t.last_loss)});
  }
  return "every rank steps together: a rank with a long data wait starves "
         "the group, the others show it as collective wait\n"
         + format_table({"rank", "node", "device", "steps", "samples",
                         "compute/step", "data wait/step", "collective/step",
                         "idle", "collective", "loss"},
                        rows);
}

std::string format_actors(const std::vector<actor_row>& rows,
                          const std::string& node) {
  std::vector<std::vector<std::string>> cells;
  for (auto& a : rows)
    if (node.empty() || a.node == node)
      cells.push_back({std::to_string(a.id), a.kind, a.node, a.mailbox,
                       std::to_string(a.processed), human_number(a.rate),
                       a.busy < 0 ? "-" : human_number(100.0 * a.busy) + "%"});
  return format_table({"id", "kind", "node", "mailbox", "processed",
                       "rate/s", "busy"},
                      cells);
}

console_session::console_session(caf::actor_system& sys,
                                 job_target target)
  : self_(sys), target_(std::move(target)) {
  // nop
}

std::vector<std::string> console_session::node_names() {
  std::vector<std::string> out;
  if (auto rows = nodes_now(self_, target_))
    for (auto& n : *rows)
      out.push_back(n.name);
  if (auto st = router_now(self_, target_))
    for (auto& w : st->workers)
      out.push_back(w.load.name);
  return out;
}

caf::expected<std::vector<trainer_stats>> console_session::trainers_now() {
  auto members = members_now(self_, target_);
  if (!members)
    return std::move(members.error());
  if (members->trainers.empty())
    return make_error(errc::run_failure, "no trainer has joined");
  std::vector<trainer_stats> out;
  for (auto& t : members->trainers) {
    auto s = ask_job<trainer_stats>(self_, t, stats_atom::value);
    if (!s)
      return std::move(s.error());
    out.push_back(std::move(*s));
  }
  std::sort(out.begin(), out.end(),
            [](auto& a, auto& b) { return a.rank < b.rank; });
  return out;
}

caf::expected<job_view> console_session::view() {
  return look_at_job(self_, target_);
}

caf::expected<std::string> console_session::stats_json() {
  auto now = view();
  if (!now)
    return std::move(now.error());
  if (now->trainers.empty())
    return make_error(errc::run_failure, "no trainer has joined (or none "
                                         "answered)");
  return to_json(make_report(now->router.summary, std::move(now->trainers),
                             now->workers));
}

caf::expected<std::vector<actor_row>> console_session::actors() {
  auto router = router_now(self_, target_);
  if (!router)
    return std::move(router.error());
  auto found = members_now(self_, target_);
  if (!found)
    return std::move(found.error());
  auto& members = *found;
  auto known = nodes_now(self_, target_);
  // The router (and membership actor) run on the head; in a local run, on
  // its node. The console has always shown the latter as "registry".
  std::string home = target_.membership || !known || known->empty()
                       ? "head"
                       : known->front().name;
  double wall_s = static_cast<double>(router->summary.wall_ns) * 1e-9;
  auto per_second = [&](uint64_t n) {
    return wall_s > 0 ? static_cast<double>(n) / wall_s : 0.0;
  };
  // A row of what is known of every actor; mailbox and busy where measured.
  auto row_of = [](uint64_t id, const char* kind, std::string node,
                   uint64_t processed) {
    actor_row row;
    row.id = id;
    row.kind = kind;
    row.node = std::move(node);
    row.mailbox = "-";
    row.processed = processed;
    return row;
  };
  std::vector<actor_row> rows;
  auto& leased = router->summary.batches_leased;
  rows.push_back(row_of(target_.router.id(), "router", home, leased));
  rows.back().rate = per_second(leased);
  if (target_.membership)
    rows.push_back(row_of(target_.membership.id(), "registry", "head",
                          members.nodes.size()));
  for (auto& w : members.workers) {
    auto answer = ask_job<worker_stats>(self_, w, stats_atom::value);
    if (!answer)
      continue; // lost: `router` says so
    auto& s = *answer;
    auto row = row_of(w.id(), "worker",
                      target_.membership ? s.name.substr(0, s.name.find('/'))
                                         : home,
                      s.batches);
    for (auto& ws : router->workers)
      if (ws.load.name == s.name)
        row.mailbox = std::to_string(ws.load.mailbox_depth);
    if (s.busy_ns > 0)
      row.rate = static_cast<double>(s.samples)
                 / (static_cast<double>(s.busy_ns) * 1e-9);
    if (s.alive_ns > 0)
      row.busy = static_cast<double>(s.busy_ns)
                 / static_cast<double>(s.alive_ns);
    rows.push_back(std::move(row));
  }
  std::string trainer_node = "-";
  if (known)
    for (auto& n : *known)
      if ((n.role == role_kind::trainer || n.role == role_kind::local)
          && n.state == "joined")
        trainer_node = n.name;
  for (auto& t : members.trainers) {
    auto answer = ask_job<trainer_stats>(self_, t, stats_atom::value);
    if (!answer)
      continue;
    auto& s = *answer;
    auto row = row_of(t.id(), "trainer",
                      s.node.empty() ? trainer_node : s.node, s.steps);
    row.rate = per_second(s.steps);
    double total = static_cast<double>(s.step_ns + s.wait_ns);
    if (total > 0)
      row.busy = static_cast<double>(s.step_ns) / total;
    rows.push_back(std::move(row));
  }
  return rows;
}

console_reply console_session::execute(std::string_view line) {
  auto cmd = parse_console_line(line);
  if (!cmd)
    return {describe(cmd.error()) + "\n"};
  auto fail = [](const caf::error& err) {
    return console_reply{"error: " + describe(err) + "\n"};
  };
  // A router's answer: its line, or its error.
  auto reply = [&](const caf::expected<std::string>& answer) {
    return answer ? console_reply{*answer + "\n"} : fail(answer.error());
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
    auto rows = nodes_now(self_, target_);
    if (!rows)
      return fail(rows.error());
    auto st = router_now(self_, target_);
    return st ? console_reply{format_nodes(*rows, *st)} : fail(st.error());
  }
  if (cmd->name == "actors") {
    auto rows = actors();
    return rows ? console_reply{format_actors(
             *rows, cmd->args.empty() ? std::string{} : cmd->args[0])}
                : fail(rows.error());
  }
  if (cmd->name == "router") {
    auto st = router_now(self_, target_);
    return st ? console_reply{format_router(*st)} : fail(st.error());
  }
  if (cmd->name == "trainer") {
    auto st = router_now(self_, target_);
    if (!st)
      return fail(st.error());
    auto t = trainers_now();
    return t ? console_reply{format_trainers(*t, *st)} : fail(t.error());
  }
  if (cmd->name == "stages") {
    auto now = view();
    if (!now)
      return fail(now.error());
    return {format_stages(make_report(now->router.summary,
                                      std::move(now->trainers), now->workers)
                            .stages)};
  }
  if (cmd->name == "stats") {
    auto json = stats_json();
    return json ? console_reply{*json} : fail(json.error());
  }
  if (auto verb = parse_enum<steer_verb>(cmd->name)) { // drain ... shutdown
    steer_command steer;
    steer.verb = *verb;
    steer.target = cmd->args.empty() ? std::string{} : cmd->args[0];
    return reply(ask_job<std::string>(self_, target_.router, steer));
  }
  if (cmd->name == "trace") { // trace start FILE | trace stop
    steer_command steer;
    steer.verb = cmd->args[0] == "start" ? steer_verb::trace_start
                                         : steer_verb::trace_stop;
    steer.target = cmd->args.size() > 1 ? cmd->args[1] : std::string{};
    return reply(ask_job<std::string>(self_, target_.router, steer));
  }
  if (cmd->name == "set") {
    const auto& key = cmd->args[0];
    const auto& value = cmd->args[1];
    if (key == "router.policy") {
      auto policy = parse_enum<routing_policy>(value);
      if (!policy)
        return fail(make_error(errc::invalid_config,
                               "router.policy = " + value + ": expected "
                                 + enum_choices<routing_policy>("")));
      return reply(ask_job<std::string>(self_, target_.router,
                                    policy_change{*policy}));
    }
    // router.window, checked as a config file's is: the option table's
    // range and words.
    auto parsed = caf::config_value::parse(value);
    run_config checked;
    if (auto err = find_option(key)->read(
          parsed ? *parsed : caf::config_value{value}, checked))
      return fail(std::move(err));
    return reply(ask_job<std::string>(
      self_, target_.router,
      window_change{static_cast<uint32_t>(checked.pipeline.router.window)}));
  }
  return {"command '" + cmd->name + "' has no handler\n"};
}

} // namespace stoker
