#include "transport/batch_channel.hpp"

#include <arpa/inet.h>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "stoker/errors.hpp"
#include "transport/batch_frame.hpp"
#include "transport/tcp_listen.hpp"

namespace stoker {

namespace {

std::string system_reason(int code) {
  return std::strerror(code);
}

std::string address_of(const sockaddr* addr) {
  char text[INET6_ADDRSTRLEN] = "?";
  uint16_t port = 0;
  if (addr->sa_family == AF_INET) {
    auto* in = reinterpret_cast<const sockaddr_in*>(addr);
    inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text));
    port = ntohs(in->sin_port);
  } else if (addr->sa_family == AF_INET6) {
    auto* in = reinterpret_cast<const sockaddr_in6*>(addr);
    inet_ntop(AF_INET6, &in->sin6_addr, text, sizeof(text));
    port = ntohs(in->sin6_port);
  }
  return std::string{text} + ":" + std::to_string(port);
}

using addrinfo_ptr = std::unique_ptr<addrinfo, decltype(&freeaddrinfo)>;

caf::expected<addrinfo_ptr> resolve(const std::string& host, uint16_t port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  auto service = std::to_string(port);
  if (auto rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &found))
    return make_error(errc::io_failure, "cannot resolve '" + host
                                          + "': " + gai_strerror(rc));
  return addrinfo_ptr{found, &freeaddrinfo};
}

enum class read_result { ok, end_of_stream, failed };

// Reads exactly `size` bytes; end_of_stream only if the peer closed before
// the first byte.
read_result read_exact(int fd, char* at, size_t size, size_t& got) {
  got = 0;
  while (got < size) {
    auto n = ::recv(fd, at + got, size - got, 0);
    if (n > 0) {
      got += static_cast<size_t>(n);
    } else if (n == 0) {
      return got == 0 ? read_result::end_of_stream : read_result::failed;
    } else if (errno != EINTR) {
      return read_result::failed;
    }
  }
  return read_result::ok;
}

} // namespace

// -- batch_sender -------------------------------------------------------------

batch_sender::batch_sender(int fd, std::string peer)
  : fd_(fd), peer_(std::move(peer)) {
  // nop
}

batch_sender::batch_sender(batch_sender&& other) noexcept
  : fd_(other.fd_),
    peer_(std::move(other.peer_)),
    head_(std::move(other.head_)) {
  other.fd_ = -1;
}

batch_sender& batch_sender::operator=(batch_sender&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0)
      ::close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
    peer_ = std::move(other.peer_);
    head_ = std::move(other.head_);
  }
  return *this;
}

batch_sender::~batch_sender() {
  if (fd_ >= 0)
    ::close(fd_);
}

caf::expected<batch_sender> batch_sender::connect(const std::string& host,
                                                  uint16_t port) {
  auto where = host + ":" + std::to_string(port);
  auto addrs = resolve(host, port);
  if (!addrs)
    return std::move(addrs.error());
  std::string last = "no address";
  for (auto* a = addrs->get(); a != nullptr; a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC,
                      a->ai_protocol);
    if (fd < 0) {
      last = system_reason(errno);
      continue;
    }
    if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      return batch_sender{fd, where};
    }
    last = system_reason(errno);
    ::close(fd);
  }
  return make_error(errc::io_failure, "cannot open a batch stream to " + where
                                        + ": " + last);
}

caf::error batch_sender::send(const image_batch& batch) {
  if (fd_ < 0)
    return make_error(errc::io_failure,
                      "batch stream to " + peer_ + " is closed");
  encode_frame_head(batch, head_);
  iovec parts[2];
  parts[0].iov_base = head_.data();
  parts[0].iov_len = head_.size();
  parts[1].iov_base = const_cast<char*>(batch.data.data());
  parts[1].iov_len = batch.data.size();
  msghdr msg{};
  msg.msg_iov = parts;
  msg.msg_iovlen = batch.data.empty() ? 1 : 2;
  while (msg.msg_iovlen > 0) {
    auto n = ::sendmsg(fd_, &msg, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      auto reason = system_reason(errno);
      ::close(fd_);
      fd_ = -1;
      return make_error(errc::io_failure, "batch stream to " + peer_
                                            + ": cannot send batch "
                                            + std::to_string(batch.batch_id)
                                            + ": " + reason);
    }
    // Skip what the kernel took, part by part.
    auto sent = static_cast<size_t>(n);
    while (msg.msg_iovlen > 0 && sent >= msg.msg_iov->iov_len) {
      sent -= msg.msg_iov->iov_len;
      ++msg.msg_iov;
      --msg.msg_iovlen;
    }
    if (msg.msg_iovlen > 0) {
      msg.msg_iov->iov_base = static_cast<char*>(msg.msg_iov->iov_base) + sent;
      msg.msg_iov->iov_len -= sent;
    }
  }
  return caf::none;
}

// -- batch_listener -----------------------------------------------------------

batch_listener::batch_listener(private_tag, int fd, uint16_t port, uint64_t max_data_bytes,
                               std::shared_ptr<buffer_pool> pool,
                               batch_handler on_batch, error_handler on_error)
  : fd_(fd),
    port_(port),
    max_data_bytes_(max_data_bytes),
    pool_(std::move(pool)),
    on_batch_(std::move(on_batch)),
    on_error_(std::move(on_error)) {
  // The acceptor starts in start(), once the object is in place.
}

caf::expected<std::unique_ptr<batch_listener>>
batch_listener::start(const std::string& bind, uint16_t port,
                      uint64_t max_data_bytes,
                      std::shared_ptr<buffer_pool> pool,
                      batch_handler on_batch, error_handler on_error) {
  auto socket = detail::tcp_listen(bind, port, "batch streams");
  if (!socket)
    return std::move(socket.error());
  auto result = std::make_unique<batch_listener>(
    private_tag{}, socket->fd, socket->port, max_data_bytes, std::move(pool),
    std::move(on_batch), std::move(on_error));
  result->acceptor_ = std::thread{[self = result.get()] {
    self->accept_loop();
  }};
  return result;
}

batch_listener::~batch_listener() {
  stopping_ = true;
  // shutdown() wakes a thread blocked in accept() or recv() on Linux.
  ::shutdown(fd_, SHUT_RDWR);
  if (acceptor_.joinable())
    acceptor_.join();
  ::close(fd_);
  std::lock_guard<std::mutex> guard{streams_mutex_};
  for (auto& s : streams_) {
    ::shutdown(s.fd, SHUT_RDWR);
    s.reader.join();
    ::close(s.fd);
  }
}

void batch_listener::accept_loop() {
  while (!stopping_) {
    sockaddr_storage from{};
    socklen_t len = sizeof(from);
    int fd = ::accept4(fd_, reinterpret_cast<sockaddr*>(&from), &len,
                       SOCK_CLOEXEC);
    if (fd < 0) {
      if (stopping_)
        return;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS
          || errno == ENOMEM) {
        on_error_("batch listener: cannot accept: " + system_reason(errno)
                  + "; retrying");
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      continue; // EINTR, ECONNABORTED and friends: the next one
    }
    auto peer = address_of(reinterpret_cast<sockaddr*>(&from));
    std::lock_guard<std::mutex> guard{streams_mutex_};
    // Reap streams that ended, so a stream of short-lived peers cannot
    // pile up threads.
    for (auto i = streams_.begin(); i != streams_.end();) {
      if (i->done) {
        i->reader.join();
        ::close(i->fd);
        i = streams_.erase(i);
      } else {
        ++i;
      }
    }
    auto& s = streams_.emplace_back();
    s.fd = fd;
    s.reader = std::thread{[this, &s, peer] { read_loop(s, peer); }};
  }
}

void batch_listener::read_loop(stream& s, const std::string& peer) {
  char prefix[frame_prefix_bytes];
  std::vector<char> header;
  size_t got = 0;
  auto fail = [&](const std::string& what) {
    if (!stopping_)
      on_error_("batch stream from " + peer + ": " + what
                + "; closing this stream");
    // The peer learns at once; the descriptor itself is closed by whoever
    // joins this thread, so its number cannot be reused under them.
    ::shutdown(s.fd, SHUT_RDWR);
    s.done = true;
  };
  for (;;) {
    auto r = read_exact(s.fd, prefix, sizeof(prefix), got);
    if (r == read_result::end_of_stream) { // the sender is done
      s.done = true;
      return;
    }
    if (r == read_result::failed)
      return fail("stream ended inside a frame's prefix ("
                  + std::to_string(got) + " of "
                  + std::to_string(frame_prefix_bytes) + " bytes)");
    auto pre = parse_frame_prefix(prefix, max_data_bytes_);
    if (!pre)
      return fail(describe(pre.error()));
    header.resize(pre->header_bytes);
    if (read_exact(s.fd, header.data(), header.size(), got) != read_result::ok)
      return fail("stream ended inside a frame's header");
    image_batch batch;
    if (auto err = decode_frame_header(header.data(), pre->header_bytes,
                                       pre->data_bytes, batch))
      return fail(describe(err));
    batch.data = pool_->acquire(pre->data_bytes);
    if (read_exact(s.fd, batch.data.data(), batch.data.size(), got)
        != read_result::ok) {
      pool_->release(std::move(batch.data));
      return fail("stream ended inside batch " + std::to_string(batch.batch_id)
                  + " (" + std::to_string(got) + " of "
                  + std::to_string(pre->data_bytes) + " bytes)");
    }
    ++frames_;
    on_batch_(std::move(batch));
  }
}

} // namespace stoker
