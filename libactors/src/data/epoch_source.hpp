#pragma once

#include <cstdint>
#include <optional>

#include <caf/meta/type_name.hpp>

#include "stoker/messages.hpp"
#include "stoker/options.hpp"
#include "stoker/permutation.hpp"

namespace stoker {

/// The source's cursor: hands out work items in order, one batch at a
/// time, holding O(1) memory whatever the dataset size. Not thread-safe:
/// owned by the source actor.
class epoch_source {
public:
  explicit epoch_source(const source_spec& spec);

  /// The next work item, or nothing once every epoch has been handed out.
  std::optional<work_item> next();

  /// Batches per epoch: ceil(dataset_size / batch_size), plus
  /// ceil(eval_size / batch_size) of the test split.
  uint64_t batches_per_epoch() const noexcept { return batches_per_epoch_; }

  /// Batches over the whole run.
  uint64_t total_batches() const noexcept {
    return batches_per_epoch_ * spec_.epochs;
  }

  /// Training samples over the whole run (dataset_size * epochs): what
  /// must be delivered exactly once.
  uint64_t total_samples() const noexcept {
    return spec_.dataset_size * spec_.epochs;
  }

private:
  permutation order_for(uint64_t epoch) const noexcept;

  source_spec spec_;
  uint64_t train_batches_;
  uint64_t batches_per_epoch_;
  uint64_t epoch_ = 0;
  uint64_t batch_in_epoch_ = 0;
  permutation order_;
};

} // namespace stoker
