#include "transport/gate.hpp"

#include <cerrno>
#include <cstring>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "stoker/errors.hpp"
#include "transport/sockets.hpp"

namespace stoker {

// -- basp_guard ---------------------------------------------------------------

std::string basp_guard::feed(const char* data, size_t size) {
  // CAF 0.17's basp::message_type: server_handshake .. heartbeat.
  constexpr unsigned last_operation = 6;
  while (size > 0) {
    if (skip_ > 0) {
      auto n = static_cast<size_t>(std::min<uint64_t>(skip_, size));
      skip_ -= n;
      data += n;
      size -= n;
      continue;
    }
    auto n = std::min(header_bytes - have_, size);
    std::memcpy(header_ + have_, data, n);
    have_ += n;
    data += n;
    size -= n;
    if (have_ < header_bytes)
      break;
    have_ = 0;
    bool first = first_;
    first_ = false;
    if (first && header_[0] == 0x16 && header_[1] == 0x03)
      return "the peer speaks TLS (its first bytes are a TLS ClientHello) "
             "and this node has no tls.* set; expected tls.* on every node "
             "of the cluster, or on none";
    if (header_[0] > last_operation)
      return "not a CAF message (BASP operation "
             + std::to_string(header_[0]) + ")";
    // The payload's length: bytes 4-7, in network order.
    uint64_t payload = (uint64_t{header_[4]} << 24)
                       | (uint64_t{header_[5]} << 16)
                       | (uint64_t{header_[6]} << 8) | uint64_t{header_[7]};
    if (payload > max_)
      return "a CAF message declares " + std::to_string(payload)
             + " bytes of payload; expected at most " + std::to_string(max_)
             + " (cluster.max-message-bytes)";
    skip_ = payload;
  }
  return {};
}

namespace {

using clock_type = std::chrono::steady_clock;


// Bytes on their way from one end to the other.
struct direction {
  std::vector<char> buf = std::vector<char>(64 * 1024);
  size_t off = 0;
  size_t len = 0;
  bool ended = false;
  short src_events = 0;
  short dst_events = 0;
  uint64_t seen = 0; // bytes read from the source so far
  basp_guard guard;

  explicit direction(uint64_t max) : guard(max == 0 ? UINT64_MAX : max) {}
};

short events_for(tls_stream::io r) {
  return r == tls_stream::io::want_write ? POLLOUT : POLLIN;
}

// Moves what it can from `src` to `dst` without blocking. False when the
// relay is over: `why` says why, or is empty after a clean end.
bool pump(socket_end& src, socket_end& dst, direction& d, bool check,
          std::string& why) {
  d.src_events = d.dst_events = 0;
  for (bool progress = true; progress;) {
    progress = false;
    if (d.len == 0 && !d.ended) {
      size_t n = 0;
      auto r = src.read(d.buf.data(), d.buf.size(), n);
      if (r == tls_stream::io::done) {
        d.seen += n;
        if (check)
          if (auto refused = d.guard.feed(d.buf.data(), n); !refused.empty()) {
            why = refused;
            return false;
          }
        d.off = 0;
        d.len = n;
        progress = true;
      } else if (r == tls_stream::io::closed) {
        d.ended = true;
      } else if (r == tls_stream::io::failed) {
        why = src.tls != nullptr ? src.tls->last_error()
                                 : std::string{std::strerror(errno)};
        return false;
      } else {
        d.src_events |= events_for(r);
      }
    }
    if (d.len > 0) {
      size_t n = 0;
      auto r = dst.write(d.buf.data() + d.off, d.len, n);
      if (r == tls_stream::io::done) {
        d.off += n;
        d.len -= n;
        progress = n > 0;
      } else if (r == tls_stream::io::want_read
                 || r == tls_stream::io::want_write) {
        d.dst_events |= events_for(r);
      } else {
        return false; // the other side went away: a clean end for us
      }
    }
  }
  return !(d.ended && d.len == 0);
}

// Relays between `outer` and `inner` until one side ends or `stopping`.
// Returns why it ended ("" for a clean close). An outer side that has
// sent nothing by `first_by` is closed (its slot is not held by silence).
std::string relay(socket_end outer, socket_end inner, uint64_t max_message,
                  const std::atomic<bool>& stopping,
                  clock_type::time_point first_by = clock_type::time_point::max(),
                  std::chrono::milliseconds first_within = {}) {
  direction in{max_message};  // outer -> inner
  direction out{max_message}; // inner -> outer
  std::string why;
  bool check = max_message > 0;
  while (!stopping) {
    if (!pump(outer, inner, in, check, why)
        || !pump(inner, outer, out, check, why))
      return why;
    int timeout = outer.pending() || inner.pending() ? 0 : 1000;
    if (in.seen == 0) {
      auto now = clock_type::now();
      if (now >= first_by)
        return "sent nothing within "
               + std::to_string(first_within.count())
               + " ms of being let in (cluster.connect-timeout); closed";
      if (first_by != clock_type::time_point::max())
        timeout = std::min<int>(
          timeout, static_cast<int>(
                     std::chrono::duration_cast<std::chrono::milliseconds>(
                       first_by - now)
                       .count())
                     + 1);
    }
    pollfd fds[2] = {
      {outer.fd, static_cast<short>(in.src_events | out.dst_events), 0},
      {inner.fd, static_cast<short>(out.src_events | in.dst_events), 0}};
    ::poll(fds, 2, timeout);
  }
  return why;
}

// Sends `bytes` on a fresh socket without waiting: the preface fits any
// socket buffer; a peer that does not read it loses nothing of ours.
void send_now(int fd, const std::string& bytes) {
  ::send(fd, bytes.data(), bytes.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
}

void say(const gate_options& options, const std::string& what) {
  if (options.log)
    options.log(what);
}

} // namespace

// -- gate ---------------------------------------------------------------------

gate_options service_gate_options(std::string what,
                                  std::shared_ptr<const tls_context> tls,
                                  std::shared_ptr<const log_sink> log) {
  gate_options options;
  options.what = std::move(what);
  options.tls = std::move(tls);
  options.log = [log = std::move(log)](const std::string& line) {
    log->warning("stoker-node: " + line);
  };
  return options;
}

gate::gate(private_tag, uint16_t port, uint16_t inner_port,
           gate_options options)
  : port_(port), inner_port_(inner_port), options_(std::move(options)),
    refusals_(options_.log_interval) {
  // The acceptor starts in open(), once the object is in place.
}

caf::expected<std::unique_ptr<gate>>
gate::open(const std::string& bind, uint16_t port, uint16_t inner_port,
           gate_options options) {
  auto socket = detail::tcp_listen(bind, port, options.what);
  if (!socket)
    return std::move(socket.error());
  auto result = std::make_unique<gate>(private_tag{}, socket->port,
                                       inner_port, std::move(options));
  auto* self = result.get();
  acceptor::hooks hooks;
  hooks.max_open = self->options_.max_connections;
  hooks.wait_when_full = false; // a peer hears why, at once
  hooks.refuse_if = [self](const std::list<acceptor::connection>& open,
                           const std::string& address) {
    auto& o = self->options_;
    size_t from_peer = 0;
    for (auto& c : open)
      from_peer += c.address == address ? 1 : 0;
    if (open.size() >= o.max_connections)
      return "already " + std::to_string(open.size())
             + " connections open, the most it takes at once; try again";
    if (from_peer >= o.max_per_peer)
      return std::to_string(from_peer) + " connections from " + address
             + " already open, the most one address may hold "
               "(cluster.max-connections-per-peer = "
             + std::to_string(o.max_per_peer) + "); try again";
    return std::string{};
  };
  hooks.refused = [self](int fd, const std::string& peer,
                         const std::string& why) {
    ++self->refused_;
    if (self->options_.preface)
      send_now(fd, gate_preface('R', why));
    self->say_refused(peer, why);
  };
  hooks.serve = [self](acceptor::connection& c) { self->serve(c); };
  hooks.say = [self](const std::string& line) {
    say(self->options_, self->options_.what + ": " + line);
  };
  result->acceptor_ = std::make_unique<acceptor>(socket->fd, std::move(hooks));
  return result;
}

gate::~gate() {
  stopping_ = true;
  if (acceptor_)
    acceptor_->stop(); // wakes, joins and closes every connection
}

void gate::say_refused(const std::string& peer, const std::string& why) {
  if (stopping_)
    return;
  auto line = refusals_.note(peer, why,
                             options_.what + ": refused " + peer + ": " + why,
                             clock_type::now());
  if (!line.empty())
    say(options_, line);
}

void gate::serve(acceptor::connection& c) {
  const auto& peer = c.peer;
  auto refuse = [&](const std::string& why) {
    ++refused_;
    say_refused(peer, why);
    ::shutdown(c.fd, SHUT_RDWR);
    c.done = true;
  };
  if (options_.preface) {
    auto timeout = options_.handshake_timeout;
    switch (read_hello(c.fd, clock_type::now() + timeout)) {
      case first_bytes::hello:
        send_now(c.fd, gate_preface(options_.tls ? 'T' : 'P'));
        break;
      case first_bytes::other:
        break;
      case first_bytes::closed:
        return refuse("the peer closed the connection before saying "
                      "anything");
      case first_bytes::silent:
        return refuse("sent nothing within "
                      + std::to_string(timeout.count())
                      + " ms (cluster.connect-timeout); closed");
    }
  }
  std::optional<tls_stream> tls;
  if (options_.tls) {
    auto accepted = tls_stream::accept(c.fd, *options_.tls,
                                       options_.handshake_timeout);
    if (!accepted)
      return refuse(describe(accepted.error()));
    tls.emplace(std::move(*accepted));
  }
  auto inner = detail::tcp_connect("127.0.0.1", inner_port_, "a relay");
  if (!inner) {
    if (!stopping_)
      say(options_, options_.what + ": " + describe(inner.error()));
    ::shutdown(c.fd, SHUT_RDWR);
    c.done = true;
    return;
  }
  c.extra = *inner;
  if (stopping_) { // stop() may have missed the inner socket
    c.done = true;
    return;
  }
  ++admitted_;
  // A BASP peer speaks as soon as CAF's handshake reaches it: one that
  // says nothing only holds a slot.
  bool basp = options_.max_message_bytes > 0;
  auto why = relay(socket_end{c.fd, tls ? &*tls : nullptr},
                   socket_end{*inner, nullptr}, options_.max_message_bytes,
                   stopping_,
                   basp ? clock_type::now() + options_.handshake_timeout
                        : clock_type::time_point::max(),
                   options_.handshake_timeout);
  if (!why.empty() && !stopping_) {
    ++refused_;
    auto line = refusals_.note(peer, why,
                               options_.what + ": closed the connection from "
                                 + peer + ": " + why,
                               clock_type::now());
    if (!line.empty())
      say(options_, line);
  }
  ::shutdown(c.fd, SHUT_RDWR);
  ::shutdown(*inner, SHUT_RDWR);
  c.done = true;
}

// -- tunnel -------------------------------------------------------------------

tunnel::tunnel(private_tag, int listener, uint16_t local_port, int remote,
               std::optional<tls_stream> stream, std::string peer,
               gate_options options)
  : listener_(listener),
    local_port_(local_port),
    remote_(remote),
    stream_(std::move(stream)),
    peer_(std::move(peer)),
    options_(std::move(options)) {
  // The relay starts in open(), once the object is in place.
}

caf::expected<std::unique_ptr<tunnel>>
tunnel::open(const std::string& host, uint16_t port, gate_options options) {
  auto where = host + ":" + std::to_string(port);
  auto remote = detail::tcp_connect(host, port, options.what);
  if (!remote)
    return std::move(remote.error());
  auto fail = [&](errc code, const std::string& why) {
    ::close(*remote);
    return make_error(code, options.what + " at " + where + ": " + why);
  };
  auto deadline = clock_type::now() + options.handshake_timeout;
  auto hello = gate_hello();
  ::send(*remote, hello.data(), hello.size(), MSG_NOSIGNAL);
  auto verdict = read_gate_preface(*remote, deadline);
  if (!verdict) // no answer (io_failure) is retried, a wrong one is not
    return fail(is(verdict.error(), errc::io_failure) ? errc::io_failure
                                                      : errc::run_failure,
                describe(verdict.error()));
  if (verdict->verdict == 'R') // busy: worth another try
    return fail(errc::io_failure, "refused this connection: "
                                    + verdict->why);
  if (verdict->verdict == 'T' && !options.tls)
    return fail(errc::run_failure,
                "it requires mutual TLS and this node has no tls.* set: set "
                "tls.certificate, tls.key and tls.ca-file, or tls.dir, here "
                "too");
  std::optional<tls_stream> stream;
  if (verdict->verdict == 'P' && options.tls) {
    // Our ClientHello lets the other side say what is wrong there too.
    (void) tls_stream::connect(*remote, *options.tls,
                               std::chrono::milliseconds(500));
    return fail(errc::run_failure,
                "it speaks plain TCP (no tls.* set there) and this node has "
                "tls.* set; expected the same tls.* on every node of the "
                "cluster, or on none");
  }
  if (options.tls) {
    auto opened = tls_stream::connect(*remote, *options.tls,
                                      options.handshake_timeout);
    // Not worth retrying: the same certificates meet the same check.
    if (!opened)
      return fail(errc::run_failure, "TLS failed: " + describe(opened.error()));
    stream.emplace(std::move(*opened));
  }
  auto local = detail::tcp_listen("127.0.0.1", 0, "a tunnel to " + where);
  if (!local) {
    ::close(*remote);
    return std::move(local.error());
  }
  auto result = std::make_unique<tunnel>(private_tag{}, local->fd,
                                         local->port, *remote,
                                         std::move(stream), where,
                                         std::move(options));
  result->thread_ = std::thread{[self = result.get()] { self->run(); }};
  return result;
}

tunnel::~tunnel() {
  stopping_ = true;
  ::shutdown(listener_, SHUT_RDWR);
  ::shutdown(remote_, SHUT_RDWR);
  if (local_ >= 0)
    ::shutdown(local_, SHUT_RDWR);
  if (thread_.joinable())
    thread_.join();
  ::close(listener_);
  ::close(remote_);
  if (local_ >= 0)
    ::close(local_);
}

void tunnel::run() {
  // One local client: the connect that follows open(), within the
  // handshake timeout.
  if (wait_for(listener_, false,
               clock_type::now() + options_.handshake_timeout)
      && !stopping_) {
    std::string peer;
    local_ = detail::tcp_accept(listener_, peer);
  }
  ::shutdown(listener_, SHUT_RDWR);
  if (local_ >= 0 && !stopping_) {
    auto why = relay(socket_end{remote_, stream_ ? &*stream_ : nullptr},
                     socket_end{local_.load(), nullptr},
                     options_.max_message_bytes, stopping_);
    if (!why.empty() && !stopping_)
      say(options_, options_.what + " at " + peer_ + ": connection closed: "
                      + why);
  }
  ::shutdown(remote_, SHUT_RDWR);
  if (local_ >= 0)
    ::shutdown(local_, SHUT_RDWR);
  done_ = true;
}

} // namespace stoker
