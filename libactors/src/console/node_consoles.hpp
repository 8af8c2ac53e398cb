#pragma once

#include <memory>
#include <string>

#include <caf/actor_system.hpp>
#include <caf/expected.hpp>

#include "console/console_server.hpp"
#include "console/terminal_console.hpp"
#include "transport/gate.hpp"
#include "transport/tls.hpp"

namespace stoker {

/// The consoles a head or a local node serves, as `console.*` asks: over
/// TCP on console.port (0: none), and on its own terminal with
/// console.terminal (`--console`). Closing it (the destructor) closes every
/// connection and gives the terminal back; do so before the actors they
/// talk to exit.
class node_consoles {
public:
  /// Opens what `spec` asks for and says where on standard output, each
  /// line starting with `who` ("head", "local"). With `tls` and a
  /// console.bind beyond loopback, the console listens on loopback behind
  /// a gate that speaks mutual TLS on console.bind (clients need a
  /// certificate of the cluster's CA: tools/ops/stoker-console --tls.dir).
  /// Errors name the address or setting that failed.
  static caf::expected<node_consoles>
  open(caf::actor_system& sys, const console_spec& spec,
       job_target target, const std::string& who,
       std::shared_ptr<const tls_context> tls = nullptr);

private:
  std::unique_ptr<console_server> tcp_;
  std::unique_ptr<gate> gate_; // destroyed first: closes the TLS clients
  std::unique_ptr<terminal_console> terminal_;
};

} // namespace stoker
