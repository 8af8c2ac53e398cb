#include "stoker/messages.hpp"


namespace stoker {

size_t dtype_size(dtype t) noexcept {
  switch (t) {
    case dtype::float32:
      return 4;
    case dtype::float16:
    case dtype::bfloat16:
      return 2;
  }
  return 0;
}

image_batch float_batch_for(const work_item& item, layout order,
                            uint32_t height, uint32_t width, uint32_t channels,
                            std::vector<char> buffer) {
  image_batch batch;
  batch.epoch = item.epoch;
  batch.batch_id = item.batch_id;
  batch.part = item.part;
  batch.slot = item.slot;
  batch.type = dtype::float32;
  batch.order = order;
  batch.height = height;
  batch.width = width;
  batch.channels = channels;
  batch.data = std::move(buffer);
  batch.data.resize(item.sample_ids.size() * batch.image_bytes());
  return batch;
}

void add_stage_time(std::vector<stage_time>& into, const std::string& stage,
                    uint64_t samples, uint64_t ns) {
  for (auto& row : into)
    if (row.stage == stage) {
      row.samples += samples;
      row.ns += ns;
      return;
    }
  into.push_back(stage_time{stage, samples, ns});
}

} // namespace stoker
