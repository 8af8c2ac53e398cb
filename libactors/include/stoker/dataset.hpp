#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <caf/expected.hpp>
#include <caf/meta/type_name.hpp>

#include "stoker/entry_spec.hpp"
#include "stoker/options.hpp"
#include "stoker/permutation.hpp"
#include "stoker/transforms.hpp"

namespace stoker {

class registry;

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

/// Whether `data` is the article's pipeline: synthetic images through the
/// fused blur stage (the synthetic source without pipeline.transforms).
bool fused_synthetic(const data_spec& data);

/// On the head (and a local run): asks the source in `reg` what its data
/// holds (no sample is read), checks both transform chains against `reg`,
/// and fills `data`'s sizes, classes, output shape and fingerprint and
/// `source`'s dataset and eval sizes. A synthetic source without
/// transforms keeps `image`'s shape. Errors (errc::invalid_config) name the
/// key, the path and what was expected.
caf::error resolve_data(data_spec& data, source_spec& source,
                        const synthetic_spec& image, const registry& reg);

/// On a worker: opens split `which` of the resolved `data` through its
/// source in `reg`. The source refuses a view that differs from the
/// head's (size, classes or listing fingerprint), naming the path, since
/// the worker would make other samples than the head planned (shared
/// storage is assumed).
caf::expected<std::shared_ptr<const dataset>>
open_dataset(const data_spec& data, split which, const synthetic_spec& image,
             const registry& reg);

} // namespace stoker
