#include "worker/batch_maker.hpp"

#include <stdexcept>

#include "stoker/errors.hpp"
#include "data/resolve.hpp"
#include "data/sample_mapper.hpp"
#include "data/synthetic_mapper.hpp"
#include "core/checksum.hpp"
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
                                             const registry& reg,
                                             const python_binding& python) {
  batch_maker out;
  out.pipeline_ = pipeline;
  if (pipeline.kind == pipeline_kind::fused_blur) {
    // Synthetic images, made from (seed, epoch, id), through the blur
    // stage this node's CPU must be able to run.
    auto choice = resolve_blur(pipeline.blur);
    if (!choice)
      return std::move(choice.error());
    out.planes_first_ = choice->impl == blur_impl::stoker;
    out.isa_ = choice->isa;
    return out;
  }
  auto& data = pipeline.data;
  auto train = open_dataset(data, split::train, pipeline.synthetic, reg);
  if (!train)
    return std::move(train.error());
  out.train_ = std::move(*train);
  auto chain = transform_chain::bind(data.transforms, reg, data.decode_region,
                                     &python);
  if (!chain)
    return std::move(chain.error());
  out.train_chain_ = std::move(*chain);
  if (data.eval) {
    auto test = open_dataset(data, split::test, pipeline.synthetic, reg);
    if (!test)
      return std::move(test.error());
    out.test_ = std::move(*test);
    chain = transform_chain::bind(data.eval_transforms, reg,
                                  data.decode_region, &python);
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
  if (planes_first_ && !item.blur_on_trainer && slowdown <= 1.0) {
    // ToTensor fused into the mapper, the checksum into the copy: each
    // image is made in planes in the aligned scratch, blurred there and
    // written to the batch once. The same bits as the steps below.
    auto& syn = pipeline_.synthetic;
    auto& blur = pipeline_.blur;
    auto batch = float_batch_for(item, layout::chw, syn.height, syn.width,
                                 syn.channels,
                                 buffer_for(float_bytes(item), own));
    batch.sample_ids = item.sample_ids;
    float* planes = aligned_work(own.blur, batch.image_elements());
    own.blur.taps.resize(size_t{blur.repeat} * blur.kernel_size);
    batch.checksums.resize(item.sample_ids.size());
    for (size_t i = 0; i < item.sample_ids.size(); ++i) {
      auto id = item.sample_ids[i];
      batch.labels.push_back(synthetic_label(id, syn.num_classes));
      make_synthetic_planes(syn, item.epoch, id, planes);
      blur_taps(blur, item.epoch, id, own.blur.taps.data());
      blur_planes_chain(planes, syn.height, syn.width, syn.channels,
                        own.blur.taps.data(), blur.repeat, blur.kernel_size,
                        isa_, own.blur);
      batch.checksums[i] = copy_checksum64(batch.image(i), planes,
                                           batch.image_bytes());
    }
    return batch;
  }
  auto batch = map_synthetic(pipeline_.synthetic, item,
                             buffer_for(float_bytes(item), own));
  if (item.blur_on_trainer) // pipeline.placement: the trainer's GPU blurs it
    return batch;
  if (slowdown > 1.0)
    waste_blur_work(pipeline_.blur, batch, slowdown - 1.0);
  apply_blur_stage(pipeline_.blur, batch, own.blur);
  return batch;
}

namespace {

// A per-batch stage's failure (`why`, its entry first) skips the batch's
// samples, each counted against the stage as a per-sample one is.
void skip_all(image_batch& batch, const std::string& why) {
  auto source = transform_failure_source(why);
  for (auto id : batch.sample_ids) {
    batch.skipped_ids.push_back(id);
    batch.skipped_names.push_back(why);
    batch.skipped_sources.push_back(source);
  }
  batch.sample_ids.clear();
  batch.labels.clear();
  batch.checksums.clear();
  batch.soft_labels.clear();
  batch.label_classes = 0;
  batch.data.clear();
}

} // namespace

image_batch batch_maker::chain(const work_item& item, double slowdown,
                               batch_resources& own) const {
  bool test = item.part == split::test;
  if (test && !test_)
    throw std::runtime_error("a test item, but this worker has no test "
                             "split open");
  auto& chain = test ? test_chain_ : train_chain_;
  auto make = [&](chain_tally* tally) {
    auto batch = map_samples(test ? *test_ : *train_, chain,
                             pipeline_.data.output, pipeline_.data.seed, item,
                             buffer_for(float_bytes(item), own), tally);
    auto err = chain.apply_batch(batch, pipeline_.data.seed,
                                 pipeline_.data.num_classes, tally);
    if (err) // the per-batch stage failed: every sample of it is skipped
      skip_all(batch, describe(err));
    return batch;
  };
  for (double extra = slowdown - 1.0; extra >= 1.0; extra -= 1.0) {
    // worker.slowdown: the same work again, thrown away
    auto waste = make(nullptr);
    if (own.buffers)
      own.buffers->release(std::move(waste.data));
  }
  return make(&own.decode);
}

} // namespace stoker
