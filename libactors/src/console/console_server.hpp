#pragma once

#include <atomic>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <caf/actor_system.hpp>
#include <caf/expected.hpp>

#include "stoker/actors.hpp"
#include "stoker/options.hpp"
#include "console/console_session.hpp"

namespace stoker {

/// The console over TCP (a head's, or a local run's): any line-based client
/// (`nc`, tools/ops/stoker-console) sends one command per line and gets the
/// answer, then a "> " prompt. With a token, the first line must be it. One thread
/// per connection, each with its own console_session; a client that sends
/// junk gets usage lines, one that sends a line over 4 KiB is dropped. The
/// destructor closes every connection and joins every thread.
class console_server {
public:
  /// Starts serving; errors name the address (errc::io_failure) or a
  /// missing token for a non-loopback bind (errc::invalid_config).
  static caf::expected<std::unique_ptr<console_server>>
  start(caf::actor_system& sys, const console_spec& spec,
        job_target target);

  ~console_server();
  console_server(const console_server&) = delete;
  console_server& operator=(const console_server&) = delete;

  uint16_t port() const noexcept { return port_; }

private:
  struct private_tag {};

public:
  console_server(private_tag, caf::actor_system& sys, int fd, uint16_t port,
                 std::string token, job_target target);

private:
  struct client {
    int fd = -1;
    std::atomic<bool> done{false};
    std::thread thread;
  };

  void accept_loop();
  void serve(client& c);

  caf::actor_system& sys_;
  int fd_;
  uint16_t port_;
  std::string token_;
  job_target target_;
  std::atomic<bool> stopping_{false};
  std::mutex clients_mutex_;
  std::list<client> clients_;
  std::thread acceptor_;
};

} // namespace stoker
