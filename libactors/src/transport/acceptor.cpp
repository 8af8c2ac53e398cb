#include "transport/acceptor.hpp"

#include <cerrno>
#include <chrono>
#include <cstring>

#include <sys/socket.h>
#include <unistd.h>

#include "transport/gate_verdict.hpp"
#include "transport/sockets.hpp"

namespace stoker {

acceptor::acceptor(int listener, hooks h)
  : listener_(listener), hooks_(std::move(h)) {
  thread_ = std::thread{[this] { accept_loop(); }};
}

acceptor::~acceptor() {
  stop();
}

void acceptor::stop() {
  if (stopped_)
    return;
  stopped_ = true;
  stopping_ = true;
  // shutdown() wakes a thread blocked in accept() on Linux.
  ::shutdown(listener_, SHUT_RDWR);
  if (thread_.joinable())
    thread_.join();
  ::close(listener_);
  {
    std::lock_guard<std::mutex> guard{mutex_};
    for (auto& c : connections_) {
      if (!c.kept)
        ::shutdown(c.fd, SHUT_RDWR);
      if (int extra = c.extra; extra >= 0)
        ::shutdown(extra, SHUT_RDWR);
    }
  }
  // Joined without the lock: a connection's thread may take it (open()).
  // The accept loop has ended, so the list no longer changes.
  for (auto& c : connections_) {
    c.thread.join();
    if (!c.kept)
      ::close(c.fd);
    if (int extra = c.extra; extra >= 0)
      ::close(extra);
  }
  connections_.clear();
}

size_t acceptor::open() const {
  std::lock_guard<std::mutex> guard{mutex_};
  return connections_.size();
}

void acceptor::reap_locked() {
  for (auto i = connections_.begin(); i != connections_.end();) {
    if (i->done) {
      i->thread.join();
      if (!i->kept)
        ::close(i->fd);
      if (int extra = i->extra; extra >= 0)
        ::close(extra);
      i = connections_.erase(i);
    } else {
      ++i;
    }
  }
}

void acceptor::accept_loop() {
  while (!stopping_) {
    if (hooks_.wait_when_full) {
      std::unique_lock<std::mutex> guard{mutex_};
      reap_locked();
      if (connections_.size() >= hooks_.max_open) {
        // Let the ones being served finish first (each is bounded by its
        // owner's handshake timeout); new peers wait in the backlog.
        guard.unlock();
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        continue;
      }
    }
    std::string peer;
    int fd = detail::tcp_accept(listener_, peer);
    if (fd < 0) {
      if (stopping_)
        return;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS
          || errno == ENOMEM) {
        if (hooks_.say)
          hooks_.say("cannot accept: " + std::string{std::strerror(errno)}
                     + "; retrying");
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      continue; // EINTR, ECONNABORTED and friends: the next one
    }
    std::lock_guard<std::mutex> guard{mutex_};
    reap_locked();
    auto address = address_of(peer);
    std::string why;
    if (hooks_.refuse_if)
      why = hooks_.refuse_if(connections_, address);
    if (why.empty() && connections_.size() >= hooks_.max_open)
      why = "already " + std::to_string(connections_.size())
            + " connections open, the most it takes at once; try again";
    if (!why.empty()) {
      if (hooks_.refused)
        hooks_.refused(fd, peer, why);
      ::close(fd);
      continue;
    }
    auto& c = connections_.emplace_back();
    c.fd = fd;
    c.peer = std::move(peer);
    c.address = std::move(address);
    c.thread = std::thread{[this, &c] { hooks_.serve(c); }};
  }
}

} // namespace stoker
