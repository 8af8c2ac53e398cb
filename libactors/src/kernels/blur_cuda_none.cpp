#include "kernels/blur.hpp"

#include "stoker/errors.hpp"

// A build without CUDA sources: the stage exists so that configs and
// callers stay the same; opening it says why it cannot run.

namespace stoker {

struct cuda_blur_stage::impl {
  std::string name;
};

caf::expected<cuda_blur_stage> cuda_blur_stage::open(int device) {
  return make_error(errc::invalid_config,
                    "CUDA blur on device " + std::to_string(device)
                      + ": this build has no CUDA sources (nvcc was not "
                        "found or STOKER_CUDA=OFF)");
}

cuda_blur_stage::cuda_blur_stage(std::unique_ptr<impl> x) noexcept
  : impl_(std::move(x)) {
}

cuda_blur_stage::cuda_blur_stage(cuda_blur_stage&&) noexcept = default;
cuda_blur_stage&
cuda_blur_stage::operator=(cuda_blur_stage&&) noexcept = default;
cuda_blur_stage::~cuda_blur_stage() = default;

const std::string& cuda_blur_stage::device_name() const noexcept {
  return impl_->name;
}

caf::error cuda_blur_stage::run(const blur_params&, image_batch& batch) {
  return make_error(errc::invalid_config,
                    "CUDA blur, batch " + std::to_string(batch.batch_id)
                      + ": this build has no CUDA sources");
}

} // namespace stoker
