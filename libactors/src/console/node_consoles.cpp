#include "console/node_consoles.hpp"

#include "core/system_log.hpp"

namespace stoker {

caf::expected<node_consoles>
node_consoles::open(caf::actor_system& sys, const console_spec& spec,
                    job_target target, const std::string& who,
                    std::shared_ptr<const tls_context> tls) {
  node_consoles out;
  if (spec.port != 0 && tls && !is_loopback(spec.bind)) {
    auto inner = spec;
    inner.bind = "127.0.0.1";
    inner.port = 0;
    auto tcp = console_server::start(sys, inner, target);
    if (!tcp)
      return std::move(tcp.error());
    out.tcp_ = std::move(*tcp);
    auto front = gate::open(spec.bind, spec.port, out.tcp_->port(),
                            service_gate_options("the console port",
                                                 std::move(tls),
                                                 shared_log_of(sys)));
    if (!front)
      return std::move(front.error());
    out.gate_ = std::move(*front);
    log_to(sys) << who << ": console on " << spec.bind << ":"
                << out.gate_->port()
                << " over mutual TLS (tools/ops/stoker-console --tls.dir=DIR)";
  } else if (spec.port != 0) {
    auto tcp = console_server::start(sys, spec, target);
    if (!tcp)
      return std::move(tcp.error());
    out.tcp_ = std::move(*tcp);
    log_to(sys) << who << ": console on " << spec.bind << ":"
                << out.tcp_->port() << " (nc or tools/ops/stoker-console)";
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
