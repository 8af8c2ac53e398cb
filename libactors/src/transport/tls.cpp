#include "transport/tls.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include "stoker/errors.hpp"

namespace stoker {

namespace {

using clock_type = std::chrono::steady_clock;

// The confirmation a server sends once it has checked the client.
constexpr char confirm_byte = 0x53; // 'S'

// Every reason OpenSSL queued on this thread, the last one kept (the
// queue's earlier entries are its call chain).
std::string drain_errors() {
  std::string reason;
  while (auto e = ERR_get_error()) {
    if (auto text = ERR_reason_error_string(e))
      reason = text;
    else
      reason = "OpenSSL error " + std::to_string(e);
  }
  return reason;
}

caf::error file_error(const char* key, const std::string& path,
                      const std::string& what) {
  auto reason = drain_errors();
  return make_error(errc::invalid_config,
                    std::string{"tls."} + key + " = \"" + path + "\": " + what
                      + (reason.empty() ? "" : " (" + reason + ")"));
}

int passphrase_cb(char* buf, int size, int, void* user) {
  auto* text = static_cast<const std::string*>(user);
  if (text == nullptr || size <= 0)
    return 0;
  auto n = std::min<size_t>(text->size(), static_cast<size_t>(size));
  std::memcpy(buf, text->data(), n);
  return static_cast<int>(n);
}

std::string common_name(X509* cert) {
  if (cert == nullptr)
    return "";
  char text[256] = "";
  auto subject = X509_get_subject_name(cert);
  if (subject == nullptr
      || X509_NAME_get_text_by_NID(subject, NID_commonName, text,
                                   sizeof(text))
           < 0)
    return "";
  return text;
}

bool set_nonblocking(int fd) {
  auto flags = ::fcntl(fd, F_GETFL, 0);
  return flags >= 0 && ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0;
}

// Why a handshake (or the confirmation) failed, in words a user can act on.
std::string handshake_failure(SSL* ssl, int ssl_error, bool server) {
  auto reason = drain_errors();
  auto verify = SSL_get_verify_result(ssl);
  // A failed verification may leave no peer certificate on the session;
  // the verify result still says why.
  if (verify != X509_V_OK
      && (SSL_get0_peer_certificate(ssl) != nullptr
          || reason == "certificate verify failed"))
    return std::string{server ? "the client's" : "the server's"}
           + " certificate is not valid for this cluster's CA: "
           + X509_verify_cert_error_string(verify);
  if (reason.empty()) {
    if (ssl_error == SSL_ERROR_SYSCALL && errno != 0)
      return std::string{"connection failed during the TLS handshake: "}
             + std::strerror(errno);
    return server ? "the peer closed the connection during the TLS "
                    "handshake"
                  : "the peer closed the connection during the TLS "
                    "handshake (it does not speak Stoker's TLS, or "
                    "refused us without saying why)";
  }
  for (auto plain : {"wrong version number", "http request", "https proxy",
                     "unknown protocol", "packet length too long",
                     "record layer failure"})
    if (reason == plain)
      return reason + " (not TLS: a plain-TCP peer, or a node without tls.* "
                      "set)";
  if (reason == "peer did not return a certificate")
    return "the client sent no certificate (a node without tls.* set?)";
  if (reason.find("alert") != std::string::npos)
    return "the peer refused us: " + reason
           + " (is this node's certificate from the cluster's CA, and "
             "valid now?)";
  return reason;
}

} // namespace

// -- tls_context --------------------------------------------------------------

tls_context::tls_context(private_tag, SSL_CTX* ctx, std::string name)
  : ctx_(ctx), name_(std::move(name)) {
  // nop
}

tls_context::~tls_context() {
  SSL_CTX_free(ctx_);
}

caf::expected<std::shared_ptr<const tls_context>>
tls_context::load(const tls_spec& files) {
  for (auto [key, path] : {std::pair{"certificate", &files.certificate},
                           std::pair{"key", &files.key},
                           std::pair{"ca-file", &files.ca_file}}) {
    struct stat st {};
    if (::stat(path->c_str(), &st) != 0)
      return file_error(key, *path, std::string{"cannot read it: "}
                                      + std::strerror(errno));
  }
  ERR_clear_error();
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx{SSL_CTX_new(
                                                          TLS_method()),
                                                        &SSL_CTX_free};
  if (!ctx)
    return make_error(errc::io_failure,
                      "cannot create a TLS context: " + drain_errors());
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_3_VERSION);
  SSL_CTX_set_max_proto_version(ctx.get(), TLS1_3_VERSION);
  if (SSL_CTX_set_ciphersuites(ctx.get(), "TLS_AES_256_GCM_SHA384:"
                                          "TLS_AES_128_GCM_SHA256")
      != 1)
    return make_error(errc::io_failure,
                      "cannot select AES-GCM: " + drain_errors());
  // A peer that closes without TLS's close_notify ends the stream like
  // one that sends it: the framing above TLS notices truncation.
  SSL_CTX_set_options(ctx.get(), SSL_OP_IGNORE_UNEXPECTED_EOF);
  SSL_CTX_set_mode(ctx.get(), SSL_MODE_ENABLE_PARTIAL_WRITE
                                | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_CTX_set_num_tickets(ctx.get(), 0); // no resumption: every peer shows
                                         // its certificate
  if (SSL_CTX_use_certificate_chain_file(ctx.get(), files.certificate.c_str())
      != 1)
    return file_error("certificate", files.certificate,
                      "not a PEM certificate");
  SSL_CTX_set_default_passwd_cb(ctx.get(), passphrase_cb);
  SSL_CTX_set_default_passwd_cb_userdata(
    ctx.get(), const_cast<std::string*>(&files.passphrase));
  auto key_ok = SSL_CTX_use_PrivateKey_file(ctx.get(), files.key.c_str(),
                                            SSL_FILETYPE_PEM);
  SSL_CTX_set_default_passwd_cb_userdata(ctx.get(), nullptr);
  if (key_ok != 1)
    return file_error("key", files.key,
                      files.passphrase.empty()
                        ? "not a PEM private key (or encrypted: set "
                          "tls.passphrase)"
                        : "not a PEM private key, or tls.passphrase is wrong");
  if (SSL_CTX_check_private_key(ctx.get()) != 1)
    return file_error("key", files.key,
                      "does not belong to tls.certificate = \""
                        + files.certificate + "\"");
  if (SSL_CTX_load_verify_locations(ctx.get(), files.ca_file.c_str(),
                                    nullptr)
      != 1)
    return file_error("ca-file", files.ca_file, "not a PEM CA certificate");
  if (auto names = SSL_load_client_CA_file(files.ca_file.c_str()))
    SSL_CTX_set_client_CA_list(ctx.get(), names);
  SSL_CTX_set_verify(ctx.get(),
                     SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT,
                     nullptr);
  // Our own certificate must pass the check our peers will make.
  auto own = SSL_CTX_get0_certificate(ctx.get());
  std::unique_ptr<X509_STORE_CTX, decltype(&X509_STORE_CTX_free)> check{
    X509_STORE_CTX_new(), &X509_STORE_CTX_free};
  if (!check
      || X509_STORE_CTX_init(check.get(), SSL_CTX_get_cert_store(ctx.get()),
                             own, nullptr)
           != 1)
    return make_error(errc::io_failure,
                      "cannot check tls.certificate: " + drain_errors());
  if (X509_verify_cert(check.get()) != 1)
    return make_error(
      errc::invalid_config,
      "tls.certificate = \"" + files.certificate + "\" fails the check its "
        + "peers will make against tls.ca-file = \"" + files.ca_file + "\": "
        + X509_verify_cert_error_string(
          X509_STORE_CTX_get_error(check.get())));
  ERR_clear_error();
  auto name = common_name(own);
  return std::make_shared<const tls_context>(private_tag{}, ctx.release(),
                                             std::move(name));
}

caf::expected<tls_spec> resolve_tls_files(const tls_spec& spec,
                                          const std::string& node_name) {
  auto out = spec;
  if (!spec.dir.empty()) {
    auto at = [&](const std::string& file) { return spec.dir + "/" + file; };
    if (out.ca_file.empty())
      out.ca_file = at("ca.pem");
    if (out.certificate.empty())
      out.certificate = at(node_name + ".pem");
    if (out.key.empty())
      out.key = at(node_name + ".key");
  }
  std::string missing;
  for (auto [key, value] : {std::pair{"tls.certificate", &out.certificate},
                            std::pair{"tls.key", &out.key},
                            std::pair{"tls.ca-file", &out.ca_file}})
    if (value->empty())
      missing += (missing.empty() ? "" : ", ") + std::string{key};
  if (!missing.empty())
    return make_error(errc::invalid_config,
                      "TLS is half configured: " + missing
                        + " not set; expected tls.certificate, tls.key and "
                          "tls.ca-file together (or tls.dir from "
                          "tools/ops/make-certs)");
  return out;
}

// -- tls_stream ---------------------------------------------------------------

bool wait_for(int fd, bool for_write, clock_type::time_point deadline) {
  for (;;) {
    int timeout = -1;
    if (deadline != clock_type::time_point::max()) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - clock_type::now());
      if (left.count() <= 0)
        return false;
      timeout = static_cast<int>(left.count());
    }
    pollfd p{fd, static_cast<short>(for_write ? POLLOUT : POLLIN), 0};
    auto n = ::poll(&p, 1, timeout);
    if (n > 0)
      return true; // ready, or an error the next call reports
    if (n == 0)
      return false;
    if (errno != EINTR)
      return true;
  }
}

namespace {

// Runs `step` (an OpenSSL call) until it succeeds, fails, or `deadline`.
template <class Step>
caf::error drive(SSL* ssl, int fd, clock_type::time_point deadline,
                 bool server, const char* what, Step step) {
  for (;;) {
    ERR_clear_error();
    errno = 0;
    auto ret = step();
    if (ret > 0)
      return caf::none;
    auto err = SSL_get_error(ssl, ret);
    if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
      if (!wait_for(fd, err == SSL_ERROR_WANT_WRITE, deadline))
        return make_error(errc::io_failure,
                          std::string{"no "} + what
                            + " in time (the peer sent too little: not a "
                              "Stoker node, or a stalled one)");
      continue;
    }
    return make_error(errc::io_failure, handshake_failure(ssl, err, server));
  }
}

// A fresh OpenSSL connection on `fd`, which is made non-blocking.
caf::error open_ssl(int fd, const tls_context& ctx, SSL*& out) {
  if (!set_nonblocking(fd))
    return make_error(errc::io_failure, std::string{"cannot set up a socket: "}
                                          + std::strerror(errno));
  out = SSL_new(ctx.native());
  if (out == nullptr || SSL_set_fd(out, fd) != 1) {
    SSL_free(out);
    out = nullptr;
    return make_error(errc::io_failure,
                      "cannot start a TLS connection: " + drain_errors());
  }
  return caf::none;
}

} // namespace

caf::expected<tls_stream>
tls_stream::accept(int fd, const tls_context& ctx,
                   std::chrono::milliseconds timeout) {
  SSL* ssl = nullptr;
  auto deadline = clock_type::now() + timeout;
  if (auto err = open_ssl(fd, ctx, ssl))
    return err;
  tls_stream result{ssl, fd};
  if (auto err = drive(ssl, fd, deadline, true, "TLS handshake",
                       [&] { return SSL_accept(ssl); }))
    return err;
  if (auto err = drive(ssl, fd, deadline, true, "room for the confirmation",
                       [&] { return SSL_write(ssl, &confirm_byte, 1); }))
    return err;
  return result;
}

caf::expected<tls_stream>
tls_stream::connect(int fd, const tls_context& ctx,
                    std::chrono::milliseconds timeout) {
  SSL* ssl = nullptr;
  auto deadline = clock_type::now() + timeout;
  if (auto err = open_ssl(fd, ctx, ssl))
    return err;
  tls_stream result{ssl, fd};
  if (auto err = drive(ssl, fd, deadline, false, "TLS handshake",
                       [&] { return SSL_connect(ssl); }))
    return err;
  char answer = 0;
  if (auto err = drive(ssl, fd, deadline, false, "confirmation from the peer",
                       [&] { return SSL_read(ssl, &answer, 1); }))
    return err;
  if (answer != confirm_byte)
    return make_error(errc::io_failure,
                      "the peer's first byte after the TLS handshake was not "
                      "Stoker's confirmation (another service on that port?)");
  return result;
}

tls_stream::tls_stream(tls_stream&& other) noexcept
  : ssl_(other.ssl_), fd_(other.fd_), last_error_(std::move(other.last_error_)) {
  other.ssl_ = nullptr;
}

tls_stream& tls_stream::operator=(tls_stream&& other) noexcept {
  if (this != &other) {
    SSL_free(ssl_);
    ssl_ = other.ssl_;
    fd_ = other.fd_;
    last_error_ = std::move(other.last_error_);
    other.ssl_ = nullptr;
  }
  return *this;
}

tls_stream::~tls_stream() {
  SSL_free(ssl_);
}

tls_stream::io tls_stream::classify(int ret) {
  auto err = SSL_get_error(ssl_, ret);
  switch (err) {
    case SSL_ERROR_WANT_READ:
      return io::want_read;
    case SSL_ERROR_WANT_WRITE:
      return io::want_write;
    case SSL_ERROR_ZERO_RETURN:
      return io::closed;
    default: {
      auto reason = drain_errors();
      if (reason.empty() && err == SSL_ERROR_SYSCALL)
        reason = errno != 0 ? std::strerror(errno) : "connection reset";
      last_error_ = reason;
      return io::failed;
    }
  }
}

tls_stream::io tls_stream::read_some(char* at, size_t size, size_t& n) {
  ERR_clear_error();
  errno = 0;
  n = 0;
  auto ret = SSL_read_ex(ssl_, at, size, &n);
  return ret == 1 ? io::done : classify(ret);
}

tls_stream::io tls_stream::write_some(const char* at, size_t size,
                                      size_t& n) {
  ERR_clear_error();
  errno = 0;
  n = 0;
  auto ret = SSL_write_ex(ssl_, at, size, &n);
  return ret == 1 ? io::done : classify(ret);
}

bool tls_stream::pending() const {
  return SSL_pending(ssl_) > 0;
}

bool tls_stream::read_exact(char* at, size_t size, size_t& got,
                            clock_type::time_point deadline) {
  got = 0;
  while (got < size) {
    size_t n = 0;
    switch (read_some(at + got, size - got, n)) {
      case io::done:
        got += n;
        break;
      case io::want_read:
      case io::want_write:
        if (!wait_for(fd_, false, deadline)) {
          last_error_ = "timed out";
          return false;
        }
        break;
      default:
        return false;
    }
  }
  return true;
}

caf::error tls_stream::write_all(const char* at, size_t size) {
  size_t done = 0;
  while (done < size) {
    size_t n = 0;
    switch (write_some(at + done, size - done, n)) {
      case io::done:
        done += n;
        break;
      case io::want_read:
        wait_for(fd_, false, clock_type::time_point::max());
        break;
      case io::want_write:
        wait_for(fd_, true, clock_type::time_point::max());
        break;
      case io::closed:
        return make_error(errc::io_failure, "the peer closed the connection");
      case io::failed:
        return make_error(errc::io_failure, last_error_);
    }
  }
  return caf::none;
}

caf::expected<std::string> random_token() {
  unsigned char bytes[32];
  if (RAND_bytes(bytes, sizeof(bytes)) != 1)
    return make_error(errc::io_failure,
                      "OpenSSL's random generator failed: " + drain_errors());
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  for (auto b : bytes) {
    out += hex[b >> 4];
    out += hex[b & 0xF];
  }
  return out;
}

bool same_secret(const std::string& a, const std::string& b) {
  return a.size() == b.size()
         && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

// -- socket_end ---------------------------------------------------------------

tls_stream::io socket_end::read(char* at, size_t size, size_t& n) {
  if (tls != nullptr)
    return tls->read_some(at, size, n);
  n = 0;
  auto got = ::recv(fd, at, size, MSG_DONTWAIT);
  if (got > 0) {
    n = static_cast<size_t>(got);
    return tls_stream::io::done;
  }
  if (got == 0)
    return tls_stream::io::closed;
  if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
    return tls_stream::io::want_read;
  return tls_stream::io::failed;
}

tls_stream::io socket_end::write(const char* at, size_t size, size_t& n) {
  if (tls != nullptr)
    return tls->write_some(at, size, n);
  n = 0;
  auto put = ::send(fd, at, size, MSG_DONTWAIT | MSG_NOSIGNAL);
  if (put >= 0) {
    n = static_cast<size_t>(put);
    return tls_stream::io::done;
  }
  if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
    return tls_stream::io::want_write;
  return tls_stream::io::failed;
}

} // namespace stoker
