#include "transport/gate_verdict.hpp"

#include <cerrno>
#include <cstring>
#include <sys/socket.h>
#include <thread>

#include "stoker/errors.hpp"
#include "transport/tls.hpp"

namespace stoker {

namespace {

using clock_type = std::chrono::steady_clock;

constexpr char preface_magic[5] = {'S', 'T', 'K', 'G', 1};
constexpr char hello_magic[5] = {'S', 'T', 'K', 'C', 1};

} // namespace

std::string address_of(const std::string& peer) {
  auto colon = peer.rfind(':');
  return colon == std::string::npos ? peer : peer.substr(0, colon);
}

first_bytes read_hello(int fd, clock_type::time_point deadline) {
  char got[sizeof(hello_magic)];
  for (;;) {
    if (!wait_for(fd, false, deadline))
      return first_bytes::silent;
    auto n = ::recv(fd, got, sizeof got, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0)
      return first_bytes::closed;
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR)
        continue;
      return first_bytes::closed;
    }
    auto size = static_cast<size_t>(n);
    if (std::memcmp(got, hello_magic, size) != 0)
      return first_bytes::other;
    if (size == sizeof got) {
      ::recv(fd, got, sizeof got, MSG_DONTWAIT); // peeked: it is there
      return first_bytes::hello;
    }
    // The start of a hello, the rest on its way.
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

std::string gate_hello() {
  return std::string(hello_magic, sizeof(hello_magic));
}

std::string gate_preface(char verdict, const std::string& why) {
  std::string out(preface_magic, sizeof(preface_magic));
  out += verdict;
  if (verdict == 'R') {
    auto text = why.substr(0, 1000);
    out += static_cast<char>(text.size() >> 8);
    out += static_cast<char>(text.size() & 0xff);
    out += text;
  }
  return out;
}

caf::expected<gate_verdict>
read_gate_preface(int fd, clock_type::time_point deadline) {
  auto read_exactly = [&](char* at, size_t size) {
    size_t got = 0;
    while (got < size) {
      if (!wait_for(fd, false, deadline))
        return false;
      auto n = ::recv(fd, at + got, size - got, MSG_DONTWAIT);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
        return false;
      if (n > 0)
        got += static_cast<size_t>(n);
    }
    return true;
  };
  char head[sizeof(preface_magic) + 1];
  // io_failure: worth another try (a node that is starting, or going
  // away while its port is still open); the caller's deadline ends it.
  if (!read_exactly(head, sizeof(head)))
    return make_error(errc::io_failure,
                      "no answer from its gate (the port closed, or said "
                      "nothing in time: not a Stoker node port, or another "
                      "Stoker release?)");
  if (std::memcmp(head, preface_magic, sizeof(preface_magic)) != 0)
    return make_error(errc::run_failure,
                      "it did not answer as a Stoker node's port (another "
                      "Stoker release, or another service on that port?)");
  gate_verdict v;
  v.verdict = head[sizeof(preface_magic)];
  if (v.verdict == 'R') {
    unsigned char size[2];
    if (!read_exactly(reinterpret_cast<char*>(size), 2))
      return make_error(errc::run_failure, "its refusal was cut short");
    v.why.resize(size_t{size[0]} << 8 | size[1]);
    if (!read_exactly(v.why.data(), v.why.size()))
      return make_error(errc::run_failure, "its refusal was cut short");
  } else if (v.verdict != 'T' && v.verdict != 'P') {
    return make_error(errc::run_failure,
                      "its gate answered with an unknown verdict (another "
                      "Stoker release?)");
  }
  return v;
}

std::string refusal_log::note(const std::string& peer,
                              const std::string& why,
                              const std::string& line,
                              clock_type::time_point now) {
  auto address = address_of(peer);
  std::lock_guard<std::mutex> guard{mutex_};
  if (by_address_.size() > 4096) // a flood from many addresses: forget
    for (auto i = by_address_.begin(); i != by_address_.end();)
      i = now - i->second.said > interval_ ? by_address_.erase(i) : ++i;
  auto [at, fresh] = by_address_.try_emplace(std::make_pair(address, why));
  auto& e = at->second;
  if (!fresh && now - e.said < interval_) {
    ++e.unsaid;
    return {};
  }
  auto out = line;
  if (e.unsaid > 0)
    out += " (and " + std::to_string(e.unsaid) + " more refused from "
           + address + " for this in the "
           + std::to_string(std::chrono::duration_cast<std::chrono::seconds>(
                              now - e.said)
                              .count())
           + " s before this)";
  e.said = now;
  e.unsaid = 0;
  return out;
}

} // namespace stoker
