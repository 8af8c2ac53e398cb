#include "node/node_config.hpp"

#include <sstream>

#include <caf/config_option_adder.hpp>
#include <caf/io/middleman.hpp>

#include "stoker/actors.hpp"
#include "stoker/errors.hpp"
#include "config/config_file.hpp"
#include "config/option_table.hpp"
#include "config/run_config.hpp"
#include "node/default_config.hpp"
#include "node/prepare_run.hpp"

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

// CAF's OpenSSL module is not loaded: its keys would be ignored, and a
// node would run without the TLS its user asked for.
constexpr const char* openssl_refusal
  = "the [openssl] keys are CAF's OpenSSL module, which Stoker does not use "
    "(docs/security.md); expected certificate, key, ca-file and passphrase "
    "under [tls] (or --tls.certificate=... on the command line)";

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

// The first flag of `caf_args` that Stoker can say is wrong: a key no
// section has (with the nearest that it has), or a value its key does not
// take (naming both and what was expected, as in a file). Flags of CAF's
// own sections are CAF's to judge. None: every Stoker flag reads.
caf::error check_flags(const std::vector<std::string>& caf_args) {
  run_config scratch;
  for (auto& arg : caf_args) {
    auto eq = arg.find('=');
    if (arg.compare(0, 2, "--") != 0)
      continue;
    auto name = arg.substr(2, (eq == std::string::npos ? arg.size() : eq) - 2);
    auto dot = name.find('.');
    if (dot != std::string::npos && is_caf_section(name.substr(0, dot)))
      continue;
    auto decl = find_option(name);
    if (decl == nullptr) {
      if (dot == std::string::npos && eq == std::string::npos)
        continue; // CAF's own flags: --help, --long-help, --dump-config
      return make_error(errc::invalid_config, "command line: " + arg + ": "
                                                + unknown_option_text(name));
    }
    if (eq == std::string::npos)
      continue; // a flag without a value: a boolean turned on
    auto text = arg.substr(eq + 1);
    auto value = caf::config_value::parse(text);
    auto as_read = value ? std::move(*value) : caf::config_value{text};
    if (auto err = decl->read(as_read, scratch)) {
      // A bare word is a string to CAF's command line ("abc" for a text
      // key): try it so before calling it wrong.
      if (!caf::holds_alternative<std::string>(as_read)
          && !decl->read(caf::config_value{text}, scratch))
        continue;
      return make_error(errc::invalid_config,
                        "command line: " + describe(err));
    }
  }
  return caf::none;
}

} // namespace

node_config::node_config() {
  declare_options(custom_options_);
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
                             const std::string& file) {
  run_config scratch; // where each value is tried
  auto check = [&](const std::string& name, const caf::config_value& v,
                   const std::string& unknown) {
    auto decl = find_option(name);
    if (decl == nullptr)
      return make_error(errc::invalid_config, file + ": " + unknown);
    if (auto err = decl->read(v, scratch))
      return make_error(errc::invalid_config,
                        file + ": " + describe(err));
    return caf::error{};
  };
  for (auto& [section, value] : raw) {
    auto dict = caf::get_if<caf::settings>(&value);
    if (dict == nullptr) {
      // A key before any [section] header: one of the global keys.
      if (auto err = check(section, value, unknown_option_text(section)))
        return err;
      continue;
    }
    if (section == "openssl")
      return make_error(errc::invalid_config, file + ": " + openssl_refusal);
    if (is_caf_section(section))
      continue; // CAF checks its own sections
    for (auto& [key, v] : *dict)
      if (auto err = check(section + "." + key, v,
                           unknown_option_text(section + "." + key)))
        return err;
  }
  return caf::none;
}

caf::expected<std::optional<run_config>>
node_config::load(const std::vector<std::string>& args, const registry& reg) {
  std::string file = "config/local.ini (embedded default)";
  std::string text = normalize_config_text(embedded_default_config());
  for (auto& arg : args) {
    const std::string flag = "--config-file=";
    if (arg.compare(0, flag.size(), flag) == 0) {
      file = arg.substr(flag.size());
      auto read = read_config_file(file);
      if (!read)
        return std::move(read.error());
      text = std::move(*read);
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
  for (auto& arg : expanded)
    if (arg.compare(0, 10, "--openssl.") == 0)
      return make_error(errc::invalid_config,
                        "command line: " + arg + ": " + openssl_refusal);
  std::vector<std::string> caf_args;
  std::vector<std::pair<std::string, bool>> flags;
  if (auto err = split_boolean_flags(expanded, custom_options_, caf_args,
                                     flags))
    return err;
  // Pass 1: the file alone, to report syntax errors with their line, keys
  // set twice, and unknown or mistyped keys (CAF would drop those
  // silently).
  std::istringstream raw_in{text};
  auto raw = parse_config(raw_in);
  if (!raw)
    return syntax_error(file, raw.error());
  if (auto err = check_unique_keys(text, file))
    return err;
  if (auto err = check_config_keys(*raw, file))
    return err;
  // Pass 2: CAF's own parse, for its own sections and the command line;
  // a flag it cannot read is said in Stoker's words where Stoker knows the
  // key, never as CAF's parser_error(...).
  std::istringstream in{text};
  if (auto err = parse(caf_args, in)) {
    if (auto known = check_flags(caf_args))
      return known;
    return make_error(errc::invalid_config,
                      "command line: " + describe(err)
                        + "; expected --section.key=value flags "
                          "(see stoker-node --long-help)");
  }
  if (!remainder.empty())
    return make_error(errc::invalid_config,
                      "command line: unexpected argument '" + remainder.front()
                        + "'; expected --section.key=value flags");
  if (cli_helptext_printed)
    return std::optional<run_config>{};
  // Stoker's keys: the file's values as written, the command line's on top
  // (as CAF parsed them).
  auto merged = std::move(*raw);
  for (auto& arg : caf_args) {
    auto name = arg.substr(2, arg.find('=') - 2);
    if (arg.compare(0, 2, "--") != 0 || find_option(name) == nullptr)
      continue;
    if (auto value = caf::get_if(&content, name))
      caf::put(merged, name, *value);
  }
  for (auto& [name, value] : flags)
    caf::put(merged, name, value);
  auto cfg = read_run_config(merged);
  if (!cfg)
    return make_error(errc::invalid_config,
                      "config: " + describe(cfg.error()));
  cfg->node.config_source = file;
  if (auto err = prepare_run(*cfg, reg))
    return make_error(errc::invalid_config, "config: " + describe(err));
  if (cfg->node.role != role_kind::local)
    // CAF's network layer, for cluster roles.
    caf::actor_system_config::load<caf::io::middleman>();
  return std::optional<run_config>{std::move(*cfg)};
}

const char* embedded_default_config() noexcept {
  return detail::default_config_text;
}

} // namespace stoker
