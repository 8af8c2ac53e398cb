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

} // namespace stoker::detail
