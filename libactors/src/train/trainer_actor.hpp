#pragma once

// The trainer actor: glue over the step engine, the delivery ledger, the
// epoch gate and checkpoints of this folder.

#include <functional>
#include <memory>

#include <caf/actor_system.hpp>
#include <caf/expected.hpp>

#include "stoker/actors.hpp"
#include "stoker/options.hpp"
#include "train/checkpoint.hpp"
#include "transport/buffer_pool.hpp"

namespace stoker {

class registry;
class step_engine;

/// What a process that embeds Stoker (the Python package) puts in place of
/// a node's own trainer parts; each unset member keeps the node's.
struct trainer_hooks {
  /// Makes the engine of the node's trainer `local_index` for the run
  /// `cfg` (a member's: the head's pipeline), in place of the one
  /// trainer.device asks for (a loop's feed); `pool` is where the
  /// trainer's batch buffers go back. Called on the thread that spawns the
  /// trainer.
  std::function<caf::expected<std::unique_ptr<step_engine>>(
    const run_config& cfg, uint32_t local_index,
    std::shared_ptr<buffer_pool> pool)>
    make_engine;
  /// The cursor the trainer resumes from (a loop's saved state), in place
  /// of --resume's file; checked against the run as a file is.
  std::shared_ptr<const checkpoint> resume_from;
  /// Where resume_from was taken: rank `resume_rank` of a group of
  /// `resume_world` (a lone trainer: 0 of 1). It resumes only the same
  /// rank of a group of that size, whose every rank resumes from its own
  /// loop's cursor of the same step (a loop's group has no rank-0 file).
  uint32_t resume_rank = 0;
  uint32_t resume_world = 1;
};

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
/// `hooks` (may be null): an embedding process's engine and cursor.
caf::expected<trainer_actor>
spawn_trainer(caf::actor_system& sys, const run_config& cfg,
              const registry& reg, router_actor router,
              std::shared_ptr<buffer_pool> pool = nullptr,
              uint32_t local_index = 0,
              bool defer_missing_checkpoint = false,
              const trainer_hooks* hooks = nullptr);

/// Which run `cfg` is, as a checkpoint records it (a resumed run must be
/// the same run).
run_identity identity_of(const run_config& cfg);

/// With --resume, whether the checkpoint in trainer.checkpoint-dir may
/// resume this run as a group of `world` trainers: it is there, of the
/// same run (check_resumable) and of a group of that size
/// (check_resume_world). Reads the file; called before anything starts, so
/// a refusal (errc::invalid_config, exit 2) costs nothing. None without
/// --resume.
caf::error check_resume(const run_config& cfg, uint32_t world);

/// The size of the group whose checkpoint a trainer node started with
/// --resume would resume (checkpoint_world); 0 without --resume or without
/// a readable checkpoint (a rank of a group needs none of its own).
uint32_t resume_world_of(const run_config& cfg);

} // namespace stoker
