#pragma once

// The rendezvous store of a data-parallel group without a port of its own:
// the keys live in an actor (on the head, or in a local run's process) and
// the ranks reach it over the CAF connections they already have, which are
// gated, BASP-checked and, with tls.*, mutual TLS (docs/security.md).
// LibTorch's TCPStore listened on every interface with no authentication
// whatever cluster.bind said: anyone who reached it could read and write
// the group's keys.

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "stoker/actors.hpp"

namespace stoker {

/// The keys of a group's store and the c10d semantics over them (as
/// LibTorch's TCPStore and HashStore have them): `get` and `wait` answer
/// once every key they name exists, `add` keeps a decimal count,
/// `compare_set` sets only over the expected value (or a missing key when
/// the expected value is empty). Plain and single-threaded: owned by the
/// store actor, driven alone by the tests.
class key_value_book {
public:
  /// The answer to `op`, or none if it must wait for keys (ask again after
  /// the next change).
  std::optional<store_reply> apply(const store_op& op);

  /// Whether `op` changes the keys (waiters may be answerable after it).
  static bool changes(const store_op& op) noexcept;

  size_t size() const noexcept { return values_.size(); }

private:
  bool has_all(const std::vector<std::string>& keys) const;

  std::map<std::string, std::vector<uint8_t>> values_;
};

/// Spawns the store of one group (its keys die with it). Requests that
/// must wait are answered when their keys come, or with an error after
/// the op's `timeout_ms`.
store_actor spawn_group_store(caf::actor_system& sys);

/// A c10d::Store whose every call is a request to `store` from the
/// calling thread (blocking it: the trainer's own thread, or a test's),
/// each bounded by the store's timeout; a timeout or a store that is gone
/// throws std::runtime_error naming the key, as c10d's stores do. A call
/// leaves no trace on a thread that was not CAF's: a scoped actor would
/// leave it holding the actor system's logger, whose end the system's
/// destructor waits for (a Python trainer's close() waited 20 s for its
/// main thread, which had asked the store in init_process_group).
c10::intrusive_ptr<c10d::Store>
make_actor_store(caf::actor_system& sys, store_actor store,
                 std::chrono::milliseconds timeout);

/// Ends a store make_actor_store made, before its actor system goes:
/// torch keeps its default group's store until the interpreter exits, and
/// a call then must not reach a destroyed actor system; later calls throw
/// std::runtime_error saying the run has ended. Waits for the calls in
/// flight (each bounded by its timeout). Any thread; a store of another
/// kind is left alone.
void close_actor_store(c10d::Store& store);

} // namespace stoker
