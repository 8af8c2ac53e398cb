#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <caf/error.hpp>
#include <caf/expected.hpp>

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

/// Device time of the work queued on CUDA's legacy default stream (where
/// LibTorch queues its kernels unless told otherwise) between start() and
/// stop_ns(), from two CUDA events: what the accelerator really spent,
/// which the host's clock cannot see when launches are asynchronous.
/// Not thread-safe: one owner (the trainer's engine).
class cuda_step_timer {
public:
  /// Creates the two events on device `device`; the error says why not
  /// (no CUDA in this build, no device, a failed call).
  static caf::expected<cuda_step_timer> open(int device = 0);

  cuda_step_timer(cuda_step_timer&&) noexcept;
  cuda_step_timer& operator=(cuda_step_timer&&) noexcept;
  ~cuda_step_timer();

  /// Records the start event behind the work queued so far.
  caf::error start();

  /// Records the stop event, waits for it, and returns the nanoseconds
  /// between the two events.
  caf::expected<uint64_t> stop_ns();

  struct impl; // cuda_devices.cu

private:
  explicit cuda_step_timer(std::unique_ptr<impl> x) noexcept;
  std::unique_ptr<impl> impl_;
};

} // namespace stoker
