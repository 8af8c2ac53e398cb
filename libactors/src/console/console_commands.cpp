#include "console/console_commands.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "stoker/errors.hpp"

namespace stoker {

const std::vector<command_spec>& console_command_specs() {
  static const std::vector<command_spec> specs = {
    {"help", 0, 1, "help [COMMAND]", "list the commands, or explain one"},
    {"nodes", 0, 0, "nodes",
     "every node: name, role, host, cores, workers, device, joined, last "
     "heartbeat, state"},
    {"actors", 0, 1, "actors [NODE]",
     "every actor (or NODE's): id, kind, node, mailbox, processed, rate, "
     "busy"},
    {"router", 0, 0, "router",
     "policy, window, batches in flight, and per worker its share, "
     "expected delay and why it gets no work"},
    {"trainer", 0, 0, "trainer",
     "step, time per step, throughput, accelerator idle, loss, device"},
    {"set", 2, 2, "set router.policy POLICY | set router.window N",
     "change the routing policy or the in-flight window of the running job"},
    {"drain", 1, 1, "drain NODE|WORKER",
     "give NODE's workers (or one WORKER) no new work; they finish what "
     "they hold"},
    {"undrain", 1, 1, "undrain NODE|WORKER",
     "give NODE's workers (or one WORKER) work again"},
    {"pause", 0, 0, "pause", "lease no new batches (in-flight ones finish)"},
    {"resume", 0, 0, "resume", "lease again after pause"},
    {"trace", 1, 2, "trace start FILE | trace stop",
     "record a timeline (Chrome trace JSON, for Perfetto): a span per "
     "batch per worker, the trainer's steps and waits"},
    {"stages", 0, 0, "stages",
     "time per sample in each stage of the workers' transform chains, C++ "
     "entries and Python stages side by side"},
    {"stats", 1, 1, "stats --json", "the live run report as JSON"},
    {"quit", 0, 0, "quit", "detach this console; the job goes on"},
    {"shutdown", 0, 0, "shutdown",
     "end the run cleanly: no new leases, wait for the batches in flight, "
     "report, exit 0"},
  };
  return specs;
}

namespace {

const command_spec* find_spec(std::string_view name) {
  for (auto& spec : console_command_specs())
    if (spec.name == name)
      return &spec;
  return nullptr;
}

caf::error usage_error(const command_spec& spec, const std::string& why) {
  return make_error(errc::invalid_config,
                    why + "; usage: " + std::string{spec.usage});
}

} // namespace

caf::expected<console_command> parse_console_line(std::string_view line) {
  console_command cmd;
  std::vector<std::string> words;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t'
                               || line[i] == '\r' || line[i] == '\n'))
      ++i;
    size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t'
           && line[i] != '\r' && line[i] != '\n')
      ++i;
    if (i > start)
      words.emplace_back(line.substr(start, i - start));
  }
  if (words.empty())
    return cmd;
  cmd.name = words.front();
  cmd.args.assign(words.begin() + 1, words.end());
  auto spec = find_spec(cmd.name);
  if (spec == nullptr)
    return make_error(errc::invalid_config,
                      "unknown command '" + cmd.name
                        + "'; type help for the list");
  if (cmd.args.size() < spec->min_args || cmd.args.size() > spec->max_args)
    return usage_error(*spec, std::string{spec->name} + " takes "
                                + (spec->min_args == spec->max_args
                                     ? std::to_string(spec->min_args)
                                     : std::to_string(spec->min_args) + " to "
                                         + std::to_string(spec->max_args))
                                + " argument(s), got "
                                + std::to_string(cmd.args.size()));
  if (cmd.name == "stats" && cmd.args[0] != "--json")
    return usage_error(*spec, "unknown option '" + cmd.args[0] + "'");
  if (cmd.name == "trace"
      && !(cmd.args[0] == "start" && cmd.args.size() == 2)
      && !(cmd.args[0] == "stop" && cmd.args.size() == 1))
    return usage_error(*spec, "trace " + cmd.args[0] + " with "
                                + std::to_string(cmd.args.size() - 1)
                                + " more argument(s)");
  if (cmd.name == "set" && cmd.args[0] != "router.policy"
      && cmd.args[0] != "router.window")
    return usage_error(*spec, "cannot set '" + cmd.args[0] + "'");
  return cmd;
}

caf::expected<std::string> console_help(std::string_view command) {
  if (!command.empty()) {
    auto spec = find_spec(command);
    if (spec == nullptr)
      return make_error(errc::invalid_config,
                        "no command '" + std::string{command}
                          + "'; type help for the list");
    return std::string{spec->usage} + "\n  " + std::string{spec->help} + "\n";
  }
  std::vector<std::vector<std::string>> rows;
  for (auto& spec : console_command_specs())
    rows.push_back({std::string{spec.usage}, std::string{spec.help}});
  return format_table({"command", "what"}, rows);
}

std::vector<std::string> complete_command(std::string_view prefix) {
  std::vector<std::string> out;
  for (auto& spec : console_command_specs())
    if (spec.name.substr(0, prefix.size()) == prefix)
      out.emplace_back(spec.name);
  return out;
}

namespace {

std::vector<std::string> starting_with(std::vector<std::string> words,
                                       std::string_view prefix) {
  words.erase(std::remove_if(words.begin(), words.end(),
                             [&](const std::string& w) {
                               return w.compare(0, prefix.size(), prefix)
                                      != 0;
                             }),
              words.end());
  return words;
}

// Words the user finished, then the one under the cursor (maybe empty).
std::vector<std::string> split_for_completion(std::string_view line) {
  std::vector<std::string> words{""};
  for (auto c : line) {
    if (c == ' ' || c == '\t') {
      if (!words.back().empty())
        words.emplace_back();
    } else {
      words.back() += c;
    }
  }
  return words;
}

} // namespace

console_completion complete_console_line(
  std::string_view before_cursor,
  const std::function<std::vector<std::string>()>& node_names) {
  auto words = split_for_completion(before_cursor);
  console_completion out;
  out.word = words.back();
  auto& w = out.word;
  if (words.size() == 1) {
    out.matches = complete_command(w);
    return out;
  }
  auto& cmd = words.front();
  auto at = words.size() - 1; // index of the word being completed
  std::vector<std::string> options;
  if (cmd == "help" && at == 1)
    options = complete_command("");
  else if (cmd == "set" && at == 1)
    options = {"router.policy", "router.window"};
  else if (cmd == "set" && at == 2 && words[1] == "router.policy")
    options = {"least-loaded", "round-robin", "local-only", "power-of-two"};
  else if (cmd == "trace" && at == 1)
    options = {"start", "stop"};
  else if (cmd == "stats" && at == 1)
    options = {"--json"};
  else if ((cmd == "drain" || cmd == "undrain" || cmd == "actors") && at == 1)
    options = node_names();
  out.matches = starting_with(std::move(options), w);
  return out;
}

std::string common_prefix(const std::vector<std::string>& words) {
  if (words.empty())
    return {};
  std::string prefix = words.front();
  for (auto& w : words) {
    size_t n = 0;
    while (n < prefix.size() && n < w.size() && prefix[n] == w[n])
      ++n;
    prefix.resize(n);
  }
  return prefix;
}

namespace {

bool looks_numeric(const std::string& cell) {
  if (cell.empty())
    return false;
  auto c = cell.front();
  return (c >= '0' && c <= '9') || ((c == '-' || c == '.') && cell.size() > 1);
}

} // namespace

std::string format_table(const std::vector<std::string>& headers,
                         const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width(headers.size());
  for (size_t c = 0; c < headers.size(); ++c)
    width[c] = headers[c].size();
  for (auto& row : rows)
    for (size_t c = 0; c < row.size() && c < width.size(); ++c)
      width[c] = std::max(width[c], row[c].size());
  auto line = [&](const std::vector<std::string>& cells, bool header) {
    std::string out;
    for (size_t c = 0; c < width.size(); ++c) {
      auto cell = c < cells.size() ? cells[c] : std::string{};
      auto pad = std::string(width[c] - cell.size(), ' ');
      bool right = !header && looks_numeric(cell);
      out += right ? pad + cell : cell + pad;
      if (c + 1 < width.size())
        out += "  ";
    }
    while (!out.empty() && out.back() == ' ')
      out.pop_back();
    return out + "\n";
  };
  std::string out = line(headers, true);
  for (auto& row : rows)
    out += line(row, false);
  return out;
}

std::string human_number(double value) {
  char text[32];
  double a = std::fabs(value);
  if (a >= 1e9)
    std::snprintf(text, sizeof(text), "%.3gG", value / 1e9);
  else if (a >= 1e6)
    std::snprintf(text, sizeof(text), "%.3gM", value / 1e6);
  else if (a >= 1e4)
    std::snprintf(text, sizeof(text), "%.3gk", value / 1e3);
  else if (a >= 100 || a == std::floor(a))
    std::snprintf(text, sizeof(text), "%.0f", value);
  else
    std::snprintf(text, sizeof(text), "%.3g", value);
  return text;
}

std::string human_duration_ns(uint64_t ns) {
  char text[32];
  double v = static_cast<double>(ns);
  if (ns < 1000)
    std::snprintf(text, sizeof(text), "%llu ns",
                  static_cast<unsigned long long>(ns));
  else if (ns < 1000000)
    std::snprintf(text, sizeof(text), "%.0f us", v / 1e3);
  else if (ns < 1000000000)
    std::snprintf(text, sizeof(text), "%.1f ms", v / 1e6);
  else
    std::snprintf(text, sizeof(text), "%.2f s", v / 1e9);
  return text;
}

} // namespace stoker
