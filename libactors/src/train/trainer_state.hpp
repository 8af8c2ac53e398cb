#pragma once

// The trainer actor's state, shared by trainer_actor.cpp (the actor),
// trainer_batches.cpp (batches, steps, phases) and trainer_group.cpp (the
// data-parallel group and checkpoints). Internal.

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <caf/stateful_actor.hpp>

#include "stoker/actors.hpp"
#include "stoker/options.hpp"
#include "core/batch_id_set.hpp"
#include "kernels/blur.hpp"
#include "train/checkpoint.hpp"
#include "train/collective.hpp"
#include "train/copy_check.hpp"
#include "train/delivery_ledger.hpp"
#include "train/skip_tally.hpp"
#include "train/epoch_gate.hpp"
#include "train/step_engine.hpp"
#include "transport/batch_check.hpp"
#include "transport/buffer_pool.hpp"

namespace stoker::detail {

using clock_type = std::chrono::steady_clock;

inline uint64_t ns_between(clock_type::time_point a, clock_type::time_point b) {
  return static_cast<uint64_t>(
    std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count());
}

/// What running one batch did, recorded when it is finished.
struct step_outcome {
  bool stepped = false;   ///< a training step ran
  bool evaluated = false; ///< a test batch was evaluated
  step_result step;
  eval_result eval;
  /// A pending step's end: the loop's own wait and step times.
  std::optional<ended_step> ended;
};

/// A batch that ran and is not finished (recorded, acked) yet: a loop's
/// pending step, or one that ran after it (finished in order behind it).
struct unfinished_batch {
  image_batch batch; ///< its metadata (a loop holds its buffer)
  clock_type::time_point start;
  uint64_t waited = 0; ///< the accelerator's idle time before it
  step_outcome outcome;
  bool pending = false; ///< waits for the engine's next_ended()
};

/// Where a loop's cursor the trainer resumed from was taken (its place in
/// its group then).
struct loop_place {
  uint32_t rank = 0;
  uint32_t world = 1;
};

struct trainer_state {
  std::shared_ptr<step_engine> engine;
  run_config cfg;    // the run's settings (the group is set up from them)
  trainer_spec spec; // the learning-rate schedule
  run_identity run;
  router_actor router;
  // Its place in the data-parallel group (a group_spec sets it).
  group_spec group;
  bool grouped = false; // the group_spec came: hello sent
  // A new router (the head was started again): the next group_spec says
  // hello to it with everything trained so far.
  bool rejoining = false;
  /// Its loop ended the run on purpose (errc::stopped): it told the router
  /// and takes no more batches; it stays to answer for the report.
  bool loop_stopped = false;
  std::shared_ptr<collective_group> collective; // world > 1
  // world > 1: batches run strictly in the order of their slot.seq (each
  // global step is the same step on every rank); those that arrive early
  // wait here.
  std::map<uint64_t, image_batch> ahead;
  uint64_t next_seq = 0;
  std::string checkpoint_dir; // empty: no checkpoints
  uint32_t checkpoint_every = 100;
  std::shared_ptr<buffer_pool> pool; // where batch buffers go back, if set
  // pipeline.placement gpu|auto: the blur stage of HWC batches, on the GPU.
  std::shared_ptr<cuda_blur_stage> gpu_blur;
  blur_params blur;
  std::optional<delivery_ledger> ledger;
  /// Samples its workers skipped, by phase (epoch * 2 + 1 for a test
  /// phase) and source: said as each phase closes, summed for the report.
  skip_tally skips;
  /// pipeline.max-failed-share over the samples so far (made with the
  /// first batch, when the run's pipeline is known).
  std::optional<failure_share> failures;
  batch_expectation expect;
  trainer_stats stats;
  // Batch ids trained on: a hedged lease can bring a batch twice.
  batch_id_set consumed;
  // The first copies' digests, which a second copy must equal.
  copy_check copies;
  uint32_t log_every = 100; ///< 0: none (the process shows a progress line)
  /// Starts each line this trainer prints: "\r\x1b[K" (erase the line) where
  /// a progress line is on screen, so the text does not run into it.
  std::string line_start;
  // Since when the accelerator has had nothing to do.
  clock_type::time_point idle_since = clock_type::now();
  // Sums over the steps since the last progress line.
  uint64_t window_step_ns = 0;
  uint64_t window_wait_ns = 0;
  // Per epoch: train(e), test(e), train(e+1); with trainer.eval, batches
  // ahead of their phase wait in `held`.
  std::optional<epoch_gate> gate;
  bool evaluates = false;
  std::deque<image_batch> held;
  // Batches that came before the group_spec (none in practice: nothing is
  // leased before every rank said hello); run once it is here.
  std::deque<image_batch> early;
  trainer_hello hello; // said once the group_spec came
  uint64_t gate_resumed = 0; // training samples trained before a restart
  // A group's checkpoints: rank 0's trainer.checkpoint-every (0: none),
  // shared when the group forms so every rank saves at the same steps.
  uint64_t group_checkpoint_every = 0;
  // --resume on a node whose checkpoint is missing: an error for a lone
  // trainer (said at the join), none for a rank of a group (rank 0's
  // checkpoint has every rank's state).
  caf::error resume_missing;
  // The checkpoint loaded with --resume is a group's: fatal if this
  // trainer turns out to be alone (check_resume_world), as its ledger and
  // ids would be rank 0's only.
  caf::error lone_resume_refused;
  // Resumed from a loop's cursor (trainer_hooks), taken at this place: a
  // group's ranks check they all did, at the same step.
  std::optional<loop_place> loop_resume;
  struct epoch_sums {
    double loss = 0.0;
    uint64_t steps = 0;
    uint64_t correct = 0;
    uint64_t evaluated = 0;
  };
  std::map<uint64_t, epoch_sums> epochs;
  // Batches that ran and are not finished, in the order they ran: an
  // engine's pending steps (a loop's) and what ran after them.
  std::deque<unfinished_batch> unfinished;
  static constexpr const char* name = "stoker.trainer";
};

using trainer_ptr = trainer_actor::stateful_pointer<trainer_state>;

/// A trainer's cursor: what it trained on, its ledger, its place in its
/// sequence (no model: the caller adds it where it belongs).
checkpoint cursor_of(const trainer_state& s);

/// A lone trainer's checkpoint (model, optimizer, cursor); false (after
/// quitting with the reason) if it cannot be written.
bool save_checkpoint(trainer_ptr self, const router_actor& router);

/// A group's checkpoint: every rank's cursor to rank 0, which writes them
/// with the model; false (after quitting) if it cannot.
bool save_group_checkpoint(trainer_ptr self, const router_actor& router);

/// A batch from a worker: checked, then run when its phase and its turn
/// come (trainer_batches.cpp). On the trainer's thread.
void on_batch(trainer_ptr self, image_batch& batch);

/// Finishes, in order, the steps of the engine's that ended (a loop's),
/// with the batches that ran behind them, then runs what waited for a
/// phase they ended (trainer_batches.cpp).
void finish_ended(trainer_ptr self);

/// Joins the group `g` names (world > 1: blocks the trainer's thread until
/// every rank is there, and takes rank 0's checkpoint when the group
/// resumes), then says hello to the router; false after quitting.
bool join_group(trainer_ptr self, group_spec g);

} // namespace stoker::detail
