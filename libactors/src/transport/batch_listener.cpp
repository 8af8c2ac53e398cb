#include <cerrno>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <optional>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "stoker/errors.hpp"
#include "core/checksum.hpp"
#include "transport/batch_channel.hpp"
#include "transport/batch_frame.hpp"
#include "transport/sockets.hpp"

// The receiving end of the batch stream (declared in batch_channel.hpp):
// admission threads, then one epoll loop for every admitted stream.

namespace stoker {

namespace {

using clock_type = std::chrono::steady_clock;

// A plain stream gives up the loop after this many bytes, so one fast
// sender cannot starve the others (level-triggered: it is back next round).
constexpr size_t fair_share_bytes = 16u << 20;

// At most this many connections in admission at once; more wait in the
// kernel's backlog until one is through.
constexpr size_t max_admissions = 64;

// Reads exactly `size` bytes from a blocking socket; `got` says how far it
// came.
bool recv_exact(int fd, char* at, size_t size, size_t& got) {
  got = 0;
  while (got < size) {
    auto n = ::recv(fd, at + got, size - got, 0);
    if (n > 0)
      got += static_cast<size_t>(n);
    else if (n == 0 || errno != EINTR)
      return false;
  }
  return true;
}

} // namespace

/// One admitted stream: where it is in its current frame. Owned by the
/// event loop's thread.
struct batch_listener::open_stream {
  enum class part { prefix, header, data };

  int fd = -1;
  std::string peer;
  std::optional<tls_stream> tls;
  part at = part::prefix;
  size_t have = 0; // bytes of the current part read
  char prefix[frame_prefix_bytes] = {};
  frame_prefix pre;
  std::vector<char> header;
  image_batch batch;
  size_t compared = 0;   // images of `batch` compared with their checksums
  bool all_match = true; // and every one of them matched

  ~open_stream() {
    tls.reset(); // before the socket it runs on
    if (fd < 0)
      return;
    // End with a FIN, not a reset: a refused peer should read an orderly
    // close, which unread bytes left in the queue would turn into a reset.
    ::shutdown(fd, SHUT_WR);
    char sink[4096];
    for (int i = 0; i < 256 && ::recv(fd, sink, sizeof sink, MSG_DONTWAIT) > 0;
         ++i) {
    }
    ::close(fd);
  }
};

batch_listener::batch_listener(private_tag, int epoll_fd, int wake_fd,
                               uint16_t port, uint64_t max_data_bytes,
                               stream_security security,
                               std::shared_ptr<buffer_pool> pool,
                               batch_handler on_batch, error_handler on_error)
  : epoll_fd_(epoll_fd),
    wake_fd_(wake_fd),
    port_(port),
    max_data_bytes_(max_data_bytes),
    security_(std::move(security)),
    pool_(std::move(pool)),
    on_batch_(std::move(on_batch)),
    on_error_(std::move(on_error)) {
  // The threads start in start(), once the object is in place.
}

caf::expected<std::unique_ptr<batch_listener>>
batch_listener::start(const std::string& bind, uint16_t port,
                      uint64_t max_data_bytes, stream_security security,
                      std::shared_ptr<buffer_pool> pool,
                      batch_handler on_batch, error_handler on_error) {
  if (security.token.size() != detail::stream_token_chars)
    return make_error(errc::invalid_config,
                      "batch listener: expected a token of "
                        + std::to_string(detail::stream_token_chars)
                        + " characters, got "
                        + std::to_string(security.token.size()));
  auto socket = detail::tcp_listen(bind, port, "batch streams");
  if (!socket)
    return std::move(socket.error());
  int ep = ::epoll_create1(EPOLL_CLOEXEC);
  int wake = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = wake;
  if (ep < 0 || wake < 0 || ::epoll_ctl(ep, EPOLL_CTL_ADD, wake, &ev) != 0) {
    auto why = std::string{std::strerror(errno)};
    for (int fd : {ep, wake, socket->fd})
      if (fd >= 0)
        ::close(fd);
    return make_error(errc::io_failure,
                      "batch listener: cannot set up its event loop: " + why);
  }
  auto result = std::make_unique<batch_listener>(
    private_tag{}, ep, wake, socket->port, max_data_bytes,
    std::move(security), std::move(pool), std::move(on_batch),
    std::move(on_error));
  auto* self = result.get();
  result->loop_ = std::thread{[self] { self->event_loop(); }};
  acceptor::hooks hooks;
  hooks.max_open = max_admissions;
  hooks.wait_when_full = true; // each admission is bounded by its timeout
  hooks.serve = [self](acceptor::connection& c) { self->admit(c); };
  hooks.say = [self](const std::string& line) {
    self->on_error_("batch listener: " + line);
  };
  result->acceptor_ = std::make_unique<acceptor>(socket->fd, std::move(hooks));
  return result;
}

batch_listener::~batch_listener() {
  stopping_ = true;
  // Wakes, joins and closes every admission; a stream already handed over
  // is the loop's.
  if (acceptor_)
    acceptor_->stop();
  uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(wake_fd_, &one, sizeof one);
  if (loop_.joinable())
    loop_.join();
  handed_.clear();
  ::close(epoll_fd_);
  ::close(wake_fd_);
}

void batch_listener::fail(const std::string& peer, const std::string& what) {
  if (!stopping_)
    on_error_("batch stream from " + peer + ": " + what
              + "; closing this stream");
}

void batch_listener::admit(acceptor::connection& a) {
  const auto& peer = a.peer;
  auto refuse = [&](const std::string& why) {
    ++refused_;
    fail(peer, "refused: " + why);
    ::shutdown(a.fd, SHUT_RDWR);
    a.done = true;
  };
  // Who is there: TLS (a certificate of the cluster's CA), then the hello
  // with this run's token, within the handshake timeout.
  auto deadline = clock_type::now() + security_.handshake_timeout;
  std::optional<tls_stream> tls;
  if (security_.tls) {
    auto accepted = tls_stream::accept(a.fd, *security_.tls,
                                       security_.handshake_timeout);
    if (!accepted)
      return refuse(describe(accepted.error()));
    tls.emplace(std::move(*accepted));
  }
  char hello[sizeof(detail::stream_hello_magic) + detail::stream_token_chars];
  size_t got = 0;
  bool hello_ok = false;
  if (tls) {
    hello_ok = tls->read_exact(hello, sizeof(hello), got, deadline);
  } else {
    timeval limit{};
    limit.tv_sec = security_.handshake_timeout.count() / 1000;
    limit.tv_usec = (security_.handshake_timeout.count() % 1000) * 1000;
    ::setsockopt(a.fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
    hello_ok = recv_exact(a.fd, hello, sizeof(hello), got);
    auto flags = ::fcntl(a.fd, F_GETFL, 0);
    ::fcntl(a.fd, F_SETFL, flags | O_NONBLOCK); // the loop reads it now
  }
  if (!hello_ok)
    return refuse("no hello within "
                  + std::to_string(security_.handshake_timeout.count())
                  + " ms (" + std::to_string(got)
                  + " bytes): not a Stoker worker");
  const auto magic = sizeof(detail::stream_hello_magic);
  if (std::memcmp(hello, detail::stream_hello_magic, magic) != 0
      || !same_secret(std::string(hello + magic, detail::stream_token_chars),
                      security_.token))
    return refuse("its hello lacks this run's stream token (not a worker "
                  "of this run)");
  auto s = std::make_unique<open_stream>();
  s->fd = a.fd;
  s->peer = peer;
  s->tls = std::move(tls);
  {
    std::lock_guard<std::mutex> guard{mutex_};
    if (stopping_) { // the destructor closes the descriptor
      s->fd = -1;
      s->tls.reset();
      a.done = true;
      return;
    }
    a.kept = true;
    handed_.push_back(std::move(s));
  }
  uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(wake_fd_, &one, sizeof one);
  a.done = true;
}

void batch_listener::event_loop() {
  std::map<int, std::unique_ptr<open_stream>> streams;
  auto close_stream = [&](int fd) {
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
    streams.erase(fd); // closes it
    open_ = streams.size();
  };
  epoll_event events[64];
  while (!stopping_) {
    int n = ::epoll_wait(epoll_fd_, events, 64, -1);
    if (n < 0 && errno != EINTR) {
      on_error_("batch listener: its event loop failed: "
                + std::string{std::strerror(errno)});
      return;
    }
    for (int i = 0; i < n && !stopping_; ++i) {
      int fd = events[i].data.fd;
      if (fd == wake_fd_) {
        uint64_t count = 0;
        [[maybe_unused]] auto r = ::read(wake_fd_, &count, sizeof count);
        std::vector<std::unique_ptr<open_stream>> fresh;
        {
          std::lock_guard<std::mutex> guard{mutex_};
          fresh.swap(handed_);
        }
        for (auto& s : fresh) {
          int sfd = s->fd;
          epoll_event ev{};
          ev.events = EPOLLIN | EPOLLRDHUP;
          ev.data.fd = sfd;
          ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, sfd, &ev);
          auto& placed = streams[sfd] = std::move(s);
          open_ = streams.size();
          // Bytes may have come with the hello (or wait inside TLS).
          if (!pump(*placed))
            close_stream(sfd);
        }
        continue;
      }
      auto found = streams.find(fd);
      if (found != streams.end() && !pump(*found->second))
        close_stream(fd);
    }
  }
  open_ = 0;
}

bool batch_listener::pump(open_stream& s) {
  size_t budget = fair_share_bytes;
  for (;;) {
    char* at = nullptr;
    size_t size = 0;
    switch (s.at) {
      case open_stream::part::prefix:
        at = s.prefix;
        size = frame_prefix_bytes;
        break;
      case open_stream::part::header:
        at = s.header.data();
        size = s.header.size();
        break;
      case open_stream::part::data:
        at = s.batch.data.data();
        size = s.batch.data.size();
        break;
    }
    size_t n = 0;
    socket_end end{s.fd, s.tls ? &*s.tls : nullptr};
    auto r = end.read(at + s.have, size - s.have, n);
    if (r == tls_stream::io::want_read || r == tls_stream::io::want_write)
      return true; // the loop wakes us when there is more
    if (r != tls_stream::io::done) {
      bool clean = r == tls_stream::io::closed
                   && s.at == open_stream::part::prefix && s.have == 0;
      if (clean)
        return false; // the sender is done
      switch (s.at) {
        case open_stream::part::prefix:
          fail(s.peer, "stream ended inside a frame's prefix ("
                         + std::to_string(s.have) + " of "
                         + std::to_string(frame_prefix_bytes) + " bytes)");
          break;
        case open_stream::part::header:
          fail(s.peer, "stream ended inside a frame's header");
          break;
        case open_stream::part::data:
          fail(s.peer, "stream ended inside batch "
                         + std::to_string(s.batch.batch_id) + " ("
                         + std::to_string(s.have) + " of "
                         + std::to_string(s.batch.data.size()) + " bytes)");
          pool_->release(std::move(s.batch.data));
          break;
      }
      return false;
    }
    s.have += n;
    if (s.at == open_stream::part::data)
      compare_arrived(s);
    if (s.have == size && !advance(s))
      return false;
    budget -= std::min(budget, n);
    if (budget == 0 && !end.pending())
      return true; // others' turn; level-triggered, so back soon
  }
}

void batch_listener::compare_arrived(open_stream& s) {
  auto& b = s.batch;
  auto bytes = b.image_bytes();
  if (bytes == 0 || b.checksums.size() != b.size())
    return; // the trainer's check names what is wrong
  for (; s.compared < b.size() && (s.compared + 1) * bytes <= s.have;
       ++s.compared)
    s.all_match = s.all_match
                  && checksum64(b.image_data(s.compared), bytes)
                       == b.checksums[s.compared];
}

bool batch_listener::advance(open_stream& s) {
  s.have = 0;
  switch (s.at) {
    case open_stream::part::prefix: {
      auto pre = parse_frame_prefix(s.prefix, max_data_bytes_);
      if (!pre) {
        fail(s.peer, describe(pre.error()));
        return false;
      }
      s.pre = *pre;
      s.header.resize(pre->header_bytes);
      s.at = open_stream::part::header;
      return s.header.empty() ? advance(s) : true;
    }
    case open_stream::part::header: {
      s.batch = image_batch{};
      if (auto err = decode_frame_header(s.header.data(), s.pre.header_bytes,
                                         s.pre.data_bytes, s.batch)) {
        fail(s.peer, describe(err));
        return false;
      }
      s.batch.data = pool_->acquire(s.pre.data_bytes);
      s.compared = 0;
      s.all_match = true;
      s.at = open_stream::part::data;
      return s.batch.data.empty() ? advance(s) : true;
    }
    case open_stream::part::data:
      ++frames_;
      // A mismatch leaves it unverified: the trainer's check names it.
      // (Without one checksum per image none was compared: compared < size.)
      s.batch.verified_here = s.all_match && s.compared == s.batch.size();
      on_batch_(std::move(s.batch));
      s.batch = image_batch{};
      s.at = open_stream::part::prefix;
      return true;
  }
  return true;
}

} // namespace stoker
