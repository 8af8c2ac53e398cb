#include "transport/sockets.hpp"

#include <cerrno>
#include <cstring>
#include <memory>
#include <netdb.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include "stoker/errors.hpp"

namespace stoker::detail {

namespace {

using addresses = std::unique_ptr<addrinfo, decltype(&freeaddrinfo)>;

// The TCP addresses of host:port (passive: to bind). Errors read
// "DOING: cannot resolve 'HOST': REASON".
caf::expected<addresses> resolve(const std::string& host, uint16_t port,
                                 bool passive, const std::string& doing) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  addrinfo* found = nullptr;
  auto service = std::to_string(port);
  if (auto rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found))
    return make_error(errc::io_failure, doing + ": cannot resolve '" + host
                                          + "': " + gai_strerror(rc));
  return addresses{found, &freeaddrinfo};
}

} // namespace

caf::expected<listening_socket> tcp_listen(const std::string& bind,
                                           uint16_t port,
                                           const std::string& what) {
  auto doing = "cannot listen for " + what + " on " + bind + ":"
               + std::to_string(port);
  auto addrs = resolve(bind, port, true, doing);
  if (!addrs)
    return std::move(addrs.error());
  std::string last = "no address";
  for (auto* a = addrs->get(); a != nullptr; a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC,
                      a->ai_protocol);
    if (fd < 0) {
      last = std::strerror(errno);
      continue;
    }
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_storage bound{};
    socklen_t len = sizeof(bound);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd, 64) != 0
        || ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len) != 0) {
      last = std::strerror(errno);
      ::close(fd);
      continue;
    }
    auto actual = bound.ss_family == AF_INET6
                    ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                    : reinterpret_cast<sockaddr_in*>(&bound)->sin_port;
    return listening_socket{fd, ntohs(actual)};
  }
  return make_error(errc::io_failure, doing + ": " + last);
}

caf::expected<int> tcp_connect(const std::string& host, uint16_t port,
                               const std::string& what) {
  auto doing = "cannot open " + what + " to " + host + ":"
               + std::to_string(port);
  auto addrs = resolve(host, port, false, doing);
  if (!addrs)
    return std::move(addrs.error());
  std::string last = "no address";
  for (auto* a = addrs->get(); a != nullptr; a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC,
                      a->ai_protocol);
    if (fd < 0) {
      last = std::strerror(errno);
      continue;
    }
    if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      return fd;
    }
    last = std::strerror(errno);
    ::close(fd);
  }
  return make_error(errc::io_failure, doing + ": " + last);
}

int tcp_accept(int listener, std::string& peer) {
  sockaddr_storage from{};
  socklen_t len = sizeof(from);
  int fd = ::accept4(listener, reinterpret_cast<sockaddr*>(&from), &len,
                     SOCK_CLOEXEC);
  if (fd < 0)
    return fd;
  char text[INET6_ADDRSTRLEN] = "?";
  uint16_t port = 0;
  if (from.ss_family == AF_INET) {
    auto* in = reinterpret_cast<const sockaddr_in*>(&from);
    inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text));
    port = ntohs(in->sin_port);
  } else if (from.ss_family == AF_INET6) {
    auto* in = reinterpret_cast<const sockaddr_in6*>(&from);
    inet_ntop(AF_INET6, &in->sin6_addr, text, sizeof(text));
    port = ntohs(in->sin6_port);
  }
  peer = std::string{text} + ":" + std::to_string(port);
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

} // namespace stoker::detail
