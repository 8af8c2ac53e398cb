#pragma once

// What a trainer says about the samples its workers could not read or
// decode: a few lines per epoch (one per source with a count), and every
// source with its count for the report.

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <caf/error.hpp>

#include "stoker/messages.hpp"

namespace stoker {

/// Skipped samples counted by (epoch, source): the log's lines as an epoch
/// ends, and the run's totals by source. Not thread-safe: owned by the
/// trainer actor (or a test).
class skip_tally {
public:
  /// At most this many sources named per epoch's lines (the rest in one
  /// line with their count), and in the run's totals.
  static constexpr size_t max_lines = 10;
  static constexpr size_t max_sources = 100;

  /// One skipped sample of `epoch` from `source` (its shard, or its own
  /// file), `why` naming the file and the fault.
  void add(uint64_t epoch, const std::string& source, const std::string& why);

  /// The lines for `epoch` (once: its counts leave the epoch's tally, not
  /// the run's), one per source in the order first seen, "SOURCE: N
  /// sample(s) skipped (WHY)", at most max_lines, then one more naming
  /// what is left. Empty if nothing of `epoch` was skipped.
  std::vector<std::string> take_epoch_lines(uint64_t epoch);

  /// The run's skips by source, in the order first seen; past max_sources
  /// the rest are summed into a last entry "(N more sources)".
  std::vector<skip_source> sources() const;

  uint64_t total() const noexcept { return total_; }

private:
  struct counted {
    uint64_t samples = 0;
    std::string reason;
  };
  struct by_source {
    std::vector<std::string> order;
    std::map<std::string, counted> counts;
    void add(const std::string& source, const std::string& why);
  };

  std::map<uint64_t, by_source> epochs_;
  by_source run_;
  uint64_t total_ = 0;
};

/// The share of a run's samples a transform failed on (a Python stage's
/// exception: skip sources is_transform_failure_source says are a
/// transform's), judged as batches come against pipeline.max-failed-share:
/// over at least min_judged samples, so a few early failures do not end a
/// run whose share is below it, while a stage that fails every sample
/// ends it with its first batch or two. Owned by the trainer actor.
class failure_share {
public:
  static constexpr uint64_t min_judged = 1000;

  explicit failure_share(double max_share) : max_share_(max_share) {
  }

  /// One batch: `delivered` samples made, and the sources and reasons of
  /// those skipped. errc::run_failure once the failures pass the share,
  /// naming the count, the share, the key and the first failure's reason
  /// (every call after that too).
  caf::error add(uint64_t delivered,
                 const std::vector<std::string>& skipped_sources,
                 const std::vector<std::string>& skipped_reasons);

  uint64_t failed() const noexcept { return failed_; }

private:
  double max_share_;
  uint64_t samples_ = 0;
  uint64_t failed_ = 0;
  std::string first_source_;
  std::string first_reason_;
};

} // namespace stoker
