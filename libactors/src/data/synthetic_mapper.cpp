#include "data/synthetic_mapper.hpp"

#include "stoker/counter_rng.hpp"
#include "kernels/blur.hpp"

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

void make_synthetic_planes(const synthetic_spec& spec, uint64_t epoch,
                           uint64_t id, float* out) noexcept {
  counter_rng rng{{spec.seed, epoch, id, rng_stage::sample_pixels}};
  const size_t channels = spec.channels;
  const size_t plane = size_t{spec.height} * spec.width;
  const size_t total = plane * channels;
  // 64 pixels' worth of chunks at a time (channels <= 4: at most 16 KB),
  // a whole number of pixels and of the RNG's chunks.
  constexpr size_t pixels = 64 * counter_rng::normal_chunk_floats / 4;
  float hwc[pixels * 4];
  const size_t step = pixels * channels;
  for (size_t start = 0; start < total; start += step) {
    size_t n = total - start < step ? total - start : step;
    rng.fill_standard_normal_at(hwc, start, n);
    hwc_to_chw_run(hwc, out + start / channels, n / channels,
                   static_cast<uint32_t>(channels), plane);
  }
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
