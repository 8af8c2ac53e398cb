#pragma once

#include <torch/torch.h>

#include "config/run_config.hpp"

namespace stoker {

/// One pre-norm Transformer block: x + attn(ln(x)), then x + mlp(ln(x)).
class vit_block_impl : public torch::nn::Module {
public:
  vit_block_impl(int64_t width, int64_t heads, int64_t mlp_dim);

  torch::Tensor forward(torch::Tensor x);

private:
  int64_t heads_;
  torch::nn::LayerNorm norm1_{nullptr}, norm2_{nullptr};
  torch::nn::Linear qkv_{nullptr}, proj_{nullptr}, fc1_{nullptr},
    fc2_{nullptr};
};
TORCH_MODULE_IMPL(vit_block, vit_block_impl);

/// A Vision Transformer as timm builds it by default: conv patch embedding,
/// class token, learned position embedding, pre-norm blocks with
/// qkv bias and GELU MLP, final LayerNorm (eps 1e-6) and a linear head on
/// the class token. Input: [N, C, H, W] float32; output: [N, classes].
class vit_impl : public torch::nn::Module {
public:
  explicit vit_impl(const vit_spec& spec);

  torch::Tensor forward(torch::Tensor images);

private:
  torch::nn::Conv2d patch_embed_{nullptr};
  torch::Tensor cls_token_, pos_embed_;
  torch::nn::ModuleList blocks_;
  torch::nn::LayerNorm norm_{nullptr};
  torch::nn::Linear head_{nullptr};
};
TORCH_MODULE_IMPL(vit, vit_impl);

} // namespace stoker
