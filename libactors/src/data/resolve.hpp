#pragma once

// Looking at a run's data: on the head, what the source holds; on a
// worker node, opening the splits the head resolved.

#include <memory>

#include <caf/error.hpp>
#include <caf/expected.hpp>

#include "stoker/dataset.hpp"
#include "stoker/options.hpp"

namespace stoker {

class registry;

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
