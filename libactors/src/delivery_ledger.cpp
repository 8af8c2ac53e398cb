#include "stoker/delivery_ledger.hpp"

namespace stoker {

delivery_ledger::delivery_ledger(uint64_t dataset_size, uint32_t epochs)
  : dataset_size_(dataset_size), epochs_(epochs), seen_(epochs) {
  // nop
}

bool delivery_ledger::record(uint64_t epoch, uint64_t sample_id) {
  ++delivered_;
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

} // namespace stoker
