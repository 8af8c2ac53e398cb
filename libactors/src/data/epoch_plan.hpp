#pragma once

#include <cstdint>

#include <caf/error.hpp>

#include "stoker/options.hpp"

namespace stoker {

/// The shape of every epoch of a run for a data-parallel group of `world`
/// trainers: global steps of `world` batches (one per rank, in rank order),
/// then the test split's batches, all rank 0's (the ranks' models are the
/// same: one evaluates). Each rank gets the same number of training
/// batches per epoch; `pipeline.last-batch` says what the tail that does not
/// fill a last step becomes. Batch ids run over the run in that order, so
/// with one trainer nothing differs from a plain sequence of batches.
/// Plain arithmetic, no state: the source, the router and the trainers each
/// compute the same plan from the same settings.
class epoch_plan {
public:
  /// A stretch of positions in an epoch's sample order.
  struct span {
    uint64_t first = 0;  ///< position; those >= dataset_size wrap (pad)
    uint64_t count = 0;
  };

  epoch_plan(const source_spec& spec, uint32_t world);

  /// An error naming the settings if no epoch can hold a step (drop with
  /// fewer samples than one step needs).
  caf::error check() const;

  uint32_t world() const noexcept { return world_; }

  /// Global training steps per epoch (each rank's training batches).
  uint64_t steps() const noexcept { return steps_; }

  /// Test batches per epoch (all rank 0's).
  uint64_t eval_batches() const noexcept { return eval_batches_; }

  /// Every batch of an epoch, all ranks.
  uint64_t batches_per_epoch() const noexcept {
    return steps_ * world_ + eval_batches_;
  }

  /// Rank `rank`'s batches per epoch.
  uint64_t items_per_epoch(uint32_t rank) const noexcept {
    return steps_ + (rank == 0 ? eval_batches_ : 0);
  }

  /// The positions rank `rank` trains on in step `step` of an epoch.
  span train_span(uint64_t step, uint32_t rank) const noexcept;

  /// Samples per epoch left out (drop) or repeated (pad).
  uint64_t dropped_per_epoch() const noexcept { return dropped_; }
  uint64_t padded_per_epoch() const noexcept { return padded_; }

  /// Training samples the run delivers, each once: every epoch's less the
  /// dropped ones.
  uint64_t delivered_samples() const noexcept {
    return (spec_.dataset_size - dropped_) * spec_.epochs;
  }

  /// Training steps over the run (the learning-rate schedule's length).
  uint64_t total_steps() const noexcept { return steps_ * spec_.epochs; }

private:
  source_spec spec_;
  uint32_t world_;
  uint64_t steps_ = 0;
  uint64_t eval_batches_ = 0;
  uint64_t dropped_ = 0;
  uint64_t padded_ = 0;
  uint64_t tail_ = 0; // samples of the last step (partial), else 0
};

} // namespace stoker
