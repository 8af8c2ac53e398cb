#pragma once

// A plain HTTP/1.0 client for the tests: one request on 127.0.0.1:port,
// the status and body back (status 0: no connection).

#include <string>

#include "support/node_processes.hpp"

namespace stoker_test {

struct http_answer {
  int status = 0;
  std::string headers;
  std::string body;
};

inline http_answer http_request(uint16_t port, const std::string& method,
                                const std::string& path) {
  http_answer out;
  int fd = connect_loopback(port);
  if (fd < 0)
    return out;
  auto request = method + " " + path
                 + " HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n";
  ::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string all;
  char buf[16384];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;)
    all.append(buf, static_cast<size_t>(n));
  ::close(fd);
  auto end = all.find("\r\n\r\n");
  if (all.rfind("HTTP/1.", 0) != 0 || end == std::string::npos)
    return out;
  out.status = std::stoi(all.substr(9, 3));
  out.headers = all.substr(0, end);
  out.body = all.substr(end + 4);
  return out;
}

inline http_answer http_get(uint16_t port, const std::string& path) {
  return http_request(port, "GET", path);
}

} // namespace stoker_test
