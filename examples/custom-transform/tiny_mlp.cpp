#include "my_entries.hpp"

#include <torch/torch.h>

#include "stoker/errors.hpp"

namespace {

class tiny_mlp_impl : public torch::nn::Module {
public:
  tiny_mlp_impl(int64_t inputs, int64_t hidden, int64_t classes)
    : hidden_(register_module("hidden", torch::nn::Linear(inputs, hidden))),
      out_(register_module("out", torch::nn::Linear(hidden, classes))) {
    // nop
  }

  torch::Tensor forward(torch::Tensor x) {
    return out_(torch::relu(hidden_(x.flatten(1))));
  }

private:
  torch::nn::Linear hidden_;
  torch::nn::Linear out_;
};
TORCH_MODULE_IMPL(tiny_mlp, tiny_mlp_impl);

} // namespace

stoker::model_def tiny_mlp_model() {
  stoker::model_def def;
  def.name = "tiny-mlp";
  def.min_args = def.max_args = 1;
  def.usage = "tiny-mlp(HIDDEN)";
  def.version = "1";
  // On the head, once the data's shape is known (spec.model).
  def.check = [](const stoker::entry_spec& e, const stoker::trainer_spec&) {
    if (!(e.args[0] >= 1 && e.args[0] <= 65536))
      return stoker::make_error(stoker::errc::invalid_config,
                                "trainer.model = \"" + e.text
                                  + "\": HIDDEN from 1 to 65536 expected");
    return caf::error{};
  };
  // On the trainer: [N, C, H, W] float32 in, [N, classes] logits out.
  def.make = [](const stoker::entry_spec& e, const stoker::trainer_spec& spec) {
    auto& m = spec.model;
    return torch::nn::AnyModule{
      tiny_mlp{int64_t{m.channels} * m.image_height * m.image_width,
               static_cast<int64_t>(e.args[0]), m.num_classes}};
  };
  def.optimizer = [](std::vector<torch::Tensor> parameters,
                     const stoker::trainer_spec& spec)
    -> std::unique_ptr<torch::optim::Optimizer> {
    return std::make_unique<torch::optim::AdamW>(
      std::move(parameters), torch::optim::AdamWOptions(spec.lr));
  };
  return def;
}
