#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include <caf/error.hpp>
#include <caf/expected.hpp>

#include "stoker/options.hpp"

// OpenSSL's types, without its headers in ours.
struct ssl_ctx_st;
struct ssl_st;

namespace stoker {

/// Mutual TLS as every Stoker connection speaks it (the gates in front of
/// CAF's ports, the tunnels out of them, the batch stream): TLS 1.3 only,
/// AES-GCM suites, and on both sides a peer certificate signed by the
/// cluster's CA, valid now (SSL_VERIFY_PEER | FAIL_IF_NO_PEER_CERT). There
/// is no hostname check: any certificate of the cluster's CA is a member
/// (docs/security.md). Never an anonymous or unauthenticated suite.
class tls_context {
public:
  /// Loads and checks this node's files: each one a readable PEM, the key
  /// the certificate's, the certificate signed by the CA and valid now.
  /// Errors (errc::invalid_config) name the key, the file and the reason.
  static caf::expected<std::shared_ptr<const tls_context>>
  load(const tls_spec& files);

  ~tls_context();
  tls_context(const tls_context&) = delete;
  tls_context& operator=(const tls_context&) = delete;

  /// One context for both ends (accept and connect); OpenSSL's contexts
  /// are safe to share between threads once set up.
  ssl_ctx_st* native() const noexcept { return ctx_; }

  /// This node's certificate's subject common name (for messages).
  const std::string& name() const noexcept { return name_; }

private:
  struct private_tag {};

public:
  tls_context(private_tag, ssl_ctx_st* ctx, std::string name);

private:
  ssl_ctx_st* ctx_;
  std::string name_;
};

/// Fills the files tls.dir provides for a node called `node_name`
/// (DIR/ca.pem, DIR/NAME.pem, DIR/NAME.key) where they are not set, and
/// checks that certificate, key and CA file are all there. Errors
/// (errc::invalid_config) name the missing key or file.
caf::expected<tls_spec> resolve_tls_files(const tls_spec& spec,
                                          const std::string& node_name);

/// One TLS connection over a connected socket it does not own (the caller
/// closes the descriptor after this is gone). The socket is left
/// non-blocking; read and write wait in poll() as needed, so a shutdown()
/// of the socket from another thread wakes them. Move-only; used by one
/// thread at a time (an OpenSSL connection is not thread-safe).
class tls_stream {
public:
  /// The server's side: the handshake, the client's certificate checked,
  /// then one confirmation byte (in TLS 1.3 a client finishes its
  /// handshake before the server has checked its certificate, so without
  /// it a refused client would learn only at its first read). All within
  /// `timeout`. Errors (errc::io_failure) say what was wrong with the
  /// peer: no certificate, another CA, expired, not TLS at all.
  static caf::expected<tls_stream> accept(int fd, const tls_context& ctx,
                                          std::chrono::milliseconds timeout);

  /// The client's side: the handshake and the server's confirmation,
  /// within `timeout`. Errors name what the server refused, or what was
  /// wrong with the server's certificate.
  static caf::expected<tls_stream> connect(int fd, const tls_context& ctx,
                                           std::chrono::milliseconds timeout);

  tls_stream(tls_stream&& other) noexcept;
  tls_stream& operator=(tls_stream&& other) noexcept;
  ~tls_stream();

  /// What a non-blocking call came to.
  enum class io { done, want_read, want_write, closed, failed };

  /// Reads what is there, up to `size` bytes, into `n` (done), or says
  /// what to wait for. `closed`: the peer ended the connection cleanly.
  io read_some(char* at, size_t size, size_t& n);

  /// Writes up to `size` bytes (partial writes allowed), as read_some.
  io write_some(const char* at, size_t size, size_t& n);

  /// Whether decrypted bytes wait inside OpenSSL (poll() cannot see them).
  bool pending() const;

  /// Blocking forms: exactly `size` bytes (false: closed, failed or past
  /// `deadline`; `got` says how far it came), all of `size` bytes.
  bool read_exact(char* at, size_t size, size_t& got,
                  std::chrono::steady_clock::time_point deadline
                  = std::chrono::steady_clock::time_point::max());
  caf::error write_all(const char* at, size_t size);

  /// OpenSSL's last reason for a failed call (empty if none).
  std::string last_error() const { return last_error_; }

private:
  tls_stream(ssl_st* ssl, int fd) : ssl_(ssl), fd_(fd) {}

  io classify(int ret);

  ssl_st* ssl_ = nullptr;
  int fd_ = -1;
  std::string last_error_;
};

/// One end of a non-blocking connection: a plain socket, or TLS over it
/// (not owned). Reads and writes what it can without blocking, in
/// tls_stream's terms for both, so a relay or an event loop treats them
/// alike.
struct socket_end {
  int fd = -1;
  tls_stream* tls = nullptr;

  /// Up to `size` bytes into `n` (done), or what to wait for; closed: the
  /// peer ended the connection.
  tls_stream::io read(char* at, size_t size, size_t& n);

  /// Up to `size` bytes (partial writes allowed), as read.
  tls_stream::io write(const char* at, size_t size, size_t& n);

  /// Whether decrypted bytes wait inside OpenSSL (poll() cannot see them).
  bool pending() const { return tls != nullptr && tls->pending(); }
};

/// Waits until `fd` is readable (or writable) or `deadline` passes; false
/// on timeout. A deadline of time_point::max() waits for ever.
bool wait_for(int fd, bool for_write,
              std::chrono::steady_clock::time_point deadline);

/// 32 random bytes from OpenSSL's generator, as 64 hex digits: a secret
/// per run (the batch stream's token).
caf::expected<std::string> random_token();

/// Compares two secrets in time independent of where they differ.
bool same_secret(const std::string& a, const std::string& b);

} // namespace stoker
