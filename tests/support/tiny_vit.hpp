#pragma once

// The small ViT the training suites step on: 32x32x3 images in 8x8
// patches, two blocks, no dropout (a step is a pure function of the batch
// and the parameters).

#include "train/vit.hpp"

namespace stoker_test {

inline stoker::vit_spec tiny_vit() {
  stoker::vit_spec s;
  s.image_height = s.image_width = 32;
  s.patch_size = 8;
  s.width = 32;
  s.depth = 2;
  s.heads = 4;
  s.mlp_dim = 64;
  s.num_classes = 10;
  return s;
}

} // namespace stoker_test
