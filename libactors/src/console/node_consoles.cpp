#include "console/node_consoles.hpp"

#include <iostream>

namespace stoker {

caf::expected<node_consoles> node_consoles::open(caf::actor_system& sys,
                                                 const console_spec& spec,
                                                 console_target target,
                                                 const std::string& who) {
  node_consoles out;
  if (spec.port != 0) {
    auto tcp = console_server::start(sys, spec, target);
    if (!tcp)
      return std::move(tcp.error());
    out.tcp_ = std::move(*tcp);
    std::cout << who << ": console on " << spec.bind << ":"
              << out.tcp_->port() << " (nc or tools/stoker-console)"
              << std::endl;
  }
  if (spec.terminal) {
    auto terminal = terminal_console::start(sys, std::move(target));
    if (!terminal)
      return std::move(terminal.error());
    out.terminal_ = std::move(*terminal);
  }
  return out;
}

} // namespace stoker
