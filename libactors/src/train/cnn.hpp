#pragma once

#include <torch/torch.h>

#include "config/run_config.hpp"

namespace stoker {

/// The small CNN of Fashion-MNIST's published baselines (`trainer.model =
/// cnn`): conv 3x3 (32) + ReLU + 2x2 max-pool, conv 3x3 (64) + ReLU + 2x2
/// max-pool, a 128-unit ReLU layer and a linear classifier. Sized from
/// `spec`'s image and class fields (28x28x1 and 10 for Fashion-MNIST).
/// Input: [N, C, H, W] float32; output: [N, classes] logits.
class cnn_impl : public torch::nn::Module {
public:
  explicit cnn_impl(const vit_spec& spec);

  torch::Tensor forward(torch::Tensor images);

private:
  torch::nn::Conv2d conv1_{nullptr}, conv2_{nullptr};
  torch::nn::Linear fc1_{nullptr}, fc2_{nullptr};
};
TORCH_MODULE_IMPL(cnn, cnn_impl);

} // namespace stoker
