#include "train/epoch_gate.hpp"

namespace stoker {

epoch_gate::epoch_gate(uint64_t train, uint64_t test, uint64_t trained_before)
  : train_(train), test_(test) {
  if (train_ > 0) {
    current_ = 2 * (trained_before / train_);
    if (auto part = trained_before % train_; part > 0)
      done_[current_] = part;
  }
}

bool epoch_gate::ready(uint64_t epoch, split part) const noexcept {
  return phase(epoch, part) <= current_;
}

bool epoch_gate::finish(uint64_t epoch, split part, uint64_t samples) {
  auto p = phase(epoch, part);
  if (p < current_)
    return false; // a phase passed already (a late re-lease)
  auto& count = done_[p];
  count += samples;
  bool completed = count >= total(p);
  while (train_ > 0 && done_[current_] >= total(current_)) {
    done_.erase(current_);
    ++current_;
  }
  return completed;
}

} // namespace stoker
