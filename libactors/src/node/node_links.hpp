#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/expected.hpp>
#include <caf/io/middleman.hpp>

#include "stoker/errors.hpp"
#include "stoker/log.hpp"
#include "stoker/options.hpp"
#include "transport/gate.hpp"
#include "transport/tls.hpp"

namespace stoker {

/// Where this node's CAF ports meet the network (docs/security.md). Every
/// actor it publishes listens on loopback only, behind a gate on
/// cluster.bind that checks the peer's certificate (with TLS) and every
/// BASP header's declared size (always); with TLS, every connection out
/// goes through a tunnel that checks the other side's certificate first.
/// Owned by run_node, created before the actor system and destroyed after
/// it. Used from the role's main thread.
class node_links {
public:
  /// Loads this node's TLS files (tls.*, tls.dir by node.name), if set,
  /// and says once to `log` when the cluster runs unauthenticated
  /// (cluster.insecure); its gates and retries say their lines there too.
  /// Errors (errc::invalid_config) name the key and the file.
  static caf::expected<std::unique_ptr<node_links>>
  open(const node_options& node, std::shared_ptr<const log_sink> log);

  /// Mutual TLS for this node's connections (null: plain TCP).
  const std::shared_ptr<const tls_context>& tls() const noexcept {
    return tls_;
  }

  /// Publishes `whom` through CAF on loopback and opens a gate for it on
  /// bind:port (0: any free port). Returns the gate's port. `what` names
  /// the port in messages ("the cluster port").
  template <class Handle>
  caf::expected<uint16_t> publish(caf::actor_system& sys, const Handle& whom,
                                  const std::string& bind, uint16_t port,
                                  const std::string& what) {
    auto inner = sys.middleman().publish(whom, 0, "127.0.0.1");
    if (!inner)
      return make_error(errc::io_failure,
                        "cannot listen for " + what
                          + " on 127.0.0.1 (behind the gate): "
                          + sys.render(inner.error()));
    return open_gate(bind, port, *inner, what);
  }

  /// CAF's remote_actor to host:port, through a tunnel that reads the
  /// port's verdict first (and speaks TLS when TLS is configured). A TLS
  /// refusal (ours or theirs) or tls.* that differs is errc::run_failure
  /// with the reason: retrying cannot help. A busy port's refusal is
  /// errc::io_failure with its reason. `what` names the peer ("the head").
  template <class Handle>
  caf::expected<Handle> connect(caf::actor_system& sys,
                                const std::string& host, uint16_t port,
                                const std::string& what) {
    auto local = open_tunnel(host, port, what);
    if (!local)
      return std::move(local.error());
    return sys.middleman().remote_actor<Handle>("127.0.0.1", *local);
  }

  /// connect(), tried again with back-off (0.1 s doubling to 1 s) until
  /// `timeout` on anything but a run_failure, saying each new reason once
  /// as a warning ("stoker-node: WHAT at HOST:PORT: ...; trying again
  /// for up to N ms"). Every error names WHAT at HOST:PORT; after the
  /// timeout it names the last attempt's reason and then `expected` (what
  /// should listen there), if given.
  template <class Handle>
  caf::expected<Handle> connect_retrying(caf::actor_system& sys,
                                         const std::string& host,
                                         uint16_t port,
                                         const std::string& what,
                                         std::chrono::milliseconds timeout,
                                         const std::string& expected = {}) {
    using namespace std::chrono;
    auto deadline = steady_clock::now() + timeout;
    milliseconds delay{100};
    std::string last;
    for (;;) {
      auto got = connect<Handle>(sys, host, port, what);
      if (got || is(got.error(), errc::run_failure))
        return got;
      if (got.error() == caf::sec::incompatible_application_ids)
        return make_error(errc::run_failure,
                          what + " at " + host + ":" + std::to_string(port)
                            + " runs another Stoker release (or is another "
                              "CAF application); expected stoker "
                            + std::string{version()} + " on every node");
      auto why = describe(got.error());
      if (why != last)
        say_retrying(why, timeout);
      last = std::move(why);
      if (steady_clock::now() + delay > deadline)
        break;
      std::this_thread::sleep_for(delay);
      delay = std::min(delay * 2, milliseconds{1000});
    }
    return make_error(errc::run_failure,
                      "cannot reach " + what + " at " + host + ":"
                        + std::to_string(port) + " within "
                        + std::to_string(timeout.count())
                        + " ms (cluster.connect-timeout); last attempt: "
                        + last
                        + (expected.empty() ? "" : "; expected " + expected));
  }

private:
  struct private_tag {};

public:
  node_links(private_tag, std::shared_ptr<const tls_context> tls,
             const node_options& node, std::shared_ptr<const log_sink> log);

private:

  static const char* version() noexcept;
  void say_retrying(const std::string& why,
                    std::chrono::milliseconds timeout) const;
  caf::expected<uint16_t> open_gate(const std::string& bind, uint16_t port,
                                    uint16_t inner, const std::string& what);
  caf::expected<uint16_t> open_tunnel(const std::string& host, uint16_t port,
                                      const std::string& what);
  gate_options options_for(const std::string& what) const;

  std::shared_ptr<const tls_context> tls_;
  std::shared_ptr<const log_sink> log_;
  uint64_t max_message_bytes_;
  std::chrono::milliseconds handshake_timeout_;
  size_t max_connections_;
  size_t max_per_peer_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<gate>> gates_;
  std::vector<std::unique_ptr<tunnel>> tunnels_;
};

} // namespace stoker
