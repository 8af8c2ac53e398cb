#include "train/delivery_ledger.hpp"

#include <algorithm>

namespace stoker {

delivery_ledger::delivery_ledger(uint64_t dataset_size, uint32_t epochs)
  : dataset_size_(dataset_size), epochs_(epochs), seen_(epochs) {
  // nop
}

bool delivery_ledger::mark(uint64_t epoch, uint64_t sample_id) {
  if (epoch >= epochs_ || sample_id >= dataset_size_) {
    ++unexpected_;
    return false;
  }
  auto& bits = seen_[epoch];
  if (bits.empty())
    bits.resize(dataset_size_, false);
  if (bits[sample_id]) {
    ++duplicates_;
    return false;
  }
  bits[sample_id] = true;
  ++unique_;
  return true;
}

bool delivery_ledger::record(uint64_t epoch, uint64_t sample_id) {
  ++delivered_;
  return mark(epoch, sample_id);
}

bool delivery_ledger::record_skipped(uint64_t epoch, uint64_t sample_id) {
  if (!mark(epoch, sample_id))
    return false;
  ++skipped_;
  return true;
}

std::vector<uint8_t> delivery_ledger::pack() const {
  std::vector<uint8_t> out((dataset_size_ * epochs_ + 7) / 8, 0);
  for (uint64_t e = 0; e < epochs_; ++e) {
    auto& bits = seen_[e];
    for (uint64_t i = 0; i < bits.size(); ++i)
      if (bits[i]) {
        auto k = e * dataset_size_ + i;
        out[k / 8] = static_cast<uint8_t>(out[k / 8] | (1u << (k % 8)));
      }
  }
  return out;
}

void delivery_ledger::restore(const std::vector<uint8_t>& bits,
                              uint64_t delivered, uint64_t duplicates) {
  unique_ = 0;
  for (uint64_t e = 0; e < epochs_; ++e) {
    auto& epoch = seen_[e];
    epoch.assign(dataset_size_, false);
    for (uint64_t i = 0; i < dataset_size_; ++i) {
      auto k = e * dataset_size_ + i;
      if (k / 8 < bits.size() && (bits[k / 8] >> (k % 8)) & 1u) {
        epoch[i] = true;
        ++unique_;
      }
    }
  }
  delivered_ = delivered;
  duplicates_ = duplicates;
  // What was delivered once is in the bits; the rest of the bits were
  // skipped (a checkpoint holds no sample outside the run).
  auto once = delivered_ - std::min(delivered_, duplicates_);
  skipped_ = unique_ - std::min(unique_, once);
  unexpected_ = once - std::min(once, unique_ - skipped_);
}

} // namespace stoker
