#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <caf/error.hpp>
#include <caf/expected.hpp>
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

/// The same stage on a CUDA device (blur_cuda.cu; a build without CUDA
/// sources has blur_cuda_none.cpp, whose open() says so): the trainer's
/// half of `pipeline.placement = gpu|auto`. One CUDA stream, and pinned
/// staging and device buffers grown to the largest batch seen, all owned
/// here. Not thread-safe: one owner, the trainer's (detached) thread.
class cuda_blur_stage {
public:
  /// Opens CUDA device `device`. The error says why not: no CUDA in this
  /// build, no device or driver (CUDA's own words), or a failed call.
  static caf::expected<cuda_blur_stage> open(int device = 0);

  cuda_blur_stage(cuda_blur_stage&&) noexcept;
  cuda_blur_stage& operator=(cuda_blur_stage&&) noexcept;
  ~cuda_blur_stage();

  /// apply_blur_stage's result computed on the GPU, in place in host
  /// memory: a float32 HWC batch goes in, CHW comes out; the sigmas are
  /// blur_sigma's draws, the border is reflect-101, as on the CPU. Returns
  /// when the batch is back in `batch.data`. Errors (errc::bad_batch for a
  /// batch that is not float32 HWC, errc::trainer_failure for a CUDA call)
  /// name the batch and the call; every CUDA call is checked.
  caf::error run(const blur_params& p, image_batch& batch);

  /// The device's name and compute capability ("NVIDIA H200 (sm_90)").
  const std::string& device_name() const noexcept;

  struct impl; // blur_cuda.cu

private:
  explicit cuda_blur_stage(std::unique_ptr<impl> x) noexcept;
  std::unique_ptr<impl> impl_;
};

} // namespace stoker
