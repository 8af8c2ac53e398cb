#include "kernels/cuda_devices.hpp"

#include <cuda_runtime.h>

#include "stoker/errors.hpp"

namespace stoker {

cuda_devices probe_cuda_devices() {
  cuda_devices result;
  int n = 0;
  auto status = cudaGetDeviceCount(&n);
  if (status != cudaSuccess) {
    result.detail = std::string{"no CUDA device: "} + cudaGetErrorString(status);
    return result;
  }
  result.count = n;
  for (int i = 0; i < n; ++i) {
    cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, i) == cudaSuccess)
      result.detail += (i > 0 ? ", " : "") + std::string{prop.name} + " (sm_"
                       + std::to_string(prop.major) + std::to_string(prop.minor)
                       + ")";
  }
  return result;
}

struct cuda_step_timer::impl {
  int device = 0;
  cudaEvent_t start = nullptr, stop = nullptr;
  ~impl() {
    if (start)
      cudaEventDestroy(start);
    if (stop)
      cudaEventDestroy(stop);
  }
};

namespace {

caf::error timer_failure(const char* call, cudaError_t status) {
  return make_error(errc::trainer_failure,
                    std::string{"CUDA step timer: "} + call + " failed: "
                      + cudaGetErrorName(status) + " ("
                      + cudaGetErrorString(status) + ")");
}

} // namespace

caf::expected<cuda_step_timer> cuda_step_timer::open(int device) {
  auto x = std::make_unique<impl>();
  x->device = device;
  if (auto s = cudaSetDevice(device); s != cudaSuccess)
    return timer_failure("cudaSetDevice", s);
  if (auto s = cudaEventCreate(&x->start); s != cudaSuccess)
    return timer_failure("cudaEventCreate", s);
  if (auto s = cudaEventCreate(&x->stop); s != cudaSuccess)
    return timer_failure("cudaEventCreate", s);
  return cuda_step_timer{std::move(x)};
}

cuda_step_timer::cuda_step_timer(std::unique_ptr<impl> x) noexcept
  : impl_(std::move(x)) {
}

cuda_step_timer::cuda_step_timer(cuda_step_timer&&) noexcept = default;
cuda_step_timer&
cuda_step_timer::operator=(cuda_step_timer&&) noexcept = default;
cuda_step_timer::~cuda_step_timer() = default;

caf::error cuda_step_timer::start() {
  if (auto s = cudaEventRecord(impl_->start, nullptr); s != cudaSuccess)
    return timer_failure("cudaEventRecord", s);
  return caf::none;
}

caf::expected<uint64_t> cuda_step_timer::stop_ns() {
  if (auto s = cudaEventRecord(impl_->stop, nullptr); s != cudaSuccess)
    return timer_failure("cudaEventRecord", s);
  if (auto s = cudaEventSynchronize(impl_->stop); s != cudaSuccess)
    return timer_failure("cudaEventSynchronize", s);
  float ms = 0.0f;
  if (auto s = cudaEventElapsedTime(&ms, impl_->start, impl_->stop);
      s != cudaSuccess)
    return timer_failure("cudaEventElapsedTime", s);
  return static_cast<uint64_t>(double{ms} * 1e6);
}

} // namespace stoker
