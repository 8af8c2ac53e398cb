#include <boost/test/unit_test.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>

#include <sys/wait.h>
#include <unistd.h>

#include "stoker/errors.hpp"
#include "kernels/blur.hpp"
#include "kernels/cuda_devices.hpp"
#include "support/blur_batches.hpp"

// The CUDA blur against the CPU blur. Labelled "gpu": on a machine without
// a CUDA device (or a build without CUDA sources) the GPU cases are
// skipped, and the skip says why.

using namespace stoker;

namespace {

boost::test_tools::assertion_result has_cuda_device(
  boost::unit_test::test_unit_id) {
  auto found = probe_cuda_devices();
  boost::test_tools::assertion_result ok{found.count > 0};
  if (found.count == 0)
    ok.message() << "skipped: no CUDA device here (" << found.detail << ")";
  return ok;
}

// The JSON report of a local stoker-node run (sim trainer, 1 ms steps,
// batches of 64) with `args`; the run must succeed.
std::string run_report_of(const std::string& args) {
  auto report = "/tmp/stoker-gpu-report-" + std::to_string(::getpid())
                + ".json";
  std::string cmd = std::string{STOKER_NODE_BINARY}
                    + " --trainer.device=sim --trainer.sim-step-ms=1"
                      " --pipeline.batch-size=64 "
                    + args + " --report=" + report + " 2>&1";
  FILE* pipe = ::popen(cmd.c_str(), "r");
  BOOST_REQUIRE(pipe != nullptr);
  std::string output;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;)
    output.append(buf, n);
  int status = ::pclose(pipe);
  BOOST_TEST_MESSAGE(output);
  BOOST_TEST((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  std::stringstream json;
  json << std::ifstream{report}.rdbuf();
  std::remove(report.c_str());
  BOOST_TEST_MESSAGE(json.str());
  return json.str();
}

} // namespace

BOOST_AUTO_TEST_SUITE(blur_cuda)

BOOST_AUTO_TEST_CASE(open_without_a_device_says_why) {
  if (probe_cuda_devices().count > 0)
    return; // the GPU cases below cover it
  auto stage = cuda_blur_stage::open(0);
  BOOST_REQUIRE(!stage);
  auto why = describe(stage.error());
  BOOST_TEST_MESSAGE(why);
  BOOST_TEST(why.find("CUDA blur on device 0") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(equals_the_cpu_blur_over_sizes_sigmas_and_channels,
                     *boost::unit_test::precondition(has_cuda_device)) {
  auto stage = cuda_blur_stage::open(0);
  BOOST_REQUIRE_MESSAGE(stage, describe(stage.error()));
  BOOST_TEST_MESSAGE("CUDA blur on " << stage->device_name());
  struct shape {
    uint32_t h, w;
  };
  uint64_t seed = 1;
  for (auto [h, w] : {shape{1, 1}, shape{5, 7}, shape{37, 53}, shape{2, 300},
                      shape{224, 224}})
    for (uint32_t c = 1; c <= 4; ++c)
      for (uint32_t kernel : {1u, 3u, 11u})
        for (auto [lo, hi] : {std::pair{0.1f, 0.1f}, std::pair{2.0f, 2.0f},
                              std::pair{0.1f, 2.0f}}) {
          blur_params p{++seed, kernel, lo, hi, 10};
          auto cpu = test::random_hwc_batch(h, w, c, 3, seed, 2);
          auto gpu = cpu;
          apply_blur_stage(p, cpu);
          auto err = stage->run(p, gpu);
          BOOST_REQUIRE_MESSAGE(!err, describe(err));
          BOOST_TEST((gpu.order == layout::chw));
          auto diff = test::max_abs_diff(cpu, gpu);
          BOOST_TEST(diff <= 1e-4f, h << "x" << w << "x" << c << ", kernel "
                                      << kernel << ", sigma " << lo << ".."
                                      << hi << ": max abs diff " << diff);
        }
}

BOOST_AUTO_TEST_CASE(no_blur_calls_is_just_to_tensor,
                     *boost::unit_test::precondition(has_cuda_device)) {
  auto stage = cuda_blur_stage::open(0);
  BOOST_REQUIRE_MESSAGE(stage, describe(stage.error()));
  blur_params p{3, 11, 0.1f, 2.0f, 0};
  auto cpu = test::random_hwc_batch(9, 4, 3, 2, 3);
  auto gpu = cpu;
  apply_blur_stage(p, cpu);
  BOOST_REQUIRE(!stage->run(p, gpu));
  BOOST_TEST(test::max_abs_diff(cpu, gpu) == 0.0f);
}

BOOST_AUTO_TEST_CASE(rejects_a_batch_already_in_chw_naming_it,
                     *boost::unit_test::precondition(has_cuda_device)) {
  auto stage = cuda_blur_stage::open(0);
  BOOST_REQUIRE_MESSAGE(stage, describe(stage.error()));
  auto batch = test::random_hwc_batch(8, 8, 3, 1, 42);
  batch.order = layout::chw;
  auto err = stage->run(blur_params{}, batch);
  BOOST_REQUIRE(err);
  BOOST_TEST(describe(err).find("batch 42") != std::string::npos);
  BOOST_TEST(describe(err).find("expected float32 HWC") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_local_run_with_gpu_placement_blurs_every_batch_there,
                     *boost::unit_test::precondition(has_cuda_device)) {
  auto text = run_report_of("--pipeline.dataset-size=640 --worker.count=2 "
                            "--pipeline.placement=gpu");
  // Every sample once, every batch blurred on the GPU (checksums checked
  // on the way in, the shape on the way out).
  BOOST_TEST(text.find("\"missing\": 0,") != std::string::npos);
  BOOST_TEST(text.find("\"rejected_batches\": 0,") != std::string::npos);
  BOOST_TEST(text.find("\"gpu_blurred_batches\": 10,") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(auto_placement_moves_blur_to_an_idle_gpu_from_busy_workers,
                     *boost::unit_test::precondition(has_cuda_device)) {
  // One slow worker, a trainer that steps in 1 ms: the worker is always
  // busy and the trainer mostly waits, so the router moves blur work over.
  auto text = run_report_of("--pipeline.dataset-size=3200 --worker.count=1 "
                            "--worker.slowdown=2 --pipeline.placement=auto");
  BOOST_TEST(text.find("\"missing\": 0,") != std::string::npos);
  BOOST_TEST(text.find("\"rejected_batches\": 0,") != std::string::npos);
  BOOST_TEST(text.find("\"placement_changes\": 0,") == std::string::npos);
  BOOST_TEST(text.find("every worker is saturated") != std::string::npos);
  BOOST_TEST(text.find("\"gpu_blurred_batches\": 0,") == std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
