#include "kernels/cuda_devices.hpp"

#include "stoker/errors.hpp"

namespace stoker {

cuda_devices probe_cuda_devices() {
  return {0, "this build has no CUDA sources (nvcc was not found or "
             "STOKER_CUDA=OFF)"};
}

struct cuda_step_timer::impl {};

caf::expected<cuda_step_timer> cuda_step_timer::open(int) {
  return make_error(errc::invalid_config,
                    "CUDA step timer: this build has no CUDA sources");
}

cuda_step_timer::cuda_step_timer(std::unique_ptr<impl> x) noexcept
  : impl_(std::move(x)) {
}

cuda_step_timer::cuda_step_timer(cuda_step_timer&&) noexcept = default;
cuda_step_timer&
cuda_step_timer::operator=(cuda_step_timer&&) noexcept = default;
cuda_step_timer::~cuda_step_timer() = default;

caf::error cuda_step_timer::start() {
  return make_error(errc::invalid_config,
                    "CUDA step timer: this build has no CUDA sources");
}

caf::expected<uint64_t> cuda_step_timer::stop_ns() {
  return make_error(errc::invalid_config,
                    "CUDA step timer: this build has no CUDA sources");
}

} // namespace stoker
