#pragma once

#include <cstddef>
#include <cstdint>
#include <set>
#include <vector>

namespace stoker {

/// The batch ids a trainer has trained on, so it can drop a second copy
/// (a hedged lease) by id. Ids are handed out in order (epoch, then batch)
/// and come back nearly in order, so it stores a watermark below which
/// every id is in, plus the few ids above it: memory stays at the number
/// of batches out of order, not the length of the run. Not thread-safe:
/// owned by the trainer actor.
class batch_id_set {
public:
  /// Adds `id`; returns false if it was in already.
  bool insert(uint64_t id);

  bool contains(uint64_t id) const;

  /// Ids stored above the watermark (for tests and memory accounting).
  size_t sparse_size() const noexcept { return above_.size(); }

  /// Every id below it is in (for a checkpoint).
  uint64_t watermark() const noexcept { return watermark_; }

  /// The ids above the watermark, ascending (for a checkpoint).
  std::vector<uint64_t> sparse() const;

  /// Restores what watermark() and sparse() gave.
  void restore(uint64_t watermark, const std::vector<uint64_t>& ids);

private:
  uint64_t watermark_ = 0; // every id below is in
  std::set<uint64_t> above_;
};

} // namespace stoker
