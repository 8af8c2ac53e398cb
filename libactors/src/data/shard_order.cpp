#include "data/shard_order.hpp"

#include <algorithm>

#include "stoker/counter_rng.hpp"
#include "stoker/permutation.hpp"

namespace stoker {

shard_order::shard_order(const std::vector<uint64_t>& counts,
                         uint64_t buffer, uint64_t key)
  : buffer_(std::max<uint64_t>(1, buffer)), key_(key) {
  first_.reserve(counts.size());
  for (auto c : counts) {
    first_.push_back(n_);
    n_ += c;
  }
  permutation places{counts.size(), mix64(key ^ 0x5a17)};
  uint64_t end = 0;
  for (uint64_t p = 0; p < counts.size(); ++p) {
    auto s = static_cast<uint32_t>(places(p));
    if (counts[s] == 0)
      continue;
    end += counts[s];
    ends_.push_back(end);
    shard_.push_back(s);
  }
}

uint64_t shard_order::operator()(uint64_t i) const noexcept {
  // Shuffled within its window of the shard-ordered sequence...
  uint64_t window = i / buffer_;
  uint64_t start = window * buffer_;
  uint64_t len = std::min(buffer_, n_ - start);
  uint64_t j = start + permutation{len, mix64(key_ ^ mix64(window))}(i - start);
  // ... which runs through the shards in their keyed order.
  auto place = static_cast<size_t>(
    std::upper_bound(ends_.begin(), ends_.end(), j) - ends_.begin());
  uint64_t before = place == 0 ? 0 : ends_[place - 1];
  return first_[shard_[place]] + (j - before);
}

} // namespace stoker
