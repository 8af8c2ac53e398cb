#include "worker/batch_maker.hpp"

#include <stdexcept>

#include "data/resolve.hpp"
#include "data/sample_mapper.hpp"
#include "data/synthetic_mapper.hpp"
#include "kernels/blur.hpp"

namespace stoker {

namespace {

// worker.slowdown on the fused stage: the blur's work done `extra` more
// times on copies (whole batches, then a share of the images for the
// fraction); the batch itself is blurred once, so its contents do not
// change.
void waste_blur_work(const blur_params& blur, const image_batch& unblurred,
                     double extra) {
  for (; extra >= 1.0; extra -= 1.0) {
    auto copy = unblurred;
    apply_blur_stage(blur, copy);
  }
  auto images = static_cast<size_t>(
    extra * static_cast<double>(unblurred.size()) + 0.5);
  if (images == 0)
    return;
  auto part = unblurred;
  part.sample_ids.resize(images);
  part.labels.resize(images);
  part.data.resize(images * part.image_bytes());
  apply_blur_stage(blur, part);
}

} // namespace

caf::expected<batch_maker> batch_maker::open(const pipeline_options& pipeline,
                                             const registry& reg) {
  batch_maker out;
  out.pipeline_ = pipeline;
  if (pipeline.kind == pipeline_kind::fused_blur) {
    // Synthetic images, made from (seed, epoch, id), through the blur
    // stage this node's CPU must be able to run.
    if (auto choice = resolve_blur(pipeline.blur); !choice)
      return std::move(choice.error());
    return out;
  }
  auto& data = pipeline.data;
  auto train = open_dataset(data, split::train, pipeline.synthetic, reg);
  if (!train)
    return std::move(train.error());
  out.train_ = std::move(*train);
  auto chain = transform_chain::bind(data.transforms, reg);
  if (!chain)
    return std::move(chain.error());
  out.train_chain_ = std::move(*chain);
  if (data.eval) {
    auto test = open_dataset(data, split::test, pipeline.synthetic, reg);
    if (!test)
      return std::move(test.error());
    out.test_ = std::move(*test);
    chain = transform_chain::bind(data.eval_transforms, reg);
    if (!chain)
      return std::move(chain.error());
    out.test_chain_ = std::move(*chain);
  }
  return out;
}

image_batch batch_maker::make(const work_item& item, double slowdown,
                              batch_resources& own) const {
  return pipeline_.kind == pipeline_kind::fused_blur
           ? fused(item, slowdown, own)
           : chain(item, slowdown, own);
}

namespace {

std::vector<char> buffer_for(uint64_t bytes, batch_resources& own) {
  return own.buffers ? own.buffers->acquire(bytes) : std::vector<char>{};
}

} // namespace

image_batch batch_maker::fused(const work_item& item, double slowdown,
                               batch_resources& own) const {
  auto batch = map_synthetic(pipeline_.synthetic, item,
                             buffer_for(float_bytes(item), own));
  if (item.blur_on_trainer) // pipeline.placement: the trainer's GPU blurs it
    return batch;
  if (slowdown > 1.0)
    waste_blur_work(pipeline_.blur, batch, slowdown - 1.0);
  apply_blur_stage(pipeline_.blur, batch, own.blur);
  return batch;
}

image_batch batch_maker::chain(const work_item& item, double slowdown,
                               batch_resources& own) const {
  bool test = item.part == split::test;
  if (test && !test_)
    throw std::runtime_error("a test item, but this worker has no test "
                             "split open");
  auto make = [&] {
    return map_samples(test ? *test_ : *train_,
                       test ? test_chain_ : train_chain_,
                       pipeline_.data.output, pipeline_.data.seed, item,
                       buffer_for(float_bytes(item), own));
  };
  for (double extra = slowdown - 1.0; extra >= 1.0; extra -= 1.0) {
    auto waste = make(); // worker.slowdown: the same work again, thrown away
    if (own.buffers)
      own.buffers->release(std::move(waste.data));
  }
  return make();
}

} // namespace stoker
