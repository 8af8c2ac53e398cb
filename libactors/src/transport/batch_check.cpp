#include "transport/batch_check.hpp"

#include "stoker/errors.hpp"
#include "core/checksum.hpp"

namespace stoker {

namespace {

caf::error bad(const image_batch& b, const std::string& what) {
  return make_error(errc::bad_batch, "batch " + std::to_string(b.batch_id)
                                       + " from '" + b.producer + "': "
                                       + what);
}

std::string shape_of(uint32_t h, uint32_t w, uint32_t c) {
  return std::to_string(h) + "x" + std::to_string(w) + "x"
         + std::to_string(c);
}

} // namespace

caf::error check_batch(const image_batch& b, const batch_expectation& e) {
  if (b.type != e.type)
    return bad(b, "dtype " + to_string(b.type) + ", expected "
                    + to_string(e.type));
  if (b.order != e.order)
    return bad(b, "layout " + to_string(b.order) + ", expected "
                    + to_string(e.order));
  if (b.height != e.height || b.width != e.width || b.channels != e.channels)
    return bad(b, "image shape " + shape_of(b.height, b.width, b.channels)
                    + ", expected " + shape_of(e.height, e.width, e.channels));
  if (b.sample_ids.empty() && b.skipped_ids.empty())
    return bad(b, "no samples, expected at least one");
  if (b.skipped_names.size() > b.skipped_ids.size())
    return bad(b, std::to_string(b.skipped_names.size())
                    + " skipped file names for "
                    + std::to_string(b.skipped_ids.size())
                    + " skipped samples");
  if (b.skipped_sources.size() > b.skipped_ids.size())
    return bad(b, std::to_string(b.skipped_sources.size())
                    + " skipped sample sources for "
                    + std::to_string(b.skipped_ids.size())
                    + " skipped samples");
  if (b.part == split::test && e.eval_size == 0)
    return bad(b, "a test batch, but this run does not evaluate");
  auto id_bound = b.part == split::test ? e.eval_size : e.dataset_size;
  for (auto id : b.skipped_ids)
    if (id >= id_bound)
      return bad(b, "skipped sample id " + std::to_string(id)
                      + ", expected below " + std::to_string(id_bound));
  if (b.data.size() != b.size() * b.image_bytes())
    return bad(b, "buffer of " + std::to_string(b.data.size())
                    + " bytes, expected "
                    + std::to_string(b.size() * b.image_bytes()));
  if (b.labels.size() != b.size() || b.checksums.size() != b.size())
    return bad(b, std::to_string(b.labels.size()) + " labels and "
                    + std::to_string(b.checksums.size())
                    + " checksums, expected "
                    + std::to_string(b.size()) + " of each");
  if (!b.soft_labels.empty()) {
    if (b.label_classes != e.num_classes
        || b.soft_labels.size() != b.size() * size_t{b.label_classes})
      return bad(b, std::to_string(b.soft_labels.size())
                      + " soft labels in rows of "
                      + std::to_string(b.label_classes) + ", expected "
                      + std::to_string(b.size()) + " rows of "
                      + std::to_string(e.num_classes) + " (the classes)");
    for (auto p : b.soft_labels)
      if (!(p >= 0.0f && p <= 1.0f))
        return bad(b, "a soft label of " + std::to_string(p)
                        + ", expected a probability from 0 to 1");
  }
  if (b.epoch >= e.epochs)
    return bad(b, "epoch " + std::to_string(b.epoch) + ", expected below "
                    + std::to_string(e.epochs));
  // Images checksummed as they were written here, or compared as they
  // arrived: re-reading them (memory-bound, the batch long out of cache)
  // took a tenth of a core on a busy trainer host.
  bool checksums = !b.verified_here || e.recheck_verified;
  for (size_t i = 0; i < b.size(); ++i) {
    if (b.sample_ids[i] >= id_bound)
      return bad(b, "sample id " + std::to_string(b.sample_ids[i])
                      + (b.part == split::test
                           ? ", expected below the test split's size "
                           : ", expected below the dataset size ")
                      + std::to_string(id_bound));
    if (e.labels_from_ids) {
      auto want = static_cast<int64_t>(b.sample_ids[i] % e.num_classes);
      if (b.labels[i] != want)
        return bad(b, "sample " + std::to_string(b.sample_ids[i])
                        + " has label " + std::to_string(b.labels[i])
                        + ", expected " + std::to_string(want));
    } else if (b.labels[i] < 0 || b.labels[i] >= int64_t{e.num_classes}) {
      return bad(b, "sample " + std::to_string(b.sample_ids[i])
                      + " has label " + std::to_string(b.labels[i])
                      + ", expected 0 to " + std::to_string(e.num_classes - 1));
    }
    if (checksums
        && checksum64(b.image_data(i), b.image_bytes()) != b.checksums[i])
      return bad(b, "sample " + std::to_string(b.sample_ids[i])
                      + ": checksum mismatch (the image changed after the "
                        "worker made it)");
  }
  return caf::none;
}

void stamp_checksums(image_batch& batch) {
  batch.checksums.resize(batch.size());
  for (size_t i = 0; i < batch.size(); ++i)
    batch.checksums[i] = checksum64(batch.image_data(i), batch.image_bytes());
}

} // namespace stoker
