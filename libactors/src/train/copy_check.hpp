#pragma once

// A hedged or re-leased lease can bring a batch twice (from two workers):
// the trainer trains on the first copy and drops the second. Both are made
// from the same samples with the same counter-RNG draws, so they must be
// the same bits; a second copy that is not says the chain is not
// deterministic (a Python stage drawing from an unseeded generator, say):
// what was trained on depended on which worker won the race.

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <unordered_map>

#include "stoker/messages.hpp"

namespace stoker {

/// The digests of the batches a trainer took (their images' checksums,
/// sample ids and labels), the most recent `keep` of them, against which
/// a later copy of the same batch id is compared. Plain class, one
/// trainer's thread.
class copy_check {
public:
  explicit copy_check(size_t keep = 65536) : keep_(keep) {}

  /// `batch` is the first copy of its id (trained on or held to be).
  void taken(const image_batch& batch);

  /// What a second copy of a taken batch says: true, the same bits;
  /// false, different ones (`first_producer`, when given, gets the worker
  /// that made the first); nothing when its first copy is no longer kept.
  std::optional<bool> same(const image_batch& copy,
                           std::string* first_producer = nullptr) const;

  /// The digest compared: the images' checksums, the sample ids, the
  /// labels and the soft labels' bits, in order.
  static uint64_t digest_of(const image_batch& batch) noexcept;

private:
  struct first_copy {
    uint64_t digest = 0;
    std::string producer;
  };
  size_t keep_;
  std::unordered_map<uint64_t, first_copy> taken_;
  std::deque<uint64_t> order_; // batch ids, oldest first
};

} // namespace stoker
