#include "transforms/transform_chain.hpp"

#include <exception>

#include "stoker/errors.hpp"

namespace stoker {

namespace {

counter_rng rng_for(const draw_key& key, size_t entry) {
  return counter_rng{{key.seed, key.epoch, key.sample,
                      static_cast<rng_stage>(
                        static_cast<uint32_t>(rng_stage::transforms)
                        + static_cast<uint32_t>(entry))}};
}

} // namespace

caf::expected<image_shape> check_chain(const std::vector<transform_spec>& chain,
                                       image_shape input, bool files,
                                       const registry& reg) {
  chain_state st;
  st.shape = input;
  st.files = st.encoded = files;
  for (auto& t : chain) {
    if (auto err = reg.check_transform(t, "pipeline.transforms"))
      return err;
    auto& def = *reg.transform(t.name);
    if (st.encoded && !def.takes_files)
      return transform_error(t, "the source gives image files; expected "
                                "\"decode\" as the first transform");
    if (def.check) {
      caf::error err;
      try {
        err = def.check(t, st);
      } catch (const std::exception& e) {
        err = transform_error(t, std::string{"its check threw: "} + e.what());
      }
      if (err)
        return err;
    }
  }
  if (st.encoded)
    return make_error(errc::invalid_config,
                      "pipeline.transforms: the source gives image files; "
                      "expected \"decode\" first");
  if (st.shape.height == 0 || st.shape.width == 0)
    return make_error(errc::invalid_config,
                      "pipeline.transforms: the images' size varies; expected "
                      "a resize(HEIGHT, WIDTH), center-crop, random-crop or "
                      "random-resized-crop that fixes it");
  return st.shape;
}

std::vector<transform_spec>
eval_chain_of(const std::vector<transform_spec>& train, const registry& reg) {
  std::vector<transform_spec> out;
  for (auto& t : train) {
    auto def = reg.transform(t.name);
    if (def == nullptr || !def->eval) {
      out.push_back(t);
      continue;
    }
    for (auto& e : def->eval(t))
      out.push_back(std::move(e));
  }
  return out;
}

caf::expected<transform_chain>
transform_chain::bind(const std::vector<transform_spec>& chain,
                      const registry& reg) {
  transform_chain out;
  for (auto& t : chain) {
    if (auto err = reg.check_transform(t, "pipeline.transforms"))
      return err;
    out.specs_.push_back(t);
    out.defs_.push_back(*reg.transform(t.name));
  }
  return out;
}

caf::expected<cv::Mat> transform_chain::apply(sample_input input,
                                              const draw_key& key) const {
  for (size_t k = 0; k < specs_.size(); ++k)
    if (auto err = defs_[k].apply(specs_[k], input, rng_for(key, k)))
      return err;
  return to_float(input.pixels);
}

caf::expected<cv::Mat> apply_chain(const std::vector<transform_spec>& chain,
                                   sample_input input, const draw_key& key,
                                   const registry& reg) {
  auto bound = transform_chain::bind(chain, reg);
  if (!bound)
    return std::move(bound.error());
  return bound->apply(std::move(input), key);
}

} // namespace stoker
