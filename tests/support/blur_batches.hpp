#pragma once

// Batches for the blur paths' equivalence tests (CPU, CUDA, and the
// hand-written kernels): random float32 HWC images and their comparison.

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "stoker/counter_rng.hpp"
#include "stoker/messages.hpp"

namespace stoker::test {

/// `n` images of h x w x c standard-normal pixels (HWC), ids 7, 8, ...
inline image_batch random_hwc_batch(uint32_t h, uint32_t w, uint32_t c,
                                    size_t n, uint64_t seed,
                                    uint64_t epoch = 0) {
  work_item item;
  item.epoch = epoch;
  item.batch_id = seed;
  for (size_t i = 0; i < n; ++i)
    item.sample_ids.push_back(7 + i);
  auto batch = float_batch_for(item, layout::hwc, h, w, c);
  batch.sample_ids = item.sample_ids;
  batch.labels.assign(n, 0);
  counter_rng{{seed, epoch, 0, rng_stage::sample_pixels}}
    .fill_standard_normal(batch.image(0), n * batch.image_elements());
  return batch;
}

/// The largest |a - b| over two float32 batches of the same shape.
inline float max_abs_diff(const image_batch& a, const image_batch& b) {
  float m = 0.0f;
  size_t count = a.size() * a.image_elements();
  for (size_t i = 0; i < count; ++i)
    m = std::max(m, std::abs(a.image(0)[i] - b.image(0)[i]));
  return m;
}

} // namespace stoker::test
