#pragma once

// The router actor: glue over the routing table, the in-flight window,
// the offload controller and the lease book of this folder.

#include <cstdint>

#include <caf/actor_system.hpp>

#include "stoker/actors.hpp"
#include "stoker/options.hpp"
#include "routing/head_journal.hpp"

namespace stoker {

/// Whether nodes can join the run the router serves.
enum class router_scope {
  /// A local run: no worker can join and no trainer can come back, so
  /// losing every worker, or the trainer, fails the run at once.
  local,
  /// A head's: a lost trainer that saves checkpoints may come back with
  /// --resume, and workers may join; each is waited for up to
  /// cluster.join-timeout.
  cluster,
};

/// What a head's router journals (cluster.state-dir) and from where it
/// goes on.
struct router_journal {
  std::string dir; ///< empty: no journal
  /// The run's identity and, when the head resumes, what the last head
  /// wrote (counts go on from there).
  head_journal start;
  bool resumed = false; ///< --resume: `start` is the last head's
};

/// Spawns a router that pulls from `source` and leases by `spec`; it
/// expects `expected_samples` acknowledged samples before `run` answers.
/// `batch_bytes` (one batch on the wire) turns the byte budget into a
/// window ceiling. With a journal dir it writes the journal (atomically)
/// at most once a second while acks come, and at the end (`finished` once
/// the run completed); resumed, it refuses a trainer that trained nothing
/// when the journal says batches were acknowledged.
router_actor spawn_router(caf::actor_system& sys, source_actor source,
                          const router_spec& spec, uint64_t expected_samples,
                          uint64_t batch_bytes, router_scope scope,
                          router_journal journal = {});

} // namespace stoker
