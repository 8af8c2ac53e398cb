#include "data/epoch_source.hpp"

#include <algorithm>

#include "stoker/counter_rng.hpp"

namespace stoker {

epoch_source::epoch_source(const source_spec& spec, uint32_t world)
  : spec_(spec), plan_(spec, world), order_(0, 0) {
  order_for(0);
}

void epoch_source::order_for(uint64_t epoch) {
  uint64_t key = mix64(spec_.seed ^ mix64(epoch))
                 ^ static_cast<uint64_t>(rng_stage::shuffle);
  uint64_t in_shards = 0;
  for (auto c : spec_.shards)
    in_shards += c;
  // Shards that do not add up to the dataset (none): one permutation.
  if (in_shards != spec_.dataset_size)
    order_ = permutation{spec_.dataset_size, key};
  else
    shards_.emplace(spec_.shards, spec_.shuffle_buffer, key);
}

std::optional<work_item> epoch_source::next() {
  auto per_epoch = plan_.batches_per_epoch();
  if (spec_.epochs == 0 || per_epoch == 0)
    return std::nullopt;
  if (batch_in_epoch_ == per_epoch) {
    if (epoch_ + 1 >= spec_.epochs)
      return std::nullopt;
    ++epoch_;
    batch_in_epoch_ = 0;
    order_for(epoch_);
  }
  work_item item;
  item.epoch = epoch_;
  item.batch_id = epoch_ * per_epoch + batch_in_epoch_;
  auto world = plan_.world();
  auto train = plan_.steps() * world;
  if (batch_in_epoch_ < train) {
    auto step = batch_in_epoch_ / world;
    auto rank = static_cast<uint32_t>(batch_in_epoch_ % world);
    auto span = plan_.train_span(step, rank);
    uint64_t n = spec_.dataset_size;
    item.sample_ids.reserve(span.count);
    for (uint64_t pos = span.first; pos < span.first + span.count; ++pos) {
      // Past the end (pad): the epoch's order again from its start.
      uint64_t at = pos < n ? pos : (pos - n) % n;
      item.sample_ids.push_back(spec_.shuffle ? sample_at(at) : at);
      if (pos >= n)
        ++item.slot.padded;
    }
    item.slot.rank = rank;
    item.slot.seq = epoch_ * plan_.items_per_epoch(rank) + step;
    item.slot.phase_end = step + 1 == plan_.steps();
  } else { // the test split, in order, rank 0's
    auto j = batch_in_epoch_ - train;
    item.part = split::test;
    uint64_t first = j * spec_.batch_size;
    uint64_t last = std::min(spec_.eval_size, first + spec_.batch_size);
    for (uint64_t pos = first; pos < last; ++pos)
      item.sample_ids.push_back(pos);
    item.slot.seq = epoch_ * plan_.items_per_epoch(0) + plan_.steps() + j;
    item.slot.phase_end = j + 1 == plan_.eval_batches();
  }
  ++batch_in_epoch_;
  return item;
}

} // namespace stoker
