#include "node/node_config.hpp"

#include <fstream>
#include <sstream>

#include <caf/config_option_adder.hpp>
#include <caf/io/middleman.hpp>

#include "stoker/errors.hpp"
#include "stoker/messages.hpp"
#include "node/default_config.hpp"

namespace stoker {

namespace {

// CAF's own sections, which the file may set too (scheduler, logger, ...).
bool is_caf_section(const std::string& name) {
  for (auto s : {"stream", "scheduler", "work-stealing", "logger",
                 "middleman", "openssl"})
    if (name == s)
      return true;
  return false;
}

std::string expected_text(caf::string_view type_name) {
  std::string caf_type{type_name.begin(), type_name.end()};
  if (caf_type == "int64")
    return "an integer";
  if (caf_type == "real64")
    return "a number with a decimal point (e.g. 2.0)";
  if (caf_type == "string")
    return "a quoted string (e.g. \"text\")";
  if (caf_type == "boolean")
    return "true or false";
  return caf_type;
}

std::string read_file(const std::string& path, caf::error& err) {
  std::ifstream in{path};
  if (!in) {
    err = make_error(errc::invalid_config,
                     "--config-file=" + path + ": cannot open the file");
    return {};
  }
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// CAF's command line only turns a boolean on (`--pipeline.shuffle`); we also
// take `--pipeline.shuffle=false`. Moves such flags from `args` to `flags`,
// the rest to `caf_args`.
caf::error
split_boolean_flags(const std::vector<std::string>& args,
                    const caf::config_option_set& opts,
                    std::vector<std::string>& caf_args,
                    std::vector<std::pair<std::string, bool>>& flags) {
  for (auto& arg : args) {
    auto eq = arg.find('=');
    if (arg.compare(0, 2, "--") == 0 && eq != std::string::npos) {
      auto name = arg.substr(2, eq - 2);
      auto opt = opts.qualified_name_lookup(
        name.find('.') == std::string::npos ? "global." + name : name);
      if (opt != nullptr && opt->is_flag()) {
        auto value = arg.substr(eq + 1);
        if (value != "true" && value != "false")
          return make_error(errc::invalid_config,
                            "command line: " + arg
                              + ": expected true or false");
        flags.emplace_back(name, value == "true");
        continue;
      }
    }
    caf_args.push_back(arg);
  }
  return caf::none;
}

// A parse error of the config file, with the line CAF found it on.
caf::error syntax_error(const std::string& file, const caf::error& err) {
  // CAF puts the position into the context as {"line": L, "column": C}.
  auto& ctx = err.context();
  std::string where;
  if (ctx.match_elements<caf::settings>()) {
    auto& pos = ctx.get_as<caf::settings>(0);
    where = " at line " + std::to_string(caf::get_or(pos, "line", int64_t{0}))
            + ", column "
            + std::to_string(caf::get_or(pos, "column", int64_t{0}));
  }
  return make_error(errc::invalid_config,
                    file + ": syntax error" + where + " ("
                      + to_string(static_cast<caf::pec>(err.code()))
                      + "); expected `key = value` lines under [section] "
                        "headers, strings in double quotes");
}

} // namespace

node_config::node_config() {
  using std::string;
  opt_group{custom_options_, "global"}
    .add<string>("role", "local (default), head, worker or trainer")
    .add<string>("report", "write a JSON run report to this path")
    .add<bool>("print-nodes", "print cluster.nodes, one per line, and exit")
    .add<bool>("resume", "the trainer continues from the checkpoint in "
                         "trainer.checkpoint-dir");
  opt_group{custom_options_, "console"}
    .add<bool>("terminal", "the console on this terminal while the job "
                           "runs (line editing, history, tab completion); "
                           "--console for short (default false)")
    .add<int64_t>("port", "the head (or local node) serves its console "
                          "over TCP here; 0 = off (default 0)")
    .add<string>("bind", "the console's address (default \"127.0.0.1\")")
    .add<string>("token", "a client's first line must be this; required "
                          "when console.bind is not loopback");
  opt_group{custom_options_, "node"}
    .add<string>("name", "this node's name (default: ROLE-PID)")
    .add<string>("host", "the machine it runs on, for the router's "
                         "locality (default: the hostname)");
  opt_group{custom_options_, "cluster"}
    .add<string>("bind", "address to listen on (default \"127.0.0.1\")")
    .add<int64_t>("port", "the head's port; 0 = any free (default 4242)")
    .add<string>("head", "HOST:PORT of the head (worker and trainer roles)")
    .add<caf::timespan>("join-timeout",
                        "how long the head waits for nodes (default 30s)")
    .add<caf::timespan>("connect-timeout",
                        "how long a node retries the head (default 10s)")
    .add<caf::timespan>("heartbeat-timeout",
                        "a worker silent this long (beyond its current "
                        "item) is lost; its work goes elsewhere (default 5s)")
    .add<std::vector<string>>("nodes",
                              "topology: [\"NAME:worker[:N]\", "
                              "\"NAME:trainer\", ...]")
    .add<string>("port-file", "the head writes its port here");
  opt_group{custom_options_, "pipeline"}
    .add<int64_t>("seed", "seed of every random draw (default 0)")
    .add<int64_t>("dataset-size", "sample ids 0..N-1 (default 64000); with "
                                  "real data, a fixed subset of N samples")
    .add<int64_t>("batch-size", "samples per batch (default 64)")
    .add<int64_t>("epochs", "passes over the dataset (default 1)")
    .add<bool>("shuffle", "new order each epoch (default true)")
    .add<int64_t>("height", "image height (default 224)")
    .add<int64_t>("width", "image width (default 224)")
    .add<int64_t>("channels", "image channels, 1..4 (default 3)")
    .add<int64_t>("num-classes", "label = id % num-classes (default 1000)")
    .add<int64_t>("blur-repeat", "GaussianBlur calls per image (default 10)")
    .add<int64_t>("blur-kernel", "odd kernel size (default 11)")
    .add<string>("blur-impl", "CPU blur: auto (default: stoker where the "
                              "CPU has AVX2/AVX-512, else opencv), opencv "
                              "or stoker")
    .add<string>("blur-isa", "the stoker blur's instruction set: auto "
                             "(default), avx512, avx2 or scalar")
    .add<double>("sigma-min", "smallest sigma drawn (default 0.1)")
    .add<double>("sigma-max", "largest sigma drawn (default 2.0)")
    .add<string>("placement", "where the blur stage runs: cpu (default, "
                              "the workers), gpu (the trainer's) or auto")
    .add<string>("source", "a registered source: synthetic (default), idx, "
                           "image-folder or one of the node's own "
                           "(docs/extending.md)")
    .add<string>("data", "idx: the directory of the IDX files; "
                         "image-folder: the training folder")
    .add<string>("eval-data", "image-folder: the test folder")
    .add<int64_t>("eval-size", "evaluate on a fixed subset of this many "
                               "test samples; 0 = all (default 0)")
    .add<std::vector<string>>("transforms",
                              "the transform chain of registered "
                              "transforms, e.g. [\"decode\", "
                              "\"random-crop(28, 4)\", \"to-tensor\"]")
    .add<std::vector<string>>("eval-transforms",
                              "the evaluation chain (default: the "
                              "transforms without augmentation)");
  opt_group{custom_options_, "router"}
    .add<string>("policy", "least-loaded (default), round-robin, "
                           "local-only or power-of-two")
    .add<int64_t>("window", "batches in flight per trainer at the start; "
                            "adapts from there (default 8)")
    .add<int64_t>("max-inflight-bytes", "ceiling of the window, in bytes of "
                                        "batches (default 1073741824)")
    .add<double>("idle-target", "trainer idle fraction above which the "
                                "window widens (default 0.02)")
    .add<caf::timespan>("report-interval", "how often workers report "
                                           "(default 100ms)")
    .add<double>("hedge-factor", "re-lease a batch this many times older "
                                 "than the median to a second worker; 0 = "
                                 "off (default 0)");
  opt_group{custom_options_, "worker"}
    .add<int64_t>("count", "CPU workers; 0 = one per core (default 0)")
    .add<double>("slowdown", "FOR BENCHMARKS AND TESTS: do the transform "
                             "work this many times (default 1)");
  opt_group{custom_options_, "transport"}
    .add<string>("dtype", "images between worker and trainer: float32 "
                          "(default), float16 or bfloat16")
    .add<bool>("batch-stream", "batches between nodes on a direct TCP "
                               "stream, not as CAF messages (default true)");
  opt_group{custom_options_, "trainer"}
    .add<string>("device", "auto (default), cuda, cpu or sim")
    .add<int64_t>("sim-step-ms", "simulated step time (default 50)")
    .add<int64_t>("log-every", "steps between progress lines (default 100)")
    .add<int64_t>("prefetch", "batches always in flight to the trainer: "
                              "the window's floor (default 4)")
    .add<double>("lr", "SGD learning rate (default 0.001)")
    .add<double>("momentum", "SGD momentum (default 0.9)")
    .add<int64_t>("threads", "LibTorch threads; 0 = its default (default 0)")
    .add<string>("checkpoint-dir", "where the trainer saves checkpoints; "
                                   "empty = none (default \"\")")
    .add<int64_t>("checkpoint-every", "steps between checkpoints "
                                      "(default 100)")
    .add<string>("model", "a registered model: vit (default), cnn or one "
                          "of the node's own (docs/extending.md)")
    .add<string>("optimizer", "sgd (default) or adamw")
    .add<double>("weight-decay", "the optimizer's weight decay (default 0)")
    .add<string>("lr-schedule", "constant (default) or cosine (down to 0 "
                                "over the run)")
    .add<bool>("eval", "evaluate on the test split after each epoch "
                       "(default false)");
  opt_group{custom_options_, "model"}
    .add<int64_t>("patch-size", "ViT patch size (default 16)")
    .add<int64_t>("width", "ViT embedding width (default 768)")
    .add<int64_t>("depth", "ViT blocks (default 12)")
    .add<int64_t>("heads", "attention heads (default 12)")
    .add<int64_t>("mlp-dim", "MLP hidden size (default 3072)");
  register_message_types(*this);
  // Stoker's actors on the scheduler (router, source) do little work; the
  // heavy ones are detached. A small scheduler that sleeps when idle leaves
  // the cores to the workers: work stealing's polling cost them ~10%.
  set("scheduler.policy", caf::atom("sharing"));
  // A node of another Stoker release cannot join: BASP refuses the
  // connection when application identifiers differ (connect_to_head says
  // so in plain words).
  set("middleman.app-identifiers",
      std::vector<std::string>{std::string{"stoker "} + STOKER_VERSION});
  set("scheduler.max-threads", size_t{2});
}

caf::error check_config_keys(const caf::settings& raw,
                             const caf::config_option_set& opts,
                             const std::string& file) {
  for (auto& [section, value] : raw) {
    auto dict = caf::get_if<caf::settings>(&value);
    if (dict == nullptr) {
      // A key before any [section] header lands in "global".
      if (auto opt = opts.qualified_name_lookup("global." + section)) {
        if (opt->check(value))
          return make_error(errc::invalid_config,
                            file + ": " + section + " = " + to_string(value)
                              + ": expected "
                              + expected_text(opt->type_name()));
        continue;
      }
      return make_error(errc::invalid_config,
                        file + ": unknown key '" + section + "'");
    }
    if (is_caf_section(section))
      continue; // CAF checks its own sections
    for (auto& [key, v] : *dict) {
      auto name = section + "." + key;
      auto opt = opts.qualified_name_lookup(name);
      if (opt == nullptr)
        return make_error(errc::invalid_config,
                          file + ": unknown key '" + key + "' in section ["
                            + section + "] (see stoker-node --help)");
      if (opt->check(v))
        return make_error(errc::invalid_config,
                          file + ": " + name + " = " + to_string(v)
                            + ": expected "
                            + expected_text(opt->type_name()));
    }
  }
  return caf::none;
}

caf::expected<std::optional<run_config>>
node_config::load(const std::vector<std::string>& args, const registry& reg) {
  std::string file = "config/local.ini (embedded default)";
  std::string text = embedded_default_config();
  for (auto& arg : args) {
    const std::string flag = "--config-file=";
    if (arg.compare(0, flag.size(), flag) == 0) {
      file = arg.substr(flag.size());
      caf::error err;
      text = read_file(file, err);
      if (err)
        return err;
    }
  }
  // `--console` is short for `--console.terminal`: CAF cannot have a
  // global flag named like the [console] section.
  std::vector<std::string> expanded;
  for (auto& arg : args) {
    const std::string shortcut = "--console";
    if (arg.compare(0, shortcut.size(), shortcut) == 0
        && (arg.size() == shortcut.size() || arg[shortcut.size()] == '='))
      expanded.push_back("--console.terminal" + arg.substr(shortcut.size()));
    else
      expanded.push_back(arg);
  }
  std::vector<std::string> caf_args;
  std::vector<std::pair<std::string, bool>> flags;
  if (auto err = split_boolean_flags(expanded, custom_options_, caf_args,
                                     flags))
    return err;
  // Pass 1: the file alone, against our option set, to report syntax
  // errors with their line and unknown or mistyped keys (CAF would only
  // drop those silently).
  std::istringstream raw_in{text};
  auto raw = parse_config(raw_in);
  if (!raw)
    return syntax_error(file, raw.error());
  if (auto err = check_config_keys(*raw, custom_options_, file))
    return err;
  // Pass 2: CAF's own parse, where command-line flags override the file.
  std::istringstream in{text};
  if (auto err = parse(caf_args, in))
    return make_error(errc::invalid_config,
                      "command line: " + render(err)
                        + "; expected --section.key=value flags "
                          "(see stoker-node --help)");
  if (!remainder.empty())
    return make_error(errc::invalid_config,
                      "command line: unexpected argument '" + remainder.front()
                        + "'; expected --section.key=value flags");
  if (cli_helptext_printed)
    return std::optional<run_config>{};
  for (auto& [name, value] : flags)
    caf::put(content, name, value);
  auto cfg = read_run_config(content, reg);
  if (!cfg)
    return make_error(errc::invalid_config,
                      "config: " + describe(cfg.error()));
  cfg->config_source = file;
  if (cfg->role != "local")
    // CAF's network layer, for cluster roles.
    caf::actor_system_config::load<caf::io::middleman>();
  return std::optional<run_config>{std::move(*cfg)};
}

const char* embedded_default_config() noexcept {
  return detail::default_config_text;
}

} // namespace stoker
