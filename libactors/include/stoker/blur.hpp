#pragma once

#include <cstdint>
#include <vector>

#include <caf/meta/type_name.hpp>

#include "stoker/messages.hpp"

namespace stoker {

/// The blur stage of the article's pipeline: ToTensor (HWC -> CHW), then
/// GaussianBlur(kernel_size) `repeat` times, each call with its own sigma
/// drawn uniformly from [sigma_min, sigma_max] (torchvision's semantics).
struct blur_params {
  uint64_t seed = 0;
  uint32_t kernel_size = 11; ///< odd, >= 1
  float sigma_min = 0.1f;
  float sigma_max = 2.0f;
  uint32_t repeat = 10;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, blur_params& x) {
  return f(caf::meta::type_name("blur_params"), x.seed, x.kernel_size,
           x.sigma_min, x.sigma_max, x.repeat);
}

/// The normalized 1-D kernel exp(-x^2 / (2 sigma^2)), x = -r..r, r =
/// kernel_size / 2, summing to 1 (computed in double, stored as float).
std::vector<float> gaussian_kernel(float sigma, uint32_t kernel_size);

/// Sigma of blur call `call` (0-based) on sample `sample` in `epoch`: a pure
/// function of (seed, epoch, sample, call), so any worker draws the same.
float blur_sigma(const blur_params& p, uint64_t epoch, uint64_t sample,
                 uint32_t call) noexcept;

/// ToTensor's reordering: `src` HWC to `dst` CHW (no scaling: the synthetic
/// images are already float). `src` and `dst` must not overlap.
void hwc_to_chw(const float* src, float* dst, uint32_t height, uint32_t width,
                uint32_t channels) noexcept;

/// Mirror index with the edge pixel not repeated (`dcba|abcd` -> `cb|abcd`,
/// OpenCV's BORDER_REFLECT_101); a size of 1 maps everything to 0.
int reflect101(int i, int size) noexcept;

/// Plain-loop separable blur of one plane (horizontal pass, then vertical),
/// accumulating in double: the reference the fast paths are tested against.
void blur_plane_reference(const float* src, float* dst, uint32_t height,
                          uint32_t width, const std::vector<float>& kernel);

/// One blur of one plane through OpenCV's sepFilter2D with
/// BORDER_REFLECT_101. `src` and `dst` must not overlap.
void blur_plane_opencv(const float* src, float* dst, uint32_t height,
                       uint32_t width, const std::vector<float>& kernel);

/// The same on an interleaved (HWC) image of 1..4 channels, each channel
/// filtered on its own.
void blur_image_opencv(const float* src, float* dst, uint32_t height,
                       uint32_t width, uint32_t channels,
                       const std::vector<float>& kernel);

/// Runs the whole stage on every image of `batch`, in place: the batch goes
/// in HWC and comes out CHW. Runs on the calling thread (OpenCV's own
/// threading is set per process by the node; see run_node).
/// Throws std::invalid_argument if the batch is not float32 HWC.
void apply_blur_stage(const blur_params& p, image_batch& batch);

} // namespace stoker
