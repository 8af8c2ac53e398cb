#pragma once

#include <memory>
#include <string>

#include <caf/actor_system.hpp>
#include <caf/expected.hpp>

#include "console/console_server.hpp"
#include "console/terminal_console.hpp"

namespace stoker {

/// The consoles a head or a local node serves, as `console.*` asks: over
/// TCP on console.port (0: none), and on its own terminal with
/// console.terminal (`--console`). Closing it (the destructor) closes every
/// connection and gives the terminal back; do so before the actors they
/// talk to exit.
class node_consoles {
public:
  /// Opens what `spec` asks for and says where on standard output, each
  /// line starting with `who` ("head", "local"). Errors name the address
  /// or setting that failed.
  static caf::expected<node_consoles> open(caf::actor_system& sys,
                                           const console_spec& spec,
                                           console_target target,
                                           const std::string& who);

private:
  std::unique_ptr<console_server> tcp_;
  std::unique_ptr<terminal_console> terminal_;
};

} // namespace stoker
