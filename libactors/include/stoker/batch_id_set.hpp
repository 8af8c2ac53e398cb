#pragma once

#include <cstddef>
#include <cstdint>
#include <set>

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

private:
  uint64_t watermark_ = 0; // every id below is in
  std::set<uint64_t> above_;
};

} // namespace stoker
