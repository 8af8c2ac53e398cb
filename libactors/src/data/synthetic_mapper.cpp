#include "data/synthetic_mapper.hpp"

#include "stoker/counter_rng.hpp"

namespace stoker {

int64_t synthetic_label(uint64_t id, uint32_t num_classes) noexcept {
  return static_cast<int64_t>(id % num_classes);
}

void make_synthetic_image(const synthetic_spec& spec, uint64_t epoch,
                          uint64_t id, float* out) noexcept {
  counter_rng rng{{spec.seed, epoch, id, rng_stage::sample_pixels}};
  rng.fill_standard_normal(out, size_t{spec.height} * spec.width
                                  * spec.channels);
}

image_batch map_synthetic(const synthetic_spec& spec, const work_item& item,
                          std::vector<char> buffer) {
  auto batch = float_batch_for(item, layout::hwc, spec.height, spec.width,
                               spec.channels, std::move(buffer));
  batch.sample_ids = item.sample_ids;
  batch.labels.reserve(item.sample_ids.size());
  for (size_t i = 0; i < item.sample_ids.size(); ++i) {
    batch.labels.push_back(synthetic_label(item.sample_ids[i],
                                           spec.num_classes));
    make_synthetic_image(spec, item.epoch, item.sample_ids[i],
                         batch.image(i));
  }
  return batch;
}

} // namespace stoker
