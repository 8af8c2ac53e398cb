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

// A stream's first bytes: this magic, then the listener's token.
constexpr char hello_magic[4] = {'S', 'T', 'K', 'B'};
constexpr size_t token_chars = 64;

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
  std::string hello{hello_magic, sizeof(hello_magic)};
  hello += security.token;
  hello.resize(sizeof(hello_magic) + token_chars, '\0');
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

// -- batch_listener -----------------------------------------------------------

batch_listener::batch_listener(private_tag, int fd, uint16_t port,
                               uint64_t max_data_bytes,
                               stream_security security,
                               std::shared_ptr<buffer_pool> pool,
                               batch_handler on_batch, error_handler on_error)
  : fd_(fd),
    port_(port),
    max_data_bytes_(max_data_bytes),
    security_(std::move(security)),
    pool_(std::move(pool)),
    on_batch_(std::move(on_batch)),
    on_error_(std::move(on_error)) {
  // The acceptor starts in start(), once the object is in place.
}

caf::expected<std::unique_ptr<batch_listener>>
batch_listener::start(const std::string& bind, uint16_t port,
                      uint64_t max_data_bytes, stream_security security,
                      std::shared_ptr<buffer_pool> pool,
                      batch_handler on_batch, error_handler on_error) {
  if (security.token.size() != token_chars)
    return make_error(errc::invalid_config,
                      "batch listener: expected a token of "
                        + std::to_string(token_chars) + " characters, got "
                        + std::to_string(security.token.size()));
  auto socket = detail::tcp_listen(bind, port, "batch streams");
  if (!socket)
    return std::move(socket.error());
  auto result = std::make_unique<batch_listener>(
    private_tag{}, socket->fd, socket->port, max_data_bytes,
    std::move(security), std::move(pool), std::move(on_batch),
    std::move(on_error));
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
    std::string peer;
    int fd = detail::tcp_accept(fd_, peer);
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
  auto refuse = [&](const std::string& why) {
    ++refused_;
    fail("refused: " + why);
  };
  // Who is there: TLS (a certificate of the cluster's CA), then the hello
  // with this run's token, within the handshake timeout.
  auto deadline = std::chrono::steady_clock::now()
                  + security_.handshake_timeout;
  std::optional<tls_stream> tls;
  if (security_.tls) {
    auto accepted = tls_stream::accept(s.fd, *security_.tls,
                                       security_.handshake_timeout);
    if (!accepted)
      return refuse(describe(accepted.error()));
    tls.emplace(std::move(*accepted));
  }
  auto read_n = [&](char* at, size_t size) {
    if (tls)
      return tls->read_exact(at, size, got) ? read_result::ok
             : got == 0                     ? read_result::end_of_stream
                                            : read_result::failed;
    return read_exact(s.fd, at, size, got);
  };
  char hello[sizeof(hello_magic) + token_chars];
  bool hello_ok = false;
  if (tls) {
    hello_ok = tls->read_exact(hello, sizeof(hello), got, deadline);
  } else {
    timeval limit{};
    limit.tv_sec = security_.handshake_timeout.count() / 1000;
    limit.tv_usec = (security_.handshake_timeout.count() % 1000) * 1000;
    ::setsockopt(s.fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
    hello_ok = read_exact(s.fd, hello, sizeof(hello), got) == read_result::ok;
    timeval forever{};
    ::setsockopt(s.fd, SOL_SOCKET, SO_RCVTIMEO, &forever, sizeof(forever));
  }
  if (!hello_ok)
    return refuse("no hello within "
                  + std::to_string(security_.handshake_timeout.count())
                  + " ms (" + std::to_string(got)
                  + " bytes): not a Stoker worker");
  if (std::memcmp(hello, hello_magic, sizeof(hello_magic)) != 0
      || !same_secret(std::string(hello + sizeof(hello_magic), token_chars),
                      security_.token))
    return refuse("its hello lacks this run's stream token (not a worker "
                  "of this run)");
  for (;;) {
    auto r = read_n(prefix, sizeof(prefix));
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
    if (read_n(header.data(), header.size()) != read_result::ok)
      return fail("stream ended inside a frame's header");
    image_batch batch;
    if (auto err = decode_frame_header(header.data(), pre->header_bytes,
                                       pre->data_bytes, batch))
      return fail(describe(err));
    batch.data = pool_->acquire(pre->data_bytes);
    if (read_n(batch.data.data(), batch.data.size()) != read_result::ok) {
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
