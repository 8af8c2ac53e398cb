#pragma once

// stoker layer: registry

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <caf/expected.hpp>
#include <caf/meta/type_name.hpp>
#include <opencv2/core.hpp>

#include "stoker/entry_spec.hpp"
#include "stoker/options.hpp"
#include "stoker/permutation.hpp"

namespace stoker {

/// Whose random draws a sample's transforms make: a pure function of
/// (seed, epoch, sample id, entry), so any worker makes the same sample.
struct draw_key {
  uint64_t seed = 0;
  uint64_t epoch = 0;
  uint64_t sample = 0;
};

/// What a source hands the chain: a file's bytes (to decode) or pixels
/// (HWC, CV_8U or CV_32F, 1..4 channels).
struct sample_input {
  std::vector<char> encoded;
  cv::Mat pixels;
};

/// One split of a dataset as a worker reads it. Implementations are
/// immutable once opened: one instance is shared by a node's workers and
/// read from their threads at once.
class dataset {
public:
  virtual ~dataset() = default;

  /// Samples in this split (after pipeline.dataset-size / eval-size).
  virtual uint64_t size() const = 0;

  /// The label of sample `index` (< size()).
  virtual int64_t label(uint64_t index) const = 0;

  /// What the transform chain starts from: pixels, or a file's bytes.
  /// Errors (errc::io_failure) name the file.
  virtual caf::expected<sample_input> read(uint64_t epoch,
                                           uint64_t index) const = 0;

  /// The sample's name in messages and the report (its file, or its index).
  virtual std::string name(uint64_t index) const = 0;

  /// Where a skipped sample is counted in the log and the report: the
  /// container it came from (a tar shard), or by default its own name.
  virtual std::string source_of(uint64_t index) const { return name(index); }
};

/// The samples a limit (pipeline.dataset-size, pipeline.eval-size) keeps
/// of a split of `total`: the first `limit` of a seeded permutation (a
/// class-sorted folder's first N would hold few classes), or every sample
/// in order without a limit. For sources, built-in or not.
class sample_subset {
public:
  sample_subset(uint64_t total, uint64_t limit, uint64_t seed);

  uint64_t size() const noexcept { return size_; }

  /// The index in the whole split of the subset's sample `i` (< size()).
  uint64_t operator()(uint64_t i) const noexcept {
    return shuffled_ ? order_(i) : i;
  }

private:
  uint64_t size_;
  permutation order_;
  bool shuffled_;
};

} // namespace stoker
