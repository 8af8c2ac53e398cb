#include "data/epoch_source.hpp"

#include <algorithm>

#include "stoker/counter_rng.hpp"

namespace stoker {

epoch_source::epoch_source(const source_spec& spec)
  : spec_(spec),
    train_batches_(spec.batch_size == 0
                     ? 0
                     : (spec.dataset_size + spec.batch_size - 1)
                         / spec.batch_size),
    batches_per_epoch_(train_batches_
                       + (spec.batch_size == 0
                            ? 0
                            : (spec.eval_size + spec.batch_size - 1)
                                / spec.batch_size)),
    order_(order_for(0)) {
  // nop
}

permutation epoch_source::order_for(uint64_t epoch) const noexcept {
  uint64_t key = mix64(spec_.seed ^ mix64(epoch))
                 ^ static_cast<uint64_t>(rng_stage::shuffle);
  return permutation{spec_.dataset_size, key};
}

std::optional<work_item> epoch_source::next() {
  if (spec_.epochs == 0)
    return std::nullopt;
  if (batch_in_epoch_ == batches_per_epoch_) {
    if (epoch_ + 1 >= spec_.epochs || batches_per_epoch_ == 0)
      return std::nullopt;
    ++epoch_;
    batch_in_epoch_ = 0;
    order_ = order_for(epoch_);
  }
  work_item item;
  item.epoch = epoch_;
  item.batch_id = epoch_ * batches_per_epoch_ + batch_in_epoch_;
  if (batch_in_epoch_ < train_batches_) {
    uint64_t first = batch_in_epoch_ * spec_.batch_size;
    uint64_t last = std::min(spec_.dataset_size, first + spec_.batch_size);
    item.sample_ids.reserve(last - first);
    for (uint64_t pos = first; pos < last; ++pos)
      item.sample_ids.push_back(spec_.shuffle ? order_(pos) : pos);
  } else { // the test split, in order
    item.part = split::test;
    uint64_t first = (batch_in_epoch_ - train_batches_) * spec_.batch_size;
    uint64_t last = std::min(spec_.eval_size, first + spec_.batch_size);
    for (uint64_t pos = first; pos < last; ++pos)
      item.sample_ids.push_back(pos);
  }
  ++batch_in_epoch_;
  return item;
}

} // namespace stoker
