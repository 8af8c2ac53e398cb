#include "data/sample_mapper.hpp"

#include <stdexcept>

#include "stoker/errors.hpp"
#include "core/checksum.hpp"
#include "kernels/blur.hpp"

namespace stoker {

image_batch map_samples(const dataset& data,
                        const transform_chain& chain,
                        image_shape shape, uint64_t seed,
                        const work_item& item, std::vector<char> buffer,
                        chain_tally* tally) {
  auto batch = float_batch_for(item, layout::chw, shape.height, shape.width,
                               shape.channels, std::move(buffer));
  size_t kept = 0;
  // Each image's checksum right after it is written, while it is still in
  // the cache (the batch of 64 ImageNet-sized images is not).
  auto stamp = [&](size_t i) {
    batch.checksums.push_back(checksum64(batch.image(i), batch.image_bytes()));
  };
  // A sample's pixels (or why it has none) into the batch.
  auto take = [&](uint64_t id, caf::expected<cv::Mat>& pixels) {
    if (!pixels) { // an unreadable or corrupt file: skip it, say why
      auto name = data.name(id);
      auto why = describe(pixels.error());
      if (why.compare(0, name.size(), name) != 0)
        why = name + ": " + why;
      batch.skipped_ids.push_back(id);
      batch.skipped_names.push_back(std::move(why));
      // A transform's failure counts against the transform (its entry
      // starts the message), not the file or shard.
      auto& err = pixels.error();
      batch.skipped_sources.push_back(
        is(err, errc::transform_failure)
          ? transform_failure_source(describe(err))
          : data.source_of(id));
      return;
    }
    auto& img = *pixels;
    if (img.empty()) { // already in the batch, in its layout
      batch.sample_ids.push_back(id);
      batch.labels.push_back(data.label(id));
      stamp(kept++);
      return;
    }
    if (static_cast<uint32_t>(img.rows) != shape.height
        || static_cast<uint32_t>(img.cols) != shape.width
        || static_cast<uint32_t>(img.channels()) != shape.channels)
      throw std::runtime_error(
        "the transforms made a " + std::to_string(img.rows) + "x"
        + std::to_string(img.cols) + "x" + std::to_string(img.channels())
        + " image of sample " + std::to_string(id) + ", expected "
        + std::to_string(shape.height) + "x" + std::to_string(shape.width)
        + "x" + std::to_string(shape.channels));
    cv::Mat dense = img.isContinuous() ? img : img.clone();
    batch.sample_ids.push_back(id);
    batch.labels.push_back(data.label(id));
    hwc_to_chw(dense.ptr<float>(), batch.image(kept), shape.height,
               shape.width, shape.channels);
    stamp(kept++);
  };
  if (chain.has_python_stage()) {
    // The batch's samples go through together: each Python entry then
    // crosses to its process once a batch.
    std::vector<chain_job> jobs(item.sample_ids.size());
    for (size_t i = 0; i < jobs.size(); ++i) {
      auto id = item.sample_ids[i];
      jobs[i].key = draw_key{seed, item.epoch, id};
      auto input = data.read(item.epoch, id);
      if (input)
        jobs[i].input = std::move(*input);
      else
        jobs[i].result = std::move(input.error());
    }
    chain.apply_many(jobs, tally);
    for (size_t i = 0; i < jobs.size(); ++i)
      take(item.sample_ids[i], jobs[i].result);
  } else {
    for (auto id : item.sample_ids) {
      auto input = data.read(item.epoch, id);
      // The fused start writes straight into the batch where it can.
      auto pixels = input
                      ? chain.apply_planes(std::move(*input),
                                           draw_key{seed, item.epoch, id},
                                           batch.image(kept), tally)
                      : caf::expected<cv::Mat>{std::move(input.error())};
      take(id, pixels);
    }
  }
  batch.data.resize(kept * batch.image_bytes());
  return batch;
}

} // namespace stoker
