#pragma once

#include <cstdint>
#include <string>

#include <caf/expected.hpp>

namespace stoker::detail {

/// A listening TCP socket and the port it got.
struct listening_socket {
  int fd = -1;
  uint16_t port = 0;
};

/// Binds and listens on `bind`:`port` (a name or an address; port 0: any
/// free port), SO_REUSEADDR, close-on-exec. The caller owns the descriptor.
/// Errors (errc::io_failure) read "cannot listen for WHAT on HOST:PORT:
/// REASON".
caf::expected<listening_socket> tcp_listen(const std::string& bind,
                                           uint16_t port,
                                           const std::string& what);

/// Connects to `host`:`port` (a name or an address), TCP_NODELAY,
/// close-on-exec; the caller owns the descriptor. Errors
/// (errc::io_failure) read "cannot open WHAT to HOST:PORT: REASON".
caf::expected<int> tcp_connect(const std::string& host, uint16_t port,
                               const std::string& what);

/// Accepts one connection on a listening socket (close-on-exec), with the
/// peer's address as "ADDRESS:PORT". -1 and errno as accept4's.
int tcp_accept(int listener, std::string& peer);

} // namespace stoker::detail
