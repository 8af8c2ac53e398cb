#pragma once

#include <cstdint>

#include <caf/error.hpp>

#include "stoker/messages.hpp"

namespace stoker {

/// What every batch of a run must look like when it reaches a trainer.
struct batch_expectation {
  uint32_t height = 224;
  uint32_t width = 224;
  uint32_t channels = 3;
  uint32_t num_classes = 1000;
  layout order = layout::chw;
  dtype type = dtype::float32;        ///< on the wire (transport.dtype)
  uint64_t dataset_size = UINT64_MAX; ///< every training id must be below
  uint64_t epochs = UINT64_MAX;       ///< every epoch must be below
  uint64_t eval_size = 0;             ///< every test id must be below
  /// Synthetic data: label == id % num_classes; else any label below
  /// num_classes (it comes from the dataset).
  bool labels_from_ids = true;
  /// Checksum the images of a batch verified in this process already (its
  /// verified_here flag) too.
  bool recheck_verified = false;
};

/// Checks a batch before it is trained on: dtype, layout, shape, buffer
/// size, epoch and ids within the run (skipped ones too), one label per
/// sample (id % num_classes for synthetic data, else below num_classes),
/// and every image's checksum (not for a batch verified in this process
/// already, unless `recheck_verified`). A batch of only skipped samples
/// has no images. Returns errc::bad_batch naming the batch, the field, the
/// value found and the value expected.
caf::error check_batch(const image_batch& batch,
                       const batch_expectation& expect);

/// Stamps `batch.checksums` with one checksum64 per image.
void stamp_checksums(image_batch& batch);

} // namespace stoker
