#pragma once

#include <cstdint>

#include <caf/meta/type_name.hpp>

#include "stoker/messages.hpp"
#include "stoker/options.hpp"

namespace stoker {

/// Label of sample `id`: id % num_classes, as in the article.
int64_t synthetic_label(uint64_t id, uint32_t num_classes) noexcept;

/// Writes the image of sample `id` in `epoch` (HWC float32, standard normal)
/// to `out[0 .. h*w*c)`. A pure function of (seed, epoch, id): identical on
/// every worker and every CPU.
void make_synthetic_image(const synthetic_spec& spec, uint64_t epoch,
                          uint64_t id, float* out) noexcept;

/// The same image as make_synthetic_image, already in planes (CHW, what
/// ToTensor makes of it): `out[c * h * w + y * w + x]` is the HWC image's
/// value at (y, x, c), bit for bit. Made 16 KB at a time and spread into
/// the planes, so the HWC image is never written whole.
void make_synthetic_planes(const synthetic_spec& spec, uint64_t epoch,
                           uint64_t id, float* out) noexcept;

/// The mapper stage: turns a work item into a batch of raw HWC images with
/// labels, written into `buffer` (one of the right size, e.g. a pool's, is
/// used as it is; none: a fresh one). Runs on the calling thread; the batch
/// owns its buffer.
image_batch map_synthetic(const synthetic_spec& spec, const work_item& item,
                          std::vector<char> buffer = {});

} // namespace stoker
