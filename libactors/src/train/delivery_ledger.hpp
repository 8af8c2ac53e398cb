#pragma once

#include <cstdint>
#include <vector>

namespace stoker {

/// Counts which (epoch, sample id) pairs a trainer consumed, to prove
/// exactly-once delivery: one bit per sample per epoch, allocated when the
/// epoch's first sample arrives (dataset_size / 8 bytes each). Not
/// thread-safe: owned by the trainer actor.
class delivery_ledger {
public:
  delivery_ledger(uint64_t dataset_size, uint32_t epochs);

  /// Records one delivery; returns false for a duplicate or for an
  /// (epoch, id) outside the run (counted as `unexpected`).
  bool record(uint64_t epoch, uint64_t sample_id);

  /// Records a sample its worker could not read or decode: handled once
  /// (not missing, never leased again) but not delivered. False as
  /// record() says.
  bool record_skipped(uint64_t epoch, uint64_t sample_id);

  /// Samples trained on, duplicates included (skipped ones are not).
  uint64_t delivered() const noexcept { return delivered_; }
  /// Samples handled, each once: delivered or skipped.
  uint64_t unique() const noexcept { return unique_; }
  /// Of unique(), the skipped ones.
  uint64_t skipped() const noexcept { return skipped_; }
  uint64_t duplicates() const noexcept { return duplicates_; }
  uint64_t unexpected() const noexcept { return unexpected_; }
  /// The bits, epoch-major, 8 per byte (for a checkpoint).
  std::vector<uint8_t> pack() const;

  /// Restores what pack() gave and the counters; `bits` must be
  /// (dataset_size * epochs + 7) / 8 bytes. The samples the bits hold
  /// beyond `delivered` - `duplicates` were skipped.
  void restore(const std::vector<uint8_t>& bits, uint64_t delivered,
               uint64_t duplicates);

  /// Samples of the run never delivered.
  uint64_t missing() const noexcept {
    return dataset_size_ * epochs_ - unique_;
  }

private:
  // Sets the (epoch, id) bit; false (counted) if outside the run or set.
  bool mark(uint64_t epoch, uint64_t sample_id);

  uint64_t dataset_size_;
  uint32_t epochs_;
  std::vector<std::vector<bool>> seen_; // [epoch][id]
  uint64_t delivered_ = 0;
  uint64_t unique_ = 0;
  uint64_t skipped_ = 0;
  uint64_t duplicates_ = 0;
  uint64_t unexpected_ = 0;
};

} // namespace stoker
