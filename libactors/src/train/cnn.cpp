#include "train/cnn.hpp"

namespace stoker {

cnn_impl::cnn_impl(const vit_spec& spec) {
  auto c = static_cast<int64_t>(spec.channels);
  auto h = static_cast<int64_t>(spec.image_height) / 4; // two 2x2 pools
  auto w = static_cast<int64_t>(spec.image_width) / 4;
  conv1_ = register_module(
    "conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(c, 32, 3).padding(1)));
  conv2_ = register_module(
    "conv2",
    torch::nn::Conv2d(torch::nn::Conv2dOptions(32, 64, 3).padding(1)));
  fc1_ = register_module("fc1", torch::nn::Linear(64 * h * w, 128));
  fc2_ = register_module(
    "fc2", torch::nn::Linear(128, static_cast<int64_t>(spec.num_classes)));
}

torch::Tensor cnn_impl::forward(torch::Tensor x) {
  x = torch::max_pool2d(torch::relu(conv1_(x)), 2);
  x = torch::max_pool2d(torch::relu(conv2_(x)), 2);
  x = torch::relu(fc1_(x.flatten(1)));
  return fc2_(x);
}

} // namespace stoker
