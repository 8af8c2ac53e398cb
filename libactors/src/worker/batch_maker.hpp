#pragma once

// How a worker turns a work item into a batch, decided once per run
// (pipeline_options::kind) instead of at every batch.

#include <memory>

#include <caf/expected.hpp>

#include "stoker/dataset.hpp"
#include "stoker/messages.hpp"
#include "stoker/options.hpp"
#include "kernels/blur.hpp"
#include "transforms/transform_chain.hpp"
#include "transport/buffer_pool.hpp"

namespace stoker {

class registry;

/// What one worker brings to batch_maker::make and keeps between batches,
/// so that its steady state allocates no large buffer.
struct batch_resources {
  blur_scratch blur; ///< its own: the blur stage's scratch memory
  /// The node's (shared by its workers and, in a local run, the trainer):
  /// every batch's image buffer comes from here and goes back after it is
  /// sent or trained on. Null: fresh buffers.
  std::shared_ptr<buffer_pool> buffers;
  /// Its decode steps so far (make() adds each batch's; the work
  /// worker.slowdown throws away is not counted).
  chain_tally decode;
};

/// Makes the batches of one pipeline: the article's fused blur stage over
/// synthetic images (pipeline_kind::fused_blur), or every sample read
/// through the source and run through the transform chain
/// (pipeline_kind::transform_chain). Opened once per node; its datasets
/// and chains are shared by the node's workers, which call `make` from
/// their own threads at once: immutable after open.
class batch_maker {
public:
  /// Opens what `pipeline` reads (the splits through its source in `reg`,
  /// the test split only when the run evaluates) and binds its chains; for
  /// the fused stage, checks this CPU runs the blur asked for. Errors name
  /// the path (open_dataset), the missing entry or the ISA. `python`: what
  /// the chains' python(...) entries run on (their modules imported now).
  static caf::expected<batch_maker> open(const pipeline_options& pipeline,
                                         const registry& reg,
                                         const python_binding& python = {});

  /// The float32 batch of `item` (CHW; HWC and unblurred when the item is
  /// leased for the trainer's GPU blur). With `slowdown` > 1 the transform
  /// work is done that many times and the extra results thrown away
  /// (worker.slowdown: slow workers for benchmarks and tests). The images'
  /// buffer comes from `own.buffers`, the blur's scratch is `own.blur`.
  /// Throws std::exception for a batch that cannot be made: the same item
  /// would fail on any worker (std::bad_alloc: not on a machine with more
  /// memory, maybe).
  image_batch make(const work_item& item, double slowdown,
                   batch_resources& own) const;

  /// The bytes of `item`'s images as float32: what make() allocates.
  uint64_t float_bytes(const work_item& item) const noexcept {
    auto& o = pipeline_.data.output;
    return uint64_t{item.sample_ids.size()} * o.height * o.width * o.channels
           * sizeof(float);
  }

  pipeline_kind kind() const noexcept {
    return pipeline_.kind;
  }

private:
  batch_maker() = default;

  image_batch fused(const work_item& item, double slowdown,
                    batch_resources& own) const;
  image_batch chain(const work_item& item, double slowdown,
                    batch_resources& own) const;

  pipeline_options pipeline_;
  /// The fused stage through the hand-written chain (not OpenCV): each
  /// image is then made straight into planes (make_synthetic_planes),
  /// blurred there, and copied into the batch with its checksum.
  bool planes_first_ = false;
  cpu_isa isa_ = cpu_isa::scalar; ///< the chain's, when planes_first_
  std::shared_ptr<const dataset> train_;
  std::shared_ptr<const dataset> test_; ///< null unless the run evaluates
  transform_chain train_chain_;
  transform_chain test_chain_;
};

} // namespace stoker
