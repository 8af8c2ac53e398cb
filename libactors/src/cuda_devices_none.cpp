#include "stoker/cuda_devices.hpp"

namespace stoker {

cuda_devices probe_cuda_devices() {
  return {0, "this build has no CUDA sources (nvcc was not found or "
             "STOKER_CUDA=OFF)"};
}

} // namespace stoker
