#pragma once

#include <cstdint>
#include <vector>

namespace stoker {

/// An epoch's order over samples stored in shards (pipeline.source =
/// tar-shards): the shards in a keyed order, then the samples shuffled
/// within consecutive windows of `buffer` positions. WebDataset's shard
/// shuffle and shuffle buffer, made a bijection of [0, n) so that
/// exactly-once delivery and checkpoints hold as with a full permutation;
/// the samples of one window come from at most buffer / (smallest shard)
/// + 2 shards, so workers read each shard almost in order. Sample indices
/// run shard by shard (the listing's order). O(shards) memory; a plain
/// value, any thread.
class shard_order {
public:
  /// `counts`: samples per shard, in index order; `buffer` >= 1.
  shard_order(const std::vector<uint64_t>& counts, uint64_t buffer,
              uint64_t key);

  /// The sample at position `i` (requires i < size()).
  uint64_t operator()(uint64_t i) const noexcept;

  uint64_t size() const noexcept { return n_; }

private:
  std::vector<uint64_t> first_; // of each shard, in index order
  std::vector<uint64_t> ends_;  // position after each place's shard
  std::vector<uint32_t> shard_; // the shard at each place
  uint64_t n_ = 0;
  uint64_t buffer_;
  uint64_t key_;
};

} // namespace stoker
