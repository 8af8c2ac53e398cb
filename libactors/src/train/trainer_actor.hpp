#pragma once

// The trainer actor: glue over the step engine, the delivery ledger, the
// epoch gate and checkpoints of this folder.

#include <memory>

#include <caf/actor_system.hpp>
#include <caf/expected.hpp>

#include "stoker/actors.hpp"
#include "stoker/options.hpp"
#include "transport/buffer_pool.hpp"

namespace stoker {

class registry;

/// Spawns a detached trainer; returns an error if its device cannot be
/// set up (e.g. `cuda` without a GPU). With a `pool`, each batch's buffer
/// goes back to it after the step (the batch_listener that filled it
/// takes it from there). With `cfg.resume` it loads the checkpoint in
/// trainer.checkpoint-dir first; an error names what does not fit. The
/// model comes from `reg` (read here only: the trainer keeps no reference).
/// The trainer says hello to the router only once a group_spec gave it its
/// rank (local and member roles send one; world 1 for a lone trainer).
/// `local_index`: which of this node's trainers it is (its CUDA device).
/// `defer_missing_checkpoint` (trainer nodes): with --resume and no
/// checkpoint here, fail only if the trainer turns out to be alone (a
/// rank of a group takes its state from rank 0's checkpoint).
caf::expected<trainer_actor>
spawn_trainer(caf::actor_system& sys, const run_config& cfg,
              const registry& reg, router_actor router,
              std::shared_ptr<buffer_pool> pool = nullptr,
              uint32_t local_index = 0,
              bool defer_missing_checkpoint = false);

} // namespace stoker
