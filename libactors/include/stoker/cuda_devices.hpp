#pragma once

#include <string>

namespace stoker {

/// What the CUDA runtime sees on this machine.
struct cuda_devices {
  int count = 0;      ///< usable CUDA devices
  std::string detail; ///< names, or why there are none
};

/// Asks the CUDA runtime for its devices (cuda_devices.cu), or says that
/// this build has no CUDA sources (cuda_devices_none.cpp). Never fails: a
/// machine without a driver or GPU reports 0 devices and the reason.
cuda_devices probe_cuda_devices();

} // namespace stoker
