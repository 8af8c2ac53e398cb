#pragma once

// Connections accepted on a listening socket, each served on a thread of
// its own: what the batch stream's listener and the gate in front of CAF's
// ports share (accepting, retrying when the process runs out of
// descriptors, bounding how many are served at once, reaping finished
// ones, and waking and joining every one when stopped).

#include <atomic>
#include <cstddef>
#include <functional>
#include <list>
#include <mutex>
#include <string>
#include <thread>

namespace stoker {

/// Accepts on `listener` (a listening TCP socket it owns from then on) on
/// a thread of its own, until stop(). Each connection is served by
/// `serve` on a thread of its own; the acceptor owns the connection's
/// socket and closes it once `done` is set (reaped at the next accept) or
/// at stop(), unless `serve` handed it elsewhere (`kept`). Thread-safe:
/// the hooks run on the acceptor's and the connections' threads.
class acceptor {
public:
  /// One accepted connection.
  struct connection {
    int fd = -1;          ///< the accepted socket
    std::string peer;     ///< "ADDRESS:PORT"
    std::string address;  ///< the peer's address, without its port
    /// Another socket `serve` opened for it (the gate's relay to CAF):
    /// woken and closed with it; -1: none.
    std::atomic<int> extra{-1};
    /// `fd` belongs elsewhere now (handed to an event loop): neither woken
    /// nor closed here.
    std::atomic<bool> kept{false};
    /// `serve` has finished with it: it may be reaped.
    std::atomic<bool> done{false};
    std::thread thread;
  };

  struct hooks {
    /// How many connections are served at once.
    size_t max_open = 64;
    /// At max_open: true, new peers wait in the listen backlog; false,
    /// they are accepted and refused (refuse_if sees the full list).
    bool wait_when_full = true;
    /// Why a peer from `address` is not served now, given the connections
    /// being served (finished ones reaped); empty: it is. Under the
    /// acceptor's lock. Optional.
    std::function<std::string(const std::list<connection>& open,
                              const std::string& address)>
      refuse_if;
    /// A refused peer's socket, before the acceptor closes it (to say why
    /// on it, and in the log). Optional.
    std::function<void(int fd, const std::string& peer,
                       const std::string& why)>
      refused;
    /// Serves one connection on its thread; sets `done` at the end.
    std::function<void(connection&)> serve;
    /// A line about accepting itself ("cannot accept: ...; retrying").
    std::function<void(const std::string&)> say;
  };

  acceptor(int listener, hooks h);
  ~acceptor();
  acceptor(const acceptor&) = delete;
  acceptor& operator=(const acceptor&) = delete;

  /// Stops accepting and closes the listening socket, then wakes every
  /// connection still served (shuts its sockets down), joins its thread
  /// and closes what is not kept. Idempotent; the owner calls it before
  /// it tears down what `serve` uses.
  void stop();

  /// Connections being served now (finished ones not yet reaped count).
  size_t open() const;

private:
  void accept_loop();
  void reap_locked();

  int listener_;
  hooks hooks_;
  std::atomic<bool> stopping_{false};
  bool stopped_ = false; // stop() has run (the owner's thread only)
  mutable std::mutex mutex_;
  std::list<connection> connections_;
  std::thread thread_;
};

} // namespace stoker
