#include "node/node_links.hpp"

#include <algorithm>

namespace stoker {

node_links::node_links(private_tag, std::shared_ptr<const tls_context> tls,
                       const node_options& node,
                       std::shared_ptr<const log_sink> log)
  : tls_(std::move(tls)),
    log_(std::move(log)),
    max_message_bytes_(node.cluster.max_message_bytes),
    handshake_timeout_(node.cluster.connect_timeout),
    max_connections_(node.cluster.max_connections),
    max_per_peer_(node.cluster.max_connections_per_peer) {
  // nop
}

caf::expected<std::unique_ptr<node_links>>
node_links::open(const node_options& node,
                 std::shared_ptr<const log_sink> log) {
  std::shared_ptr<const tls_context> tls;
  if (node.tls.enabled()) {
    auto files = resolve_tls_files(node.tls, node.name);
    if (!files)
      return std::move(files.error());
    auto loaded = tls_context::load(*files);
    if (!loaded)
      return std::move(loaded.error());
    tls = std::move(*loaded);
    log->info("stoker-node: mutual TLS 1.3 on every connection, as '"
              + tls->name() + "' (" + files->certificate + ")");
  } else if (node.cluster.insecure && node.role != role_kind::local) {
    log->warning("stoker-node: cluster.insecure: this cluster is "
                 "unauthenticated (no TLS): anyone who reaches its ports "
                 "can join it and read its batches");
  }
  return std::make_unique<node_links>(private_tag{}, std::move(tls), node,
                                      std::move(log));
}

const char* node_links::version() noexcept {
  return STOKER_VERSION;
}

void node_links::say_retrying(const std::string& why,
                              std::chrono::milliseconds timeout) const {
  log_->warning("stoker-node: " + why + "; trying again for up to "
                + std::to_string(timeout.count())
                + " ms (cluster.connect-timeout)");
}

gate_options node_links::options_for(const std::string& what) const {
  auto options = service_gate_options(what, tls_, log_);
  options.max_message_bytes = max_message_bytes_; // CAF's ports speak BASP
  options.handshake_timeout = handshake_timeout_;
  options.max_connections = max_connections_;
  options.max_per_peer = max_per_peer_;
  options.preface = true; // only nodes (through tunnels) connect here
  return options;
}

caf::expected<uint16_t> node_links::open_gate(const std::string& bind,
                                              uint16_t port, uint16_t inner,
                                              const std::string& what) {
  auto opened = gate::open(bind, port, inner, options_for(what));
  if (!opened)
    return std::move(opened.error());
  auto result = (*opened)->port();
  std::lock_guard<std::mutex> guard{mutex_};
  gates_.push_back(std::move(*opened));
  return result;
}

caf::expected<uint16_t> node_links::open_tunnel(const std::string& host,
                                                uint16_t port,
                                                const std::string& what) {
  auto opened = tunnel::open(host, port, options_for(what));
  if (!opened)
    return std::move(opened.error());
  auto result = (*opened)->local_port();
  std::lock_guard<std::mutex> guard{mutex_};
  // Tunnels whose connection ended are done with.
  tunnels_.erase(std::remove_if(tunnels_.begin(), tunnels_.end(),
                                [](auto& t) { return t->done(); }),
                 tunnels_.end());
  tunnels_.push_back(std::move(*opened));
  return result;
}


} // namespace stoker
