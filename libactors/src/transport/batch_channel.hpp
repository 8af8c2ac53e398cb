#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <caf/error.hpp>
#include <caf/expected.hpp>

#include "stoker/messages.hpp"
#include "transport/acceptor.hpp"
#include "transport/buffer_pool.hpp"
#include "transport/tls.hpp"

namespace stoker {

/// The bulk path for image batches between nodes: one TCP stream from each
/// worker actor to each trainer node, carrying batch frames (batch_frame.hpp)
/// beside CAF's middleman, which keeps the small messages (leases, reports,
/// acknowledgements). CAF 0.17 would serialize a 38 MB batch into a fresh
/// buffer, copy it again into its write queue and deserialize it into a
/// third (about 40 ms per batch here); this stream writes the image bytes
/// straight from the batch and reads them straight into a recycled buffer.

namespace detail {

/// A stream's first bytes (its hello): this magic, then the listener's
/// token of this many characters.
inline constexpr char stream_hello_magic[4] = {'S', 'T', 'K', 'B'};
inline constexpr size_t stream_token_chars = 64;

} // namespace detail

/// How a batch stream proves itself. Every stream opens with a hello that
/// carries the listener's per-run token (handed to workers over CAF), so a
/// stranger who reaches the port cannot write batches into training even
/// without TLS; with TLS, the stream is also encrypted and both ends show a
/// certificate of the cluster's CA.
struct stream_security {
  /// 64 hex digits (random_token()); the listener closes a stream whose
  /// hello does not carry it.
  std::string token;
  /// Mutual TLS; null: plain TCP.
  std::shared_ptr<const tls_context> tls;
  /// How long a peer has for the TLS handshake and the hello.
  std::chrono::milliseconds handshake_timeout{10000};
};

/// The sending end, owned by one worker actor (and used on its thread only).
/// Move-only; closes the stream when destroyed.
class batch_sender {
public:
  /// Connects to a batch_listener at host:port (a name or an address),
  /// with TLS if `security` has it, and sends the hello. Errors
  /// (errc::io_failure) name the address and the reason.
  static caf::expected<batch_sender>
  connect(const std::string& host, uint16_t port,
          const stream_security& security);

  batch_sender(batch_sender&& other) noexcept;
  batch_sender& operator=(batch_sender&& other) noexcept;
  batch_sender(const batch_sender&) = delete;
  batch_sender& operator=(const batch_sender&) = delete;
  ~batch_sender();

  /// Writes one frame; blocks until the kernel took all of it (TCP's flow
  /// control is the back-pressure). The batch stays the caller's. An error
  /// (errc::io_failure) leaves the stream unusable.
  caf::error send(const image_batch& batch);

  /// Where it is connected, as "host:port".
  const std::string& peer() const noexcept { return peer_; }

private:
  batch_sender(int fd, std::string peer);

  caf::error fail(const std::string& what, const std::string& why);

  int fd_ = -1;
  std::string peer_;
  std::optional<tls_stream> tls_;
  std::vector<char> head_; // reused for every frame's prefix and header
};

/// The receiving end, on a trainer node: accepts any number of senders.
/// Each new connection is admitted on a short-lived thread of its own (the
/// TLS handshake and the hello, within the handshake timeout, so a slow or
/// silent peer holds up nobody else); admitted streams are then all read
/// by one event-loop thread (epoll), so hundreds of workers cost one
/// thread, not hundreds. Every complete, well-formed frame becomes an
/// image_batch handed to `on_batch` (on the loop's thread; the callee owns
/// it; its `data` comes from the pool, so give it back with
/// buffer_pool::release when done). Each image is compared with its
/// checksum as soon as it has arrived, while still in cache; a batch whose
/// images all match is handed over with `verified_here` set (see
/// image_batch), one with a mismatch without it, for the trainer's check
/// to name. A malformed frame or a peer that
/// speaks another protocol closes that one stream and is reported to
/// `on_error`; the listener and the other streams go on; so does a stream
/// refused for its hello or its certificate (counted in refused()). The
/// destructor stops everything and joins every thread.
class batch_listener {
public:
  using batch_handler = std::function<void(image_batch&&)>;
  using error_handler = std::function<void(const std::string&)>;

  /// Listens on bind:port (port 0: any free port). `max_data_bytes` bounds
  /// the image bytes of one frame (the run's largest batch), so a peer
  /// cannot make the node allocate at will.
  static caf::expected<std::unique_ptr<batch_listener>>
  start(const std::string& bind, uint16_t port, uint64_t max_data_bytes,
        stream_security security, std::shared_ptr<buffer_pool> pool,
        batch_handler on_batch, error_handler on_error);

  ~batch_listener();
  batch_listener(const batch_listener&) = delete;
  batch_listener& operator=(const batch_listener&) = delete;

  /// The port it listens on.
  uint16_t port() const noexcept { return port_; }

  /// Frames received so far, over all streams.
  uint64_t frames() const noexcept { return frames_.load(); }

  /// Streams refused so far: no or a wrong token, no or a bad certificate.
  uint64_t refused() const noexcept { return refused_.load(); }

  /// Streams admitted and being read now.
  size_t open_streams() const noexcept { return open_.load(); }

private:
  struct private_tag {}; // only start() constructs

public:
  batch_listener(private_tag, int epoll_fd, int wake_fd,
                 uint16_t port, uint64_t max_data_bytes,
                 stream_security security, std::shared_ptr<buffer_pool> pool,
                 batch_handler on_batch, error_handler on_error);

  struct open_stream; // one admitted stream's read state (the loop's)

private:
  // Admits one accepted connection, on its own thread: TLS, the hello,
  // then the stream handed to the loop (`kept`).
  void admit(acceptor::connection& c);
  void event_loop();
  // Reads what stream `s` has; false when it is over (ended or failed).
  bool pump(open_stream& s);
  // Compares every image of the batch being read that has fully arrived
  // with its checksum, while it is still in cache.
  void compare_arrived(open_stream& s);
  // A frame part is complete: on to the next; false on a malformed frame.
  bool advance(open_stream& s);
  void fail(const std::string& peer, const std::string& what);

  int epoll_fd_;
  int wake_fd_; // an eventfd: new streams, or stop
  uint16_t port_;
  uint64_t max_data_bytes_;
  stream_security security_;
  std::shared_ptr<buffer_pool> pool_;
  batch_handler on_batch_;
  error_handler on_error_;
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> frames_{0};
  std::atomic<uint64_t> refused_{0};
  std::atomic<size_t> open_{0};
  std::mutex mutex_; // handed_, and a stream's hand-over
  std::vector<std::unique_ptr<open_stream>> handed_; // to the loop
  std::unique_ptr<acceptor> acceptor_;
  std::thread loop_;
};

} // namespace stoker
