// The built-in models as registry entries: the Vision Transformer and the
// small CNN, sized by model.* and the resolved data.


#include <torch/torch.h>

#include "stoker/errors.hpp"
#include "stoker/registry.hpp"
#include "registry/builtins.hpp"
#include "train/cnn.hpp"
#include "train/vit.hpp"

namespace stoker::detail {

namespace {

caf::error check_vit(const entry_spec&, const trainer_spec& spec) {
  auto& m = spec.model;
  if (m.width % m.heads != 0)
    return make_error(errc::invalid_config,
                      "model.heads = " + std::to_string(m.heads)
                        + ": expected a divisor of model.width ("
                        + std::to_string(m.width) + ")");
  if (m.image_height % m.patch_size != 0 || m.image_width % m.patch_size != 0)
    return make_error(errc::invalid_config,
                      "model.patch-size = " + std::to_string(m.patch_size)
                        + ": expected a divisor of the image size ("
                        + std::to_string(m.image_height) + "x"
                        + std::to_string(m.image_width) + ")");
  return caf::none;
}

} // namespace

void add_builtin_models(registry& reg) {
  // Neither takes arguments: model.* and the data size them; both train
  // with trainer.optimizer.
  model_def vit_def;
  vit_def.name = vit_def.usage = "vit";
  vit_def.check = check_vit;
  vit_def.make = [](const entry_spec&, const trainer_spec& spec) {
    return torch::nn::AnyModule{vit{spec.model}};
  };
  must_add(reg.add(std::move(vit_def)));
  model_def cnn_def;
  cnn_def.name = cnn_def.usage = "cnn";
  cnn_def.make = [](const entry_spec&, const trainer_spec& spec) {
    return torch::nn::AnyModule{cnn{spec.model}};
  };
  must_add(reg.add(std::move(cnn_def)));
}

} // namespace stoker::detail
