#pragma once

// The node's CAF configuration: CAF's own settings, every Stoker key as a
// flag, Stoker's message types, and loading a config from argv.

#include <optional>
#include <string>
#include <vector>

#include <caf/actor_system_config.hpp>
#include <caf/expected.hpp>

#include "stoker/options.hpp"
#include "core/system_log.hpp"

namespace stoker {

class registry;

/// CAF's actor-system configuration plus every Stoker key of the option
/// table (config/option_table.hpp), so that each key can be set in the INI
/// file or as a command-line flag (`--router.policy=round-robin`).
/// Registers Stoker's message types. Carries the node's log sink (`log`,
/// set by whoever runs the node before the actor system is made), which
/// its actors reach through log_of.
class node_config : public caf::actor_system_config, public log_carrier {
public:
  node_config();

  /// Parses `args` (argv without the program name). The config file is
  /// `--config-file=PATH` when given, else the embedded config/local.ini;
  /// flags override it. Then prepare_run completes the config against
  /// `reg` (sources, transforms and models are looked up there). Returns
  /// nothing when --help, --long-help or --dump-config was printed, the
  /// config otherwise, or errc::invalid_config naming the file, line, key
  /// or flag at fault.
  caf::expected<std::optional<run_config>>
  load(const std::vector<std::string>& args, const registry& reg);

  /// Every option, CAF's and Stoker's: what --long-help prints.
  const caf::config_option_set& options() const noexcept {
    return custom_options_;
  }
};

/// Checks the raw contents of a config file: every key must be one of the
/// option table's (or in one of CAF's own sections) with a value it takes.
/// `file` names the file in messages.
caf::error check_config_keys(const caf::settings& raw,
                             const std::string& file);

/// The text of config/local.ini as it was at build time.
const char* embedded_default_config() noexcept;

} // namespace stoker
