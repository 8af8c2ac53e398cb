#include "data/resolve.hpp"

#include <exception>

#include "stoker/errors.hpp"
#include "stoker/registry.hpp"
#include "transforms/transform_chain.hpp"

namespace stoker {

namespace {

caf::error bad(const std::string& what) {
  return make_error(errc::invalid_config, what);
}

// A user's source that throws is an error naming it, not a crash.
caf::error threw(const data_spec& data, const char* what,
                 const std::exception& e) {
  return bad("pipeline.source = \"" + data.source.text + "\": its " + what
             + " function threw: " + e.what());
}

std::string shape_text(const image_shape& s) {
  return std::to_string(s.height) + "x" + std::to_string(s.width) + "x"
         + std::to_string(s.channels);
}

} // namespace

bool fused_synthetic(const data_spec& data) {
  return data.source.name == "synthetic" && data.transforms.empty();
}

caf::error resolve_data(data_spec& data, source_spec& source,
                        const synthetic_spec& image, const registry& reg) {
  if (auto err = reg.check_source(data.source))
    return err;
  data.seed = source.seed;
  caf::expected<source_view> view{caf::error{}};
  try {
    view = reg.source(data.source.name)->resolve(data, image);
  } catch (const std::exception& e) {
    return threw(data, "resolve", e);
  }
  if (!view)
    return std::move(view.error());
  data.train_size = view->train_size;
  data.eval_size = view->eval_size;
  data.num_classes = view->num_classes;
  data.fingerprint = view->fingerprint;
  data.damage = view->damage;
  if (data.train_size == 0)
    return bad("pipeline.source = \"" + data.source.text
               + "\": no samples in pipeline.data = \"" + data.data
               + "\"; expected at least one");
  if (data.transforms.empty() && view->files)
    return bad("pipeline.transforms: a source of image files needs at "
               "least decode and a size, e.g. [\"decode\", "
               "\"resize(32, 32)\", \"to-tensor\"]");
  if (data.transforms.empty() && data.source.name != "synthetic")
    data.transforms = {make_entry("to-tensor")};
  if (data.transforms.empty()) {
    data.output = view->input; // the fused blur stage keeps the shape
  } else {
    auto out = check_chain(data.transforms, view->input, view->files, reg);
    if (!out)
      return std::move(out.error());
    data.output = *out;
  }
  if (data.eval) {
    if (data.eval_transforms.empty())
      data.eval_transforms = eval_chain_of(data.transforms, reg);
    auto out = check_chain(data.eval_transforms, view->input, view->files,
                           reg);
    if (!out)
      return bad("pipeline.eval-transforms: " + describe(out.error()));
    if (out->height != data.output.height || out->width != data.output.width
        || out->channels != data.output.channels)
      return bad("pipeline.eval-transforms make " + shape_text(*out)
                 + " images; expected the training shape "
                 + shape_text(data.output));
  }
  source.dataset_size = data.train_size;
  source.shards = view->shards;
  source.eval_size = data.eval ? data.eval_size : 0;
  return caf::none;
}

caf::expected<std::shared_ptr<const dataset>>
open_dataset(const data_spec& data, split which, const synthetic_spec& image,
             const registry& reg) {
  if (auto err = reg.check_source(data.source))
    return err;
  try {
    return reg.source(data.source.name)->open(data, which, image);
  } catch (const std::exception& e) {
    return threw(data, "open", e);
  }
}

} // namespace stoker
