#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <vector>

#include "stoker/router_status.hpp"
#include "stoker/errors.hpp"
#include "console/console_commands.hpp"
#include "console/console_server.hpp"
#include "console/console_session.hpp"

#include <boost/property_tree/json_parser.hpp>
#include <boost/property_tree/ptree.hpp>

#include "support/node_processes.hpp"

using namespace stoker;
using namespace stoker_test;

namespace {

// The cells of a table line (format_table): columns apart by 2+ spaces.
std::vector<std::string> cells_of(const std::string& line) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < line.size()) {
    auto gap = line.find("  ", at);
    auto cell = line.substr(at, gap == std::string::npos ? std::string::npos
                                                         : gap - at);
    if (!cell.empty())
      out.push_back(cell);
    if (gap == std::string::npos)
      break;
    at = line.find_first_not_of(' ', gap);
    if (at == std::string::npos)
      break;
  }
  return out;
}

// The cell in column `header` of the first table row starting with `row`
// ("" if there is none).
std::string table_cell(const std::string& text, const std::string& row,
                       const std::string& header) {
  std::istringstream in{text};
  std::string line;
  std::vector<std::string> headers;
  while (std::getline(in, line)) {
    auto cells = cells_of(line);
    auto col = std::find(cells.begin(), cells.end(), header);
    if (col != cells.end() && headers.empty()) {
      headers = cells;
      continue;
    }
    if (headers.empty() || cells.size() != headers.size())
      continue;
    if (std::find(cells.begin(), cells.end(), row) == cells.end())
      continue;
    auto i = std::find(headers.begin(), headers.end(), header)
             - headers.begin();
    return cells[static_cast<size_t>(i)];
  }
  return "";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string error_of(std::string_view line) {
  auto cmd = parse_console_line(line);
  BOOST_REQUIRE(!cmd);
  return describe(cmd.error());
}


// A line-based console client, as `nc` would be.
struct console_client {
  int fd = -1;

  explicit console_client(uint16_t port) {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(port);
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    BOOST_REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to))
                  == 0);
    timeval limit{10, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
  }

  ~console_client() { ::close(fd); }

  // Sends a line (none if empty), returns what came back up to the next
  // prompt or the goodbye.
  std::string ask(const std::string& line) {
    if (!line.empty())
      ::send(fd, (line + "\n").data(), line.size() + 1, MSG_NOSIGNAL);
    std::string out;
    char buf[4096];
    while (out.size() < 2 || out.compare(out.size() - 2, 2, "> ") != 0) {
      auto n = ::recv(fd, buf, sizeof(buf), 0);
      if (n <= 0)
        break;
      out.append(buf, static_cast<size_t>(n));
      if (out.find("bye") != std::string::npos)
        break;
    }
    BOOST_TEST_MESSAGE("> " << line << "\n" << out);
    return out;
  }
};

} // namespace

BOOST_AUTO_TEST_SUITE(console)

BOOST_AUTO_TEST_CASE(lines_split_into_a_known_command_and_its_arguments) {
  auto cmd = parse_console_line("  set\trouter.policy   round-robin \r\n");
  BOOST_REQUIRE(cmd);
  BOOST_TEST(cmd->name == "set");
  BOOST_TEST(cmd->args
             == (std::vector<std::string>{"router.policy", "round-robin"}));
  auto empty = parse_console_line("   ");
  BOOST_REQUIRE(empty);
  BOOST_TEST(empty->name.empty());
}

BOOST_AUTO_TEST_CASE(bad_lines_answer_with_the_usage) {
  BOOST_TEST(contains(error_of("dance"), "unknown command 'dance'"));
  BOOST_TEST(contains(error_of("set router.policy"),
                      "usage: set router.policy POLICY"));
  BOOST_TEST(contains(error_of("set cluster.port 9"), "cannot set"));
  BOOST_TEST(contains(error_of("stats --xml"), "usage: stats --json"));
  BOOST_TEST(contains(error_of("nodes extra"), "takes 0 argument(s), got 1"));
}

BOOST_AUTO_TEST_CASE(help_lists_every_command_and_explains_one) {
  auto all = console_help();
  BOOST_REQUIRE(all);
  for (auto& spec : console_command_specs())
    BOOST_TEST(contains(*all, std::string{spec.usage}), spec.name);
  auto one = console_help("router");
  BOOST_REQUIRE(one);
  BOOST_TEST(contains(*one, "expected delay"));
  BOOST_TEST(!console_help("dance"));
  BOOST_TEST(complete_command("s")
             == (std::vector<std::string>{"set", "stages", "stats",
                                          "shutdown"}));
  BOOST_TEST(complete_command("a") == (std::vector<std::string>{"actors"}));
}

BOOST_AUTO_TEST_CASE(tab_completes_commands_then_their_arguments) {
  int asked = 0;
  auto names = [&] {
    ++asked;
    return std::vector<std::string>{"w-a", "w-b", "t-0", "w-a/0"};
  };
  auto done = [&](std::string_view line) {
    return complete_console_line(line, names).matches;
  };
  using words = std::vector<std::string>;
  BOOST_TEST(done("rou") == words{"router"});
  BOOST_TEST(done("") .size() == console_command_specs().size());
  BOOST_TEST(done("help tr") == (words{"trainer", "trace"}));
  BOOST_TEST(done("set ") == (words{"router.policy", "router.window"}));
  BOOST_TEST(done("set router.policy p") == words{"power-of-two"});
  BOOST_TEST(done("set router.window ").empty());
  BOOST_TEST(done("trace s") == (words{"start", "stop"}));
  BOOST_TEST(done("stats ") == words{"--json"});
  BOOST_TEST(done("nodes x").empty());
  BOOST_TEST(asked == 0); // node names only where a node is wanted
  BOOST_TEST(done("drain w-") == (words{"w-a", "w-b", "w-a/0"}));
  BOOST_TEST(done("actors t") == words{"t-0"});
  BOOST_TEST(asked == 2);
  auto partial = complete_console_line("set  router.p", names);
  BOOST_TEST(partial.word == "router.p");
  BOOST_TEST(common_prefix({"w-a", "w-b", "w-a/0"}) == "w-");
  BOOST_TEST(common_prefix({"stats"}) == "stats");
  BOOST_TEST(common_prefix({}).empty());
}

BOOST_AUTO_TEST_CASE(nodes_show_when_the_router_last_heard_from_each) {
  router_status st;
  worker_status w;
  w.load.name = "w-a/0";
  w.heard_ms_ago = 40;
  st.workers.push_back(w);
  w.load.name = "w-a/1";
  w.heard_ms_ago = 15; // the freshest of w-a's workers counts
  st.workers.push_back(w);
  w.load.name = "w-b/0";
  w.heard_ms_ago = 7000;
  w.load.alive = false; // lost: not a heartbeat
  st.workers.push_back(w);
  st.trainer_heard_ms_ago = 230;
  auto row = [](std::string name, role_kind role, std::string state) {
    node_row r;
    r.name = std::move(name);
    r.role = role;
    r.host = "vm";
    r.cores = 4;
    r.workers = role == role_kind::trainer ? 0 : 2;
    r.device = role == role_kind::worker ? "" : "sim";
    r.state = std::move(state);
    return r;
  };
  auto a = row("w-a", role_kind::worker, "joined");
  auto b = row("w-b", role_kind::worker, "joined");
  auto t = row("t-0", role_kind::trainer, "joined");
  auto gone = row("w-c", role_kind::worker, "left");
  BOOST_TEST(node_heard_ms_ago(a, st).value_or(0) == 15u);
  BOOST_TEST(!node_heard_ms_ago(b, st).has_value());
  BOOST_TEST(node_heard_ms_ago(t, st).value_or(0) == 230u);
  BOOST_TEST(!node_heard_ms_ago(gone, st).has_value());
  auto local = row("local-1", role_kind::local, "joined");
  BOOST_TEST(node_heard_ms_ago(local, st).value_or(0) == 15u);
  st.trainer_heard_ms_ago = -1; // no trainer yet
  BOOST_TEST(!node_heard_ms_ago(t, st).has_value());
  auto text = format_nodes({a, t, gone}, st);
  BOOST_TEST(contains(text, "heartbeat"), text);
  BOOST_TEST(contains(text, "15.0 ms ago"), text);
  BOOST_TEST(contains(text, "left"), text);
}

BOOST_AUTO_TEST_CASE(tables_align_columns_and_right_align_numbers) {
  auto t = format_table({"name", "n"}, {{"a", "5"}, {"longer", "1234"}});
  BOOST_TEST(t == "name    n\n"
                  "a          5\n"
                  "longer  1234\n");
}

BOOST_AUTO_TEST_CASE(numbers_read_like_a_person_writes_them) {
  BOOST_TEST(human_number(950) == "950");
  BOOST_TEST(human_number(1234567) == "1.23M");
  BOOST_TEST(human_number(0.5) == "0.5");
  BOOST_TEST(human_number(12345) == "12.3k");
  BOOST_TEST(human_bytes(512) == "512 B");
  BOOST_TEST(human_bytes(1536) == "1.5 KiB");
  BOOST_TEST(human_bytes(38535168) == "36.8 MiB");
  BOOST_TEST(human_duration_ns(850000) == "850 us");
  BOOST_TEST(human_duration_ns(12345678) == "12.3 ms");
  BOOST_TEST(human_duration_ns(4200000000) == "4.20 s");
}

BOOST_AUTO_TEST_CASE(router_view_says_why_a_worker_gets_no_work) {
  router_status st;
  st.summary.policy = "least-loaded";
  st.summary.window = 8;
  st.summary.window_max = 27;
  st.in_flight = 3;
  st.batch_bytes = 1 << 20;
  st.trainer_present = true;
  worker_status up;
  up.load.name = "a/0";
  up.load.host = "gpu";
  up.load.local = true;
  up.load.items_done = 30;
  up.load.rate_sps = 550;
  worker_status down = up;
  down.load.name = "b/0";
  down.load.alive = false;
  down.load.local = false;
  down.load.items_done = 10;
  worker_status late = up;
  late.load.name = "c/0";
  late.overdue_ms = 420;
  late.load.items_done = 0;
  st.workers = {up, down, late};
  auto text = format_router(st);
  BOOST_TEST(contains(text, "in flight 3 batch(es) (3.0 MiB)"), text);
  BOOST_TEST(contains(text, "gpu (trainer's)"), text);
  BOOST_TEST(contains(text, "75%"), text); // a/0: 30 of 40 batches
  BOOST_TEST(contains(text, "down"), text);
  BOOST_TEST(contains(text, "stale report (420 ms late)"), text);
}

BOOST_AUTO_TEST_CASE(a_group_shows_each_ranks_window_and_wait) {
  router_status st;
  st.summary.policy = "least-loaded";
  st.trainer_present = true;
  st.world = 2;
  trainer_status fast;
  fast.rank = 0;
  fast.node = "t-a";
  fast.present = true;
  fast.window = 6;
  fast.in_flight = 5;
  fast.period_ms = 30;
  fast.collective_ms = 20;
  trainer_status slow = fast;
  slow.rank = 1;
  slow.node = "t-b";
  slow.window = 9;
  slow.collective_ms = 0.5;
  // t-b starves: its period is short, its data wait long.
  slow.period_ms = 10.5;
  slow.wait_ms = 19.5;
  st.trainers = {fast, slow};
  auto text = format_router(st);
  BOOST_TEST(contains(text, "t-a"), text);
  BOOST_TEST(contains(text, "t-b"), text);
  BOOST_TEST(contains(text, "collective"), text);
  // The step column gives it back its data wait: 30 ms, as t-a's (its
  // period alone, 10.5 ms, would show it as the fastest).
  BOOST_TEST(table_cell(text, "t-b", "step") == human_duration_ns(30'000'000),
             text);
  BOOST_TEST(table_cell(text, "t-a", "step") == human_duration_ns(30'000'000),
             text);
  BOOST_TEST(table_cell(text, "t-b", "period")
               == human_duration_ns(10'500'000),
             text);
  BOOST_TEST(contains(text, "group's exposed data wait 19.5 ms per step "
                            "(rank 1, t-b)"),
             text);
  trainer_stats a;
  a.rank = 0;
  a.node = "t-a";
  a.device = "sim";
  a.simulated = true;
  a.steps = 10;
  a.step_ns = 100'000'000;
  a.collective_ns = 200'000'000;
  trainer_stats b = a;
  b.rank = 1;
  b.node = "t-b";
  b.step_ns = 300'000'000;
  b.collective_ns = 0;
  auto ranks = format_trainers({a, b}, st);
  BOOST_TEST(contains(ranks, "t-a"), ranks);
  BOOST_TEST(contains(ranks, "t-b"), ranks);
  BOOST_TEST(contains(ranks, "66.7%"), ranks); // t-a waits 200 of 300 ms
  // One rank: the one trainer's view, as before.
  BOOST_TEST(contains(format_trainers({a}, st), "time per step"));
}

BOOST_AUTO_TEST_CASE(trace_takes_start_file_or_stop) {
  BOOST_TEST(contains(error_of("trace start"), "usage: trace start FILE"));
  BOOST_TEST(contains(error_of("trace stop now"), "usage: trace start FILE"));
  BOOST_TEST(contains(error_of("trace rewind x"), "usage"));
  BOOST_TEST(static_cast<bool>(parse_console_line("trace start /tmp/t.json")));
}

BOOST_AUTO_TEST_CASE(stages_show_time_per_sample_and_share_of_the_chain) {
  std::vector<stage_entry> stages{{"decode + random-resized-crop(224)", 96,
                                   0.5},
                                  {"python(aug:wide)", 96, 1.5}};
  auto text = format_stages(stages);
  BOOST_TEST(table_cell(text, "python(aug:wide)", "per sample")
               == human_duration_ns(1'500'000),
             text);
  BOOST_TEST(table_cell(text, "python(aug:wide)", "share") == "75%", text);
  BOOST_TEST(table_cell(text, "decode + random-resized-crop(224)", "samples")
               == "96",
             text);
  BOOST_TEST(contains(format_stages({}), "no transform chain has run"));
}

BOOST_AUTO_TEST_CASE(actors_table_filters_by_node) {
  std::vector<actor_row> rows{{7, "worker", "cpu", "2", 40, 550.0, 0.9},
                              {9, "trainer", "gpu", "-", 12, 3.5, -1.0}};
  auto all = format_actors(rows, "");
  BOOST_TEST(contains(all, "worker"));
  BOOST_TEST(contains(all, "90%"));
  BOOST_TEST(contains(all, "trainer"));
  auto cpu = format_actors(rows, "cpu");
  BOOST_TEST(contains(cpu, "worker"));
  BOOST_TEST(!contains(cpu, "trainer"));
}

BOOST_AUTO_TEST_CASE(a_console_beyond_loopback_needs_a_token) {
  BOOST_TEST(is_loopback("127.0.0.1"));
  BOOST_TEST(is_loopback("localhost"));
  BOOST_TEST(is_loopback("::1"));
  BOOST_TEST(!is_loopback("0.0.0.0"));
  BOOST_TEST(!is_loopback("10.1.2.3"));
}

BOOST_AUTO_TEST_CASE(the_tcp_console_inspects_and_steers_a_running_head) {
  auto report = tmp_path("console.json");
  auto console_port = free_port();
  auto head_node = start_head(
    "console",
    with_small({"--console.port=" + std::to_string(console_port),
                "--cluster.nodes=[\"t-0:trainer\", \"w-a:worker:1\"]",
                "--pipeline.dataset-size=6400", "--pipeline.batch-size=16",
                "--trainer.sim-step-ms=10", "--report=" + report}));
  auto& head = head_node.proc;
  console_client console{console_port};
  auto ask = [&](const std::string& line) { return console.ask(line); };
  auto has = [](const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
  };
  BOOST_TEST(has(ask(""), "stoker console"));
  auto trainer = start_member(head_node.at, "console", "trainer", "t-0",
                              with_small({}));
  auto worker = start_member(head_node.at, "console", "worker", "w-a");
  BOOST_REQUIRE(wait_for_text(head.log, "running", 30s));
  auto nodes = ask("nodes");
  BOOST_TEST(has(nodes, "t-0"), nodes);
  BOOST_TEST(has(nodes, "w-a"), nodes);
  BOOST_TEST(has(nodes, "joined"), nodes);
  BOOST_TEST(has(ask("router"), "policy least-loaded"));
  BOOST_TEST(has(ask("set router.policy round-robin"),
                 "router.policy is now round-robin"));
  BOOST_TEST(has(ask("router"), "policy round-robin"));
  BOOST_TEST(has(ask("set router.window 0"),
                 "router.window = 0: expected an integer from 1 to 100000"));
  BOOST_TEST(has(ask("set router.window 2.5"),
                 "expected an integer from 1 to 100000"));
  BOOST_TEST(has(ask("set router.policy fastest"), "expected least-loaded"));
  BOOST_TEST(has(ask("trainer"), "[simulated accelerator]"));
  auto actors = ask("actors");
  for (auto kind : {"router", "registry", "worker", "trainer"})
    BOOST_TEST(has(actors, kind), kind << " in\n" << actors);
  auto of_w_a = ask("actors w-a");
  BOOST_TEST(has(of_w_a, "worker"), of_w_a);
  BOOST_TEST(!has(of_w_a, "trainer"), of_w_a);
  BOOST_TEST(has(ask("stats --json"), "\"samples_delivered\":"));
  BOOST_TEST(has(ask("dance"), "unknown command 'dance'"));
  BOOST_TEST(has(ask("help set"), "set router.policy POLICY"));
  BOOST_TEST(has(ask("pause"), "paused: no new leases"));
  BOOST_TEST(has(ask("router"), "PAUSED"));
  BOOST_TEST(has(ask("resume"), "resumed"));
  BOOST_TEST(has(ask("drain nobody"), "no live worker on node 'nobody'"));
  BOOST_TEST(has(ask("drain w-a/1"), "draining worker 'w-a/1'"));
  BOOST_TEST(has(ask("drain w-a"), "draining 2 worker(s) of node 'w-a'"));
  BOOST_TEST(has(ask("router"), "draining"));
  BOOST_TEST(has(ask("undrain w-a"), "undrained 2 worker(s)"));
  auto trace_file = tmp_path("console-trace.json");
  BOOST_TEST(has(ask("trace stop"), "no trace is being recorded"));
  BOOST_TEST(has(ask("trace start " + trace_file), "recording a trace"));
  std::this_thread::sleep_for(500ms);
  BOOST_TEST(has(ask("trace stop"), "span(s) written to " + trace_file));
  boost::property_tree::ptree trace;
  BOOST_REQUIRE_NO_THROW(boost::property_tree::read_json(trace_file, trace));
  std::set<std::string> tracks;
  for (auto& [key, e] : trace.get_child("traceEvents"))
    if (e.get<std::string>("ph") == "M")
      tracks.insert(e.get<std::string>("args.name"));
  BOOST_TEST(tracks.count("trainer") == 1u);
  BOOST_TEST(tracks.count("w-a/0") + tracks.count("w-a/1") >= 1u);
  std::remove(trace_file.c_str());
  BOOST_TEST(has(ask("quit"), "bye"));
  BOOST_TEST(wait_exit(head, 60s) == 0, read_file(head.log));
  BOOST_TEST(wait_exit(trainer, 20s) == 0);
  BOOST_TEST(wait_exit(worker, 20s) == 0);
  auto json = read_file(report);
  BOOST_TEST(json.find("\"policy\": \"round-robin\"") != std::string::npos,
             json);
  BOOST_TEST(json.find("\"missing\": 0,") != std::string::npos);
  std::remove(report.c_str());
}

BOOST_AUTO_TEST_CASE(shutdown_from_the_console_ends_the_run_cleanly) {
  auto report = tmp_path("stop.json");
  auto console_port = free_port();
  auto head_node = start_head(
    "stop",
    with_small({"--console.port=" + std::to_string(console_port),
                "--cluster.nodes=[\"t-0:trainer\", \"w-a:worker:1\"]",
                "--pipeline.dataset-size=64000", "--pipeline.batch-size=16",
                "--trainer.sim-step-ms=10", "--report=" + report}));
  auto& head = head_node.proc;
  auto trainer = start_member(head_node.at, "stop", "trainer", "t-0",
                              with_small({}));
  auto worker = start_member(head_node.at, "stop", "worker", "w-a");
  BOOST_REQUIRE(wait_for_text(head.log, "running", 30s));
  console_client console{console_port};
  console.ask("");
  BOOST_TEST(console.ask("shutdown").find("stopping: no new leases")
             != std::string::npos);
  BOOST_TEST(wait_exit(head, 60s) == 0, read_file(head.log));
  BOOST_TEST(wait_exit(trainer, 20s) == 0);
  BOOST_TEST(wait_exit(worker, 20s) == 0);
  BOOST_TEST(read_file(head.log).find("run stopped early (shutdown from the "
                                      "console)")
             != std::string::npos);
  auto json = read_file(report);
  BOOST_TEST(json.find("\"stopped_by\": \"shutdown from the console\"")
               != std::string::npos,
             json);
  BOOST_TEST(json.find("\"duplicates\": 0,") != std::string::npos);
  BOOST_TEST(json.find("\"missing\": 0,") == std::string::npos); // early
  std::remove(report.c_str());
}

BOOST_AUTO_TEST_CASE(the_terminal_console_edits_completes_and_steers_a_run) {
  auto report = tmp_path("pty.json");
  pty_child term;
  start_on_pty(term, STOKER_NODE_BINARY,
               with_small({"--console", "--pipeline.dataset-size=64000",
                           "--pipeline.batch-size=16",
                           "--trainer.sim-step-ms=10",
                           "--trainer.log-every=1000000",
                           "--report=" + report}));
  BOOST_REQUIRE(!term.expect("stoker> ").empty());
  term.type("nod\t\r"); // completes to `nodes`
  auto nodes = term.expect("stoker> ");
  BOOST_TEST(contains(nodes, "heartbeat"), nodes);
  BOOST_TEST(contains(nodes, "local"), nodes);
  BOOST_TEST(contains(nodes, " ago"), nodes);
  term.type("set router.p\tro\t\r"); // two completions in one line
  BOOST_TEST(!term.expect("router.policy is now round-robin").empty());
  term.type("trainer\r");
  BOOST_TEST(!term.expect("[simulated accelerator]").empty());
  term.type("router\r");
  BOOST_TEST(!term.expect("policy round-robin").empty());
  term.type("\x1b[A\r"); // up arrow: `router` again, from the history
  BOOST_TEST(!term.expect("policy round-robin").empty());
  term.type("bogus 1 2\r");
  BOOST_TEST(!term.expect("unknown command 'bogus'").empty());
  term.type("drain wor\t0\r"); // completes to worker-, then worker-0
  BOOST_TEST(!term.expect("draining worker 'worker-0'").empty());
  term.type("router\r");
  BOOST_TEST(!term.expect("draining").empty());
  term.type("shutdown\r");
  BOOST_TEST(!term.expect("stopping: no new leases").empty());
  BOOST_TEST(!term.expect("run stopped early (shutdown from the console)",
                          60s)
                .empty());
  BOOST_TEST(wait_exit(term.proc, 30s) == 0, term.seen);
  auto json = read_file(report);
  BOOST_TEST(contains(json, "\"policy\": \"round-robin\""), json);
  BOOST_TEST(contains(json, "\"duplicates\": 0,"), json);
  std::remove(report.c_str());
}

BOOST_AUTO_TEST_CASE(the_heads_terminal_console_detaches_and_the_run_goes_on) {
  auto port_file = tmp_path("pty-head.port");
  std::remove(port_file.c_str());
  pty_child head;
  start_on_pty(head, STOKER_NODE_BINARY,
               with_small({"--role=head", "--console", "--cluster.port=0",
                           "--cluster.port-file=" + port_file,
                           "--cluster.nodes=[\"t-0:trainer\", "
                           "\"w-a:worker:1\"]",
                           "--pipeline.dataset-size=3200",
                           "--pipeline.batch-size=16",
                           "--trainer.sim-step-ms=10"}));
  BOOST_REQUIRE(!head.expect("stoker> ").empty());
  BOOST_REQUIRE(wait_for_text(port_file, "\n", 20s));
  auto at = "--cluster.head=127.0.0.1:"
            + std::to_string(std::stoi(read_file(port_file)));
  auto trainer = start_member(at, "pty", "trainer", "t-0", with_small({}));
  auto worker = start_member(at, "pty", "worker", "w-a");
  BOOST_REQUIRE(!head.expect("head: 2 node(s) joined, running").empty());
  std::this_thread::sleep_for(300ms); // a few reports and acks
  head.type("nodes\r");
  auto nodes = head.expect("stoker> ");
  std::istringstream lines{nodes};
  int heard = 0;
  for (std::string line; std::getline(lines, line);)
    if ((contains(line, "t-0") || contains(line, "w-a"))
        && contains(line, "joined"))
      heard += contains(line, " ago") ? 1 : 0;
  BOOST_TEST(heard == 2, nodes);
  head.type("quit\r");
  BOOST_TEST(!head.expect("bye; the job goes on").empty());
  BOOST_TEST(!head.expect("missing 0, duplicates 0", 60s).empty());
  BOOST_TEST(wait_exit(head.proc, 30s) == 0, head.seen);
  BOOST_TEST(wait_exit(trainer, 20s) == 0);
  BOOST_TEST(wait_exit(worker, 20s) == 0);
  std::remove(port_file.c_str());
}

BOOST_AUTO_TEST_CASE(a_console_whose_input_ends_detaches_and_the_run_goes_on) {
  auto log = tmp_path("stdin-end.log");
  auto run = start_node(with_small({"--console", "--pipeline.dataset-size=640",
                                    "--pipeline.batch-size=16",
                                    "--trainer.sim-step-ms=5"}),
                        log); // standard input is /dev/null
  BOOST_TEST(wait_exit(run, 60s) == 0, read_file(log));
  auto text = read_file(log);
  BOOST_TEST(contains(text, "end of input; detached, the job goes on"), text);
  BOOST_TEST(contains(text, "missing 0, duplicates 0"), text);
}

BOOST_AUTO_TEST_SUITE_END()
