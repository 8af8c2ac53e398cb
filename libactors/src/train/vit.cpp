#include "train/vit.hpp"

#include <cmath>

namespace stoker {

namespace {

constexpr double ln_eps = 1e-6; // timm's ViT LayerNorm epsilon

torch::nn::LayerNorm layer_norm(int64_t width) {
  return torch::nn::LayerNorm(
    torch::nn::LayerNormOptions({width}).eps(ln_eps));
}

} // namespace

vit_block_impl::vit_block_impl(int64_t width, int64_t heads, int64_t mlp_dim)
  : heads_(heads) {
  norm1_ = register_module("norm1", layer_norm(width));
  qkv_ = register_module("qkv", torch::nn::Linear(width, 3 * width));
  proj_ = register_module("proj", torch::nn::Linear(width, width));
  norm2_ = register_module("norm2", layer_norm(width));
  fc1_ = register_module("fc1", torch::nn::Linear(width, mlp_dim));
  fc2_ = register_module("fc2", torch::nn::Linear(mlp_dim, width));
}

torch::Tensor vit_block_impl::forward(torch::Tensor x) {
  auto n = x.size(0), tokens = x.size(1), width = x.size(2);
  auto head_dim = width / heads_;
  // [N, T, 3, heads, head_dim] -> 3 x [N, heads, T, head_dim]
  auto qkv = qkv_(norm1_(x))
               .reshape({n, tokens, 3, heads_, head_dim})
               .permute({2, 0, 3, 1, 4});
  auto q = qkv[0], k = qkv[1], v = qkv[2];
  auto attn = torch::softmax(
    torch::matmul(q, k.transpose(-2, -1))
      / std::sqrt(static_cast<double>(head_dim)),
    -1);
  auto mixed = torch::matmul(attn, v).transpose(1, 2).reshape(
    {n, tokens, width});
  x = x + proj_(mixed);
  return x + fc2_(torch::gelu(fc1_(norm2_(x))));
}

vit_impl::vit_impl(const vit_spec& s) {
  auto width = static_cast<int64_t>(s.width);
  auto patch = static_cast<int64_t>(s.patch_size);
  auto tokens = static_cast<int64_t>((s.image_height / s.patch_size)
                                     * (s.image_width / s.patch_size));
  patch_embed_ = register_module(
    "patch_embed",
    torch::nn::Conv2d(
      torch::nn::Conv2dOptions(s.channels, width, patch).stride(patch)));
  cls_token_ = register_parameter("cls_token", torch::zeros({1, 1, width}));
  pos_embed_ = register_parameter("pos_embed",
                                  torch::zeros({1, tokens + 1, width}));
  {
    torch::NoGradGuard no_grad;
    // timm: trunc_normal_(std=.02) for the position embedding, normal
    // (std 1e-6) for the class token.
    pos_embed_.normal_(0.0, 0.02).clamp_(-0.04, 0.04);
    cls_token_.normal_(0.0, 1e-6);
  }
  blocks_ = register_module("blocks", torch::nn::ModuleList());
  for (uint32_t i = 0; i < s.depth; ++i)
    blocks_->push_back(vit_block(width, static_cast<int64_t>(s.heads),
                                 static_cast<int64_t>(s.mlp_dim)));
  norm_ = register_module("norm", layer_norm(width));
  head_ = register_module("head", torch::nn::Linear(width, s.num_classes));
}

torch::Tensor vit_impl::forward(torch::Tensor images) {
  auto x = patch_embed_(images).flatten(2).transpose(1, 2); // [N, T, W]
  auto cls = cls_token_.expand({x.size(0), -1, -1});
  x = torch::cat({cls, x}, 1) + pos_embed_;
  for (auto& block : *blocks_)
    x = block->as<vit_block_impl>()->forward(x);
  return head_(norm_(x).select(1, 0));
}

} // namespace stoker
