#include "stoker/cuda_devices.hpp"

#include <cuda_runtime.h>

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

} // namespace stoker
