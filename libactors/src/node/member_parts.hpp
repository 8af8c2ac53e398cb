#pragma once

// What a member node runs locally (node/member_role.cpp's parts): its
// worker actors, or its trainers with their published ports and batch
// streams. Called on the role's main thread, which holds `self`.

#include <atomic>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include <caf/expected.hpp>
#include <caf/scoped_actor.hpp>

#include "stoker/actors.hpp"
#include "stoker/registry.hpp"
#include "config/run_config.hpp"
#include "node/node_links.hpp"
#include "transport/batch_channel.hpp"

namespace stoker {

struct trainer_hooks;

/// What a node runs locally until the head says `shutdown`.
struct local_part {
  std::vector<caf::actor> actors;
  // Trainer nodes: each trainer's batch stream, and each trainer's index
  // (beside `actors`).
  std::vector<std::unique_ptr<batch_listener>> streams;
  std::vector<uint32_t> indices;
  // Trainer nodes: each trainer's (gated) CAF port, for the joined line,
  // and where each listens (beside `actors`: told to a head started again).
  std::vector<uint16_t> ports;
  std::vector<trainer_endpoint> places;
  // Set before the actors are told to exit: a worker then drops a batch it
  // cannot send instead of falling back and saying so.
  std::shared_ptr<std::atomic<bool>> stopping
    = std::make_shared<std::atomic<bool>>(false);
};

/// A worker node: connects straight to every trainer (so batches do not pass
/// through the head), then runs its worker actors.
caf::expected<local_part>
start_workers(caf::actor_system& sys, caf::scoped_actor& self,
              const run_config& cfg, const welcome& w,
              const membership_actor& head, const registry& reg,
              node_links& links);

/// One trainer of a trainer node (index `index`): spawned, published for
/// worker nodes, with its batch stream beside it. Its actor and stream go
/// into `local`; returns where it listens.
caf::expected<std::pair<trainer_actor, trainer_endpoint>>
start_trainer(caf::actor_system& sys, const run_config& cfg,
              const router_actor& router, const registry& reg,
              uint32_t index, local_part& local, node_links& links,
              const trainer_hooks* hooks);

/// A trainer node: its trainers (trainer.count: one per GPU) train what the
/// head's pipeline makes, each on its own device, and each listens where
/// worker nodes can reach it. Each waits for its rank (a group_spec from
/// the head).
caf::expected<local_part>
start_trainers(caf::actor_system& sys, caf::scoped_actor& self,
               const run_config& cfg, const welcome& w,
               const membership_actor& head, const registry& reg,
               node_links& links, const trainer_hooks* hooks);

} // namespace stoker
