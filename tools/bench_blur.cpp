// stoker-bench-blur: images/s of the blur stage on one core, and of the
// whole local pipeline (workers -> router -> sim trainer), measured side by
// side in one run. Prints a table; run through tools/bench-blur.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "stoker/batch_check.hpp"
#include "stoker/blur.hpp"
#include "stoker/local_run.hpp"
#include "stoker/node_config.hpp"
#include "stoker/synthetic_mapper.hpp"

namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

// Runs `body(batch_index)` until `min_seconds` have passed (after one warm-up
// call); returns images per second.
double rate(uint32_t images_per_call, double min_seconds,
            const std::function<void(uint64_t)>& body) {
  body(0);
  uint64_t calls = 0;
  auto t0 = clock_type::now();
  double elapsed = 0;
  do {
    body(++calls);
    elapsed = seconds_since(t0);
  } while (elapsed < min_seconds);
  return static_cast<double>(calls * images_per_call) / elapsed;
}

stoker::work_item item_of(uint64_t batch, uint32_t size) {
  stoker::work_item item;
  item.batch_id = batch;
  for (uint32_t i = 0; i < size; ++i)
    item.sample_ids.push_back(batch * size + i);
  return item;
}

} // namespace

int main(int argc, char** argv) {
  double min_seconds = argc > 1 ? std::atof(argv[1]) : 5.0;
  uint32_t workers = argc > 2 ? static_cast<uint32_t>(std::atoi(argv[2])) : 2;
  cv::setNumThreads(1);
  stoker::synthetic_spec data;
  stoker::blur_params blur;
  constexpr uint32_t batch = 16;
  std::printf("Stoker blur benchmark: %ux%ux%u float32, ToTensor + %ux "
              "GaussianBlur(%u), one core unless noted, >= %.1f s each\n\n",
              data.height, data.width, data.channels, blur.repeat,
              blur.kernel_size, min_seconds);
  // Inputs made once, so the blur stage is timed alone.
  auto raw = stoker::map_synthetic(data, item_of(0, batch));
  double map_rate = rate(batch, min_seconds, [&](uint64_t i) {
    auto b = stoker::map_synthetic(data, item_of(i, batch));
  });
  double blur_rate = rate(batch, min_seconds, [&](uint64_t) {
    auto b = raw;
    stoker::apply_blur_stage(blur, b);
  });
  double copy_rate = rate(batch, min_seconds, [&](uint64_t) { auto b = raw; });
  double worker_rate = rate(batch, min_seconds, [&](uint64_t i) {
    auto b = stoker::map_synthetic(data, item_of(i, batch));
    stoker::apply_blur_stage(blur, b);
    stoker::stamp_checksums(b);
  });
  // Blur alone, without the copy the loop needs to keep its input intact.
  double blur_only = 1.0 / (1.0 / blur_rate - 1.0 / copy_rate);
  // The reference: what cv2.GaussianBlur does on an HWC image, 10 times,
  // the way a Python pipeline would call it.
  cv::Mat hwc(static_cast<int>(data.height), static_cast<int>(data.width),
              CV_32FC3, raw.image(0));
  cv::Mat out;
  double opencv_rate = rate(1, min_seconds, [&](uint64_t i) {
    for (uint32_t call = 0; call < blur.repeat; ++call) {
      double sigma = 0.1 + 1.9 * static_cast<double>((i + call) % 20) / 19.0;
      cv::GaussianBlur(call == 0 ? hwc : out, out,
                       cv::Size(static_cast<int>(blur.kernel_size),
                                static_cast<int>(blur.kernel_size)),
                       sigma, sigma, cv::BORDER_REFLECT_101);
    }
  });
  std::printf("%-44s %10s\n", "stage (one core)", "images/s");
  std::printf("%-44s %10.0f\n", "mapper: synthetic standard-normal image",
              map_rate);
  std::printf("%-44s %10.0f\n", "blur stage: ToTensor + 10x blur (OpenCV)",
              blur_only);
  std::printf("%-44s %10.0f\n", "worker: mapper + blur stage + checksum",
              worker_rate);
  std::printf("%-44s %10.0f\n", "reference: cv::GaussianBlur on HWC, 10x",
              opencv_rate);
  std::printf("%-44s %10.2f\n", "  blur stage / reference",
              blur_only / opencv_rate);

  // The whole pipeline in one process, into a sim trainer that takes 1 ms.
  stoker::node_config cfg;
  auto loaded = cfg.load({"--trainer.device=\"sim\"",
                          "--trainer.sim-step-ms=1",
                          "--trainer.log-every=1000000",
                          "--pipeline.batch-size=32",
                          "--pipeline.dataset-size="
                            + std::to_string(static_cast<int>(
                              std::max(256.0, blur_only * workers
                                                * min_seconds * 2))),
                          "--worker.count=" + std::to_string(workers)});
  if (!loaded || !*loaded) {
    std::fprintf(stderr, "bench: bad pipeline config\n");
    return 2;
  }
  caf::actor_system sys{cfg};
  auto report = stoker::run_local(sys, **loaded);
  if (!report) {
    std::fprintf(stderr, "bench: pipeline failed\n");
    return 1;
  }
  double ideal = blur_only * workers;
  std::printf("\n%-44s %10.0f\n",
              ("local pipeline, " + std::to_string(workers)
               + " workers -> sim trainer")
                .c_str(),
              report->throughput_sps);
  std::printf("%-44s %10.0f\n",
              ("  ideal: " + std::to_string(workers) + " x blur stage").c_str(),
              ideal);
  std::printf("%-44s %10.2f\n", "  efficiency (pipeline / ideal)",
              report->throughput_sps / ideal);
  std::printf("%-44s %10s\n", "  exactly once",
              report->exactly_once() ? "yes" : "NO");
  return report->exactly_once() ? 0 : 1;
}
