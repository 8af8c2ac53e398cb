#pragma once

#include <cstdint>
#include <map>

#include "stoker/messages.hpp"

namespace stoker {

/// The order a trainer that evaluates after each epoch runs batches in:
/// epoch e's training batches, then e's test batches, then epoch e+1's.
/// A batch that arrives ahead of its phase waits (the trainer holds it);
/// one of a phase already passed (re-leased after a failure) runs at once.
/// The router leases items in that same order, so whatever a held batch
/// waits for is leased already: holding cannot deadlock. Plain code, owned
/// by the trainer actor.
class epoch_gate {
public:
  /// `train` and `test` samples per epoch; `trained_before`: training
  /// samples done before a restart (whole epochs count as passed).
  epoch_gate(uint64_t train, uint64_t test, uint64_t trained_before = 0);

  /// True if a batch of (epoch, part) may run now.
  bool ready(uint64_t epoch, split part) const noexcept;

  /// Counts `samples` of (epoch, part) as done (trained, evaluated or
  /// skipped); true if that completed the phase.
  bool finish(uint64_t epoch, split part, uint64_t samples);

private:
  uint64_t phase(uint64_t epoch, split part) const noexcept {
    return 2 * epoch + (part == split::test ? 1 : 0);
  }
  uint64_t total(uint64_t phase) const noexcept {
    return phase % 2 == 0 ? train_ : test_;
  }

  uint64_t train_;
  uint64_t test_;
  uint64_t current_ = 0;            // the first phase not complete
  std::map<uint64_t, uint64_t> done_; // samples per phase not yet passed
};

} // namespace stoker
