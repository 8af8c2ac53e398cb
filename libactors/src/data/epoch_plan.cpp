#include "data/epoch_plan.hpp"

#include <algorithm>

#include "stoker/errors.hpp"

namespace stoker {

epoch_plan::epoch_plan(const source_spec& spec, uint32_t world)
  : spec_(spec), world_(std::max(1u, world)) {
  uint64_t n = spec.dataset_size;
  uint64_t b = spec.batch_size;
  if (b == 0)
    return;
  uint64_t per_step = b * world_;
  uint64_t full = n / per_step;
  uint64_t rest = n - full * per_step;
  eval_batches_ = (spec.eval_size + b - 1) / b;
  steps_ = full;
  if (rest == 0)
    return;
  switch (spec.last_batch) {
    case last_batch_policy::drop:
      dropped_ = rest;
      break;
    case last_batch_policy::pad:
      steps_ = full + 1;
      padded_ = per_step - rest;
      break;
    case last_batch_policy::partial:
      steps_ = full + 1;
      tail_ = rest;
      break;
  }
}

caf::error epoch_plan::check() const {
  if (steps_ > 0 || spec_.dataset_size == 0)
    return caf::none;
  return make_error(errc::invalid_config,
                    "pipeline.last-batch = \"drop\" with "
                    "pipeline.dataset-size = "
                      + std::to_string(spec_.dataset_size)
                      + " leaves no training step: one step takes "
                      + std::to_string(world_) + " trainer(s) x "
                      + std::to_string(spec_.batch_size)
                      + " samples; expected a larger dataset, a smaller "
                        "pipeline.batch-size, or \"partial\" or \"pad\"");
}

epoch_plan::span epoch_plan::train_span(uint64_t step,
                                        uint32_t rank) const noexcept {
  uint64_t b = spec_.batch_size;
  uint64_t start = step * b * world_;
  if (tail_ == 0 || step + 1 < steps_)
    return {start + rank * b, b};
  // The partial last step: its samples split as evenly as they go, the
  // first `tail % world` ranks one more.
  uint64_t base = tail_ / world_;
  uint64_t extra = tail_ % world_;
  return {start + rank * base + std::min<uint64_t>(rank, extra),
          base + (rank < extra ? 1 : 0)};
}

} // namespace stoker
