#pragma once

#include <cstdint>
#include <optional>

#include <caf/meta/type_name.hpp>

#include "stoker/messages.hpp"
#include "stoker/options.hpp"
#include "stoker/permutation.hpp"
#include "data/epoch_plan.hpp"
#include "data/shard_order.hpp"

namespace stoker {

/// The source's cursor: hands out work items in order, one batch at a
/// time, holding O(1) memory whatever the dataset size. Each item names its
/// rank and its place in that rank's sequence (epoch_plan says which).
/// Not thread-safe: owned by the source actor.
class epoch_source {
public:
  /// A cursor for a group of `world` trainers (check plan().check() first:
  /// a plan without steps hands out only test batches).
  explicit epoch_source(const source_spec& spec, uint32_t world = 1);

  /// The next work item, or nothing once every epoch has been handed out.
  std::optional<work_item> next();

  /// Batches per epoch, every rank's and the test split's.
  uint64_t batches_per_epoch() const noexcept {
    return plan_.batches_per_epoch();
  }

  /// Batches over the whole run.
  uint64_t total_batches() const noexcept {
    return plan_.batches_per_epoch() * spec_.epochs;
  }

  /// Training samples over the whole run that must be delivered exactly
  /// once (dataset_size * epochs, less what pipeline.last-batch = drop
  /// leaves out).
  uint64_t total_samples() const noexcept {
    return plan_.delivered_samples();
  }

  const epoch_plan& plan() const noexcept { return plan_; }

private:
  void order_for(uint64_t epoch);
  uint64_t sample_at(uint64_t pos) const noexcept {
    return shards_ ? (*shards_)(pos) : order_(pos);
  }

  source_spec spec_;
  epoch_plan plan_;
  uint64_t epoch_ = 0;
  uint64_t batch_in_epoch_ = 0;
  permutation order_;
  std::optional<shard_order> shards_; // spec.shards: this epoch's order
};

} // namespace stoker
