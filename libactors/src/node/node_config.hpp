#pragma once

#include <optional>
#include <string>
#include <vector>

#include <caf/actor_system_config.hpp>
#include <caf/expected.hpp>

#include "config/run_config.hpp"

namespace stoker {

/// CAF's actor-system configuration plus every Stoker key, so that each key
/// can be set in the INI file or as a command-line flag
/// (`--router.policy=round-robin`). Registers Stoker's message types.
class node_config : public caf::actor_system_config {
public:
  node_config();

  /// Parses `args` (argv without the program name). The config file is
  /// `--config-file=PATH` when given, else the embedded config/local.ini.
  /// Returns nothing when --help or --dump-config was printed, the
  /// validated config otherwise, or errc::invalid_config naming the file,
  /// line, key or flag at fault.
  /// Sources, transforms and models are looked up in `reg`.
  caf::expected<std::optional<run_config>>
  load(const std::vector<std::string>& args, const registry& reg);

  /// The option set, for checking keys by name.
  const caf::config_option_set& options() const noexcept {
    return custom_options_;
  }
};

/// Checks the raw contents of a config file against `opts`: every key must
/// be a known option of the right type. `file` names the file in messages.
caf::error check_config_keys(const caf::settings& raw,
                             const caf::config_option_set& opts,
                             const std::string& file);

/// The text of config/local.ini as it was at build time.
const char* embedded_default_config() noexcept;

} // namespace stoker
