#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <caf/expected.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "stoker/messages.hpp"
#include "config/run_config.hpp"

namespace stoker {

class registry;
class collective_group;

/// What one training step produced.
struct step_result {
  /// NaN when the device is simulated (no model runs); in a group, the
  /// global step's mean over every rank's samples.
  double loss = 0.0;
  /// Time in the group's collectives (waiting for the other ranks, then
  /// reducing): 0 for a group of one.
  uint64_t collective_ns = 0;
  /// The step goes on after step() returned (a loop's): the engine says
  /// when it ended (next_ended()); the fields above mean nothing then.
  bool pending = false;
};

/// What evaluating one batch produced.
struct eval_result {
  uint64_t correct = 0; ///< images whose top prediction is their label
  double loss_sum = 0.0; ///< cross-entropy summed over the images; NaN: sim
  bool pending = false; ///< as step_result's: ends later
};

/// A pending step or evaluation that ended: how long the loop waited for
/// its batch (blocked asking for it) and how long it took (from taking the
/// batch to asking for the next).
struct ended_step {
  uint64_t wait_ns = 0;
  uint64_t step_ns = 0;
};

/// The accelerator side of a trainer: one training step per batch. The
/// trainer actor owns it and calls it from its own (detached) thread only.
class step_engine {
public:
  virtual ~step_engine() = default;

  /// Trains one step on a checked CHW float32 batch. The batch stays owned
  /// by the caller, but an engine may take its buffer (`data`: a loop's
  /// feed hands it on without a copy; the caller recycles what is left);
  /// other engines copy what they keep. In a group every rank
  /// calls it once per global step, also with an empty batch (a rank whose
  /// share of a `partial` tail is nothing): its gradients count by their
  /// samples, so the update is the one of the whole global batch.
  virtual caf::expected<step_result> step(image_batch& batch) = 0;

  /// Makes this engine one rank of `group` (world > 1; the engine keeps
  /// it): rank 0's parameters and buffers are copied to every rank now,
  /// and from then on each step waits for the others (a barrier for the
  /// simulated accelerator, the gradient all-reduce for a model).
  virtual caf::error join_group(std::shared_ptr<collective_group> group) = 0;

  /// Predicts a checked CHW float32 batch without training (no gradients,
  /// the model in evaluation mode for the call). May take `data` as step().
  virtual caf::expected<eval_result> evaluate(image_batch& batch) = 0;

  /// The learning rate of the steps from now on (the trainer's schedule).
  virtual void set_learning_rate(double lr) = 0;

  /// "cuda:0", "cpu" or "sim".
  virtual std::string device() const = 0;

  /// True for the simulated accelerator: its output must say so.
  virtual bool simulated() const = 0;

  /// True where a training loop of its own computes the loss and the
  /// accuracy (a Python loop): the trainer prints no figures for it, and
  /// runs a lone trainer's phases in order (epoch e's training, its test,
  /// then e+1), as a trainer that evaluates does anyway: a loop iterates
  /// epochs.
  virtual bool loop_driven() const {
    return false;
  }

  /// The device time of the last step, measured on the device (CUDA
  /// events) where there is one; nothing where only the host's clock can
  /// tell (CPU, simulated).
  virtual std::optional<uint64_t> last_device_ns() const {
    return std::nullopt;
  }

  /// The trainer completed phase (`epoch`, `part`) after the step or
  /// evaluation of its last batch.
  virtual void end_phase(uint64_t /*epoch*/, split /*part*/) {
    // most engines do not care
  }

  /// The trainer's place in its group, once the group formed (after
  /// join_group for world > 1): `store` is the group's rendezvous store
  /// (null for a lone trainer), where an engine may meet the other ranks
  /// under keys of its own (a Python loop's torch.distributed does).
  virtual void group_formed(const group_spec& /*g*/,
                            c10::intrusive_ptr<c10d::Store> /*store*/) {
    // most engines meet the others through join_group's group only
  }

  /// For an engine whose steps may be pending: `notify` is called, from
  /// another thread, whenever one ended or the engine failed (the trainer
  /// then asks next_ended() on its own thread). Called once, before the
  /// first step.
  virtual void on_step_ended(std::function<void()> /*notify*/) {
    // steps end inside step()
  }

  /// The oldest pending step or evaluation that ended and was not given
  /// yet (they end in the order step() and evaluate() were called), or
  /// nothing; an error once the engine cannot go on (the loop left).
  virtual caf::expected<std::optional<ended_step>> next_ended() {
    return std::optional<ended_step>{};
  }

  /// The model and optimizer as bytes, for a checkpoint (empty for the
  /// simulated accelerator).
  virtual caf::expected<std::string> save_state() = 0;

  /// Restores what save_state() gave; errors name what does not fit.
  virtual caf::error load_state(const std::string& state) = 0;
};

/// A simulated accelerator for machines without one: sleeps `step_ms` per
/// step (no CPU used while "computing").
std::unique_ptr<step_engine> make_sim_engine(uint32_t step_ms);

/// The model `spec.model_entry` names in `reg` (the built-ins: the ViT or
/// the CNN) trained with its optimizer (default: SGD or AdamW as
/// trainer.optimizer says) on `local.device` (auto: CUDA when LibTorch
/// sees a GPU, else CPU) with `local.threads`. Fails with
/// errc::invalid_config when the device is not available or the model is
/// not registered, naming it.
/// `local_index`: which of this node's trainers it is (the CUDA device it
/// takes: the index modulo the devices LibTorch sees).
caf::expected<std::unique_ptr<step_engine>>
make_torch_engine(const trainer_spec& spec, const trainer_local_spec& local,
                  const registry& reg, uint32_t local_index = 0);

/// The engine `local.device` asks for (sim needs no model).
caf::expected<std::unique_ptr<step_engine>>
make_step_engine(const trainer_spec& spec, const trainer_local_spec& local,
                 const registry& reg, uint32_t local_index = 0);

/// How many trainers this node runs: trainer.count, or (0) one per CUDA
/// device LibTorch sees where the device may be CUDA, else one.
uint32_t trainers_on_node(const trainer_local_spec& local);

} // namespace stoker
