#include "console/console_server.hpp"

#include <cerrno>
#include <sys/socket.h>
#include <unistd.h>

#include "stoker/errors.hpp"
#include "console/console_session.hpp"
#include "transport/sockets.hpp"

namespace stoker {

namespace {

constexpr size_t max_line = 4096;

bool send_all(int fd, const std::string& text) {
  for (size_t done = 0; done < text.size();) {
    auto n = ::send(fd, text.data() + done, text.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

} // namespace

caf::expected<std::unique_ptr<console_server>>
console_server::start(caf::actor_system& sys, const console_spec& spec,
                      job_target target) {
  if (!is_loopback(spec.bind) && spec.token.empty())
    return make_error(errc::invalid_config,
                      "console.bind = \"" + spec.bind
                        + "\" reaches beyond this machine; expected "
                          "console.token to be set as well");
  auto socket = detail::tcp_listen(spec.bind, spec.port, "the console");
  if (!socket)
    return std::move(socket.error());
  auto result = std::make_unique<console_server>(
    private_tag{}, sys, socket->fd, socket->port, spec.token,
    std::move(target));
  result->acceptor_ = std::thread{[self = result.get()] {
    self->accept_loop();
  }};
  return result;
}

console_server::console_server(private_tag, caf::actor_system& sys, int fd,
                               uint16_t port, std::string token,
                               job_target target)
  : sys_(sys),
    fd_(fd),
    port_(port),
    token_(std::move(token)),
    target_(std::move(target)) {
  // The acceptor starts in start(), once the object is in place.
}

console_server::~console_server() {
  stopping_ = true;
  ::shutdown(fd_, SHUT_RDWR); // wakes accept()
  if (acceptor_.joinable())
    acceptor_.join();
  ::close(fd_);
  std::lock_guard<std::mutex> guard{clients_mutex_};
  for (auto& c : clients_) {
    ::shutdown(c.fd, SHUT_RDWR); // wakes recv()
    c.thread.join();
    ::close(c.fd);
  }
}

void console_server::accept_loop() {
  while (!stopping_) {
    int fd = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (stopping_)
        return;
      if (errno == EMFILE || errno == ENFILE)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      continue;
    }
    std::lock_guard<std::mutex> guard{clients_mutex_};
    for (auto i = clients_.begin(); i != clients_.end();) {
      if (i->done) {
        i->thread.join();
        ::close(i->fd);
        i = clients_.erase(i);
      } else {
        ++i;
      }
    }
    auto& c = clients_.emplace_back();
    c.fd = fd;
    c.thread = std::thread{[this, &c] { serve(c); }};
  }
}

void console_server::serve(client& c) {
  console_session session{sys_, target_};
  bool authorized = token_.empty();
  send_all(c.fd, authorized ? "stoker console; type help\n> "
                            : "stoker console; send the token first\n");
  std::string pending;
  char buf[1024];
  for (bool open = true; open;) {
    auto n = ::recv(c.fd, buf, sizeof(buf), 0);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    pending.append(buf, static_cast<size_t>(n));
    for (size_t eol; open && (eol = pending.find('\n')) != std::string::npos;) {
      auto line = pending.substr(0, eol);
      pending.erase(0, eol + 1);
      if (!line.empty() && line.back() == '\r')
        line.pop_back();
      if (!authorized) {
        authorized = line == token_;
        open = authorized && send_all(c.fd, "ok; type help\n> ");
        if (!authorized)
          send_all(c.fd, "wrong token (console.token); bye\n");
        continue;
      }
      auto reply = session.execute(line);
      open = send_all(c.fd, reply.text + (reply.quit ? "" : "> "))
             && !reply.quit;
    }
    if (pending.size() > max_line) {
      send_all(c.fd, "line over " + std::to_string(max_line)
                       + " bytes; bye\n");
      break;
    }
  }
  ::shutdown(c.fd, SHUT_RDWR);
  c.done = true;
}

} // namespace stoker
