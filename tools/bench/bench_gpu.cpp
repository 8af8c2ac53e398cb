// stoker-bench-gpu: images/s of the blur stage on the GPU (cuda_blur_stage,
// batches of 64, copies to and from the device included) against the CPU
// blur stage on one core, measured in alternating rounds of one run; the
// ratio is the median of the per-round ratios. Exits 77 (skipped) where
// there is no CUDA device, saying why. Run through tools/gpu-check.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

#include "stoker/errors.hpp"
#include "data/synthetic_mapper.hpp"
#include "kernels/blur.hpp"
#include "kernels/cuda_devices.hpp"

namespace {

using clock_type = std::chrono::steady_clock;

double median(std::vector<double> xs) {
  std::sort(xs.begin(), xs.end());
  size_t n = xs.size();
  return n % 2 == 1 ? xs[n / 2] : 0.5 * (xs[n / 2 - 1] + xs[n / 2]);
}

// Images/s of `body` (one batch of `images` per call) over >= `seconds`,
// after one warm-up call; false from body stops with its error.
template <class Body>
double rate(size_t images, double seconds, Body body) {
  body();
  uint64_t calls = 0;
  auto t0 = clock_type::now();
  double elapsed = 0;
  do {
    body();
    ++calls;
    elapsed = std::chrono::duration<double>(clock_type::now() - t0).count();
  } while (elapsed < seconds);
  return static_cast<double>(calls * images) / elapsed;
}

} // namespace

int main(int argc, char** argv) {
  double seconds = argc > 1 ? std::atof(argv[1]) : 2.0;
  int rounds = argc > 2 ? std::atoi(argv[2]) : 3;
  if (seconds <= 0 || rounds <= 0) {
    std::fprintf(stderr, "usage: stoker-bench-gpu [SECONDS>0 [ROUNDS>0]]\n");
    return 2;
  }
  auto devices = stoker::probe_cuda_devices();
  if (devices.count == 0) {
    std::printf("stoker-bench-gpu: skipped: %s\n", devices.detail.c_str());
    return 77;
  }
  auto stage = stoker::cuda_blur_stage::open(0);
  if (!stage) {
    std::printf("stoker-bench-gpu: %s\n",
                stoker::describe(stage.error()).c_str());
    return 1;
  }
  cv::setNumThreads(1);
  stoker::synthetic_spec data;
  stoker::blur_params blur;
  constexpr uint32_t batch_size = 64;
  stoker::work_item item;
  for (uint32_t i = 0; i < batch_size; ++i)
    item.sample_ids.push_back(i);
  auto raw = stoker::map_synthetic(data, item);
  std::printf("GPU blur benchmark on %s: %ux%ux%u float32, ToTensor + %ux "
              "GaussianBlur(%u), batch %u; %d rounds, >= %.1f s per row\n",
              stage->device_name().c_str(), data.height, data.width,
              data.channels, blur.repeat, blur.kernel_size, batch_size,
              rounds, seconds);
  std::vector<double> gpu, cpu, ratio;
  auto work = raw;
  bool failed = false;
  for (int round = 0; round < rounds && !failed; ++round) {
    gpu.push_back(rate(batch_size, seconds, [&] {
      work.data = raw.data;
      work.order = raw.order;
      if (auto err = stage->run(blur, work)) {
        std::printf("stoker-bench-gpu: %s\n", stoker::describe(err).c_str());
        failed = true;
      }
    }));
    // One core: 4 images per call keep each call short.
    auto small = raw;
    small.sample_ids.resize(4);
    small.data.resize(4 * raw.image_bytes());
    auto cpu_work = small;
    cpu.push_back(rate(4, seconds, [&] {
      cpu_work.data = small.data;
      cpu_work.order = small.order;
      stoker::apply_blur_stage(blur, cpu_work);
    }));
    ratio.push_back(gpu.back() / cpu.back());
  }
  if (failed)
    return 1;
  std::printf("%-52s %10.0f images/s\n", "CUDA blur stage (copies included)",
              median(gpu));
  auto choice = stoker::resolve_blur(blur);
  auto cpu_name = "CPU blur stage, one core ("
                  + (choice ? stoker::to_string(choice->impl) + " "
                                + stoker::to_string(choice->isa)
                            : std::string{"?"})
                  + ")";
  std::printf("%-52s %10.0f images/s\n", cpu_name.c_str(), median(cpu));
  std::printf("%-52s %10.1fx\n", "GPU / one CPU core", median(ratio));
  return 0;
}
