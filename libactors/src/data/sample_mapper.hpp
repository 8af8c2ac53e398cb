#pragma once

#include <cstdint>
#include <vector>

#include "stoker/dataset.hpp"
#include "stoker/messages.hpp"
#include "transforms/transform_chain.hpp"

namespace stoker {

/// The mapper for a dataset (every pipeline but the article's fused blur
/// stage): reads each sample of `item` from `data`, runs `chain` on it with
/// draws keyed by (seed, epoch, sample id), and writes a float32 CHW batch
/// of images of `shape`, each image's checksum64 stamped as it is written
/// (`checksums`, one per kept image). A sample whose file cannot be read
/// or decoded is left out: its id, why (naming the file) and its source
/// (dataset::source_of) go to skipped_ids / skipped_names /
/// skipped_sources, and the run goes on. Writes into `buffer` (one of the
/// right size, e.g. a pool's, is used as it is). Runs on the calling
/// thread; the batch owns its buffer.
/// `tally`, when given, counts the decode steps (transform_chain::apply).
/// Throws std::runtime_error if the chain makes another shape than
/// `shape` (the head checked the chain, so that is a bug, not bad data).
image_batch map_samples(const dataset& data,
                        const transform_chain& chain,
                        image_shape shape, uint64_t seed,
                        const work_item& item,
                        std::vector<char> buffer = {},
                        chain_tally* tally = nullptr);

} // namespace stoker
