#include "transport/batch_channel.hpp"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "stoker/errors.hpp"
#include "transport/batch_frame.hpp"
#include "transport/sockets.hpp"

namespace stoker {

namespace {

std::string system_reason(int code) {
  return std::strerror(code);
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
    tls_(std::move(other.tls_)),
    head_(std::move(other.head_)) {
  other.fd_ = -1;
  other.tls_.reset();
}

batch_sender& batch_sender::operator=(batch_sender&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0)
      ::close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
    peer_ = std::move(other.peer_);
    tls_ = std::move(other.tls_);
    other.tls_.reset();
    head_ = std::move(other.head_);
  }
  return *this;
}

batch_sender::~batch_sender() {
  tls_.reset(); // before the socket it runs on
  if (fd_ >= 0)
    ::close(fd_);
}

caf::error batch_sender::fail(const std::string& what,
                              const std::string& why) {
  tls_.reset();
  ::close(fd_);
  fd_ = -1;
  return make_error(errc::io_failure,
                    "batch stream to " + peer_ + ": " + what + ": " + why);
}

caf::expected<batch_sender>
batch_sender::connect(const std::string& host, uint16_t port,
                      const stream_security& security) {
  auto fd = detail::tcp_connect(host, port, "a batch stream");
  if (!fd)
    return std::move(fd.error());
  batch_sender result{*fd, host + ":" + std::to_string(port)};
  if (security.tls) {
    auto stream = tls_stream::connect(*fd, *security.tls,
                                      security.handshake_timeout);
    if (!stream)
      return result.fail("refused over TLS", describe(stream.error()));
    result.tls_.emplace(std::move(*stream));
  }
  std::string hello{detail::stream_hello_magic, sizeof(detail::stream_hello_magic)};
  hello += security.token;
  hello.resize(sizeof(detail::stream_hello_magic) + detail::stream_token_chars, '\0');
  caf::error err;
  if (result.tls_) {
    err = result.tls_->write_all(hello.data(), hello.size());
  } else if (::send(*fd, hello.data(), hello.size(), MSG_NOSIGNAL)
             != static_cast<ssize_t>(hello.size())) {
    err = make_error(errc::io_failure, system_reason(errno));
  }
  if (err)
    return result.fail("cannot send its hello", describe(err));
  return result;
}

caf::error batch_sender::send(const image_batch& batch) {
  if (fd_ < 0)
    return make_error(errc::io_failure,
                      "batch stream to " + peer_ + " is closed");
  encode_frame_head(batch, head_);
  if (tls_) {
    auto err = tls_->write_all(head_.data(), head_.size());
    if (!err)
      err = tls_->write_all(batch.data.data(), batch.data.size());
    if (err)
      return fail("cannot send batch " + std::to_string(batch.batch_id),
                  describe(err));
    return caf::none;
  }
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

} // namespace stoker
