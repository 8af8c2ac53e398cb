// stoker-bench-blur: images/s of the blur stage on one core (Stoker's chain
// on each ISA the CPU runs, OpenCV, and the FMA bound measured here), and of the
// whole local pipeline (workers -> router -> sim trainer), measured side by
// side in one run. Shared machines drift, so every row is measured in each
// of several rounds, interleaved, and the medians are printed; ratios are
// medians of the per-round ratios. Run through tools/bench/bench-blur.

#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <caf/actor_system.hpp>
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "stoker/errors.hpp"
#include "stoker/registry.hpp"
#include "data/synthetic_mapper.hpp"
#include "kernels/blur.hpp"
#include "kernels/blur_chain.hpp"
#include "node/local_role.hpp"
#include "node/node_config.hpp"
#include "transport/batch_check.hpp"
#include "transport/buffer_pool.hpp"
#include "worker/batch_maker.hpp"

namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

double now_s() {
  return std::chrono::duration<double>(clock_type::now().time_since_epoch())
    .count();
}

// The core's clock now: a chain of dependent integer adds, one cycle each
// on every x86 core, so adds a second are cycles a second (0 elsewhere).
double core_hz() {
#if defined(__x86_64__)
  uint64_t x = 0;
  constexpr uint64_t loops = 2'000'000;
  auto t0 = clock_type::now();
  for (uint64_t i = 0; i < loops; ++i)
    asm volatile(".rept 100\n\taddq $1, %0\n\t.endr" : "+r"(x));
  return static_cast<double>(loops) * 100 / seconds_since(t0);
#else
  return 0;
#endif
}

// Runs `body(call_index)` until `min_seconds` have passed (after one warm-up
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

// Bodies from `make_body()` on `threads` threads at once; returns each
// thread's rate.
template <class MakeBody>
std::vector<double> parallel_rates(uint32_t threads, uint32_t images_per_call,
                                   double min_seconds, MakeBody make_body) {
  std::vector<double> rates(threads);
  std::vector<std::thread> pool;
  for (uint32_t t = 0; t < threads; ++t)
    pool.emplace_back([&, t, body = make_body()]() mutable {
      rates[t] = rate(images_per_call, min_seconds, body);
    });
  for (auto& t : pool)
    t.join();
  return rates;
}

double median(std::vector<double> xs) {
  std::sort(xs.begin(), xs.end());
  size_t n = xs.size();
  return n % 2 == 1 ? xs[n / 2] : 0.5 * (xs[n / 2 - 1] + xs[n / 2]);
}

stoker::work_item item_of(uint64_t batch, uint32_t size) {
  stoker::work_item item;
  item.batch_id = batch;
  for (uint32_t i = 0; i < size; ++i)
    item.sample_ids.push_back(batch * size + i);
  return item;
}

struct row {
  const char* name;
  std::vector<double> values;
};

} // namespace

int main(int argc, char** argv) {
  // --stage-only: the blur stage's rows and the worker's (tools/bench/bench-peer
  // prints them).
  bool stage_only = argc > 1 && std::string{argv[1]} == "--stage-only";
  if (stage_only) {
    --argc;
    ++argv;
  }
  double min_seconds = argc > 1 ? std::atof(argv[1]) : 2.0;
  uint32_t workers = argc > 2 ? static_cast<uint32_t>(std::atoi(argv[2])) : 2;
  int rounds = argc > 3 ? std::atoi(argv[3]) : 3;
  if (min_seconds <= 0 || workers == 0 || rounds <= 0) {
    std::fprintf(stderr, "usage: stoker-bench-blur [--stage-only] "
                         "[SECONDS>0 [WORKERS>0 [ROUNDS>0]]]\n");
    return 2;
  }
  cv::setNumThreads(1);
  stoker::synthetic_spec data;
  stoker::blur_params blur;
  constexpr uint32_t batch = 16;
  std::printf("Stoker blur benchmark: %ux%ux%u float32, ToTensor + %ux "
              "GaussianBlur(%u); %d rounds, >= %.1f s per row per round\n",
              data.height, data.width, data.channels, blur.repeat,
              blur.kernel_size, rounds, min_seconds);
  auto raw = stoker::map_synthetic(data, item_of(0, batch));
  // Each loop blurs a copy of the same input, made into a buffer it reuses
  // (so no page faults); the copy's own cost is measured and taken out.
  auto blur_loop_with = [&](stoker::blur_params params) {
    return [&, params, b = raw](uint64_t) mutable {
      b.data = raw.data;
      b.order = raw.order;
      stoker::apply_blur_stage(params, b);
    };
  };
  auto blur_loop = [&] { return blur_loop_with(blur); };
  // Every implementation the stage can run here, and the FMA ceiling.
  struct variant {
    std::string name;
    stoker::blur_params params;
    std::vector<double> values;
  };
  std::vector<variant> variants;
  for (auto isa : {stoker::cpu_isa::avx512, stoker::cpu_isa::avx2,
                   stoker::cpu_isa::scalar})
    if (stoker::cpu_supports(isa)) {
      auto params = blur;
      params.impl = stoker::blur_impl::stoker;
      params.isa = isa;
      variants.push_back({"  stoker chain, " + stoker::to_string(isa), params,
                          {}});
    }
  {
    auto params = blur;
    params.impl = stoker::blur_impl::opencv;
    variants.push_back({"  OpenCV sepFilter2D", params, {}});
  }
  auto chosen = stoker::resolve_blur(blur);
  if (!chosen) {
    std::fprintf(stderr, "bench: %s\n",
                 stoker::describe(chosen.error()).c_str());
    return 2;
  }
  // What the chain issues per output vector and pass (the taps are
  // paired): stoker::detail::chain_issue_per_output.
  const double radius = (blur.kernel_size - 1) / 2;
  auto best = stoker::best_cpu_isa();
  // The units' best rates over the rounds (a bound is the most the machine
  // was seen to do, not a median of slow moments).
  stoker::detail::fp_peaks peak;
  double hz = 0;
  auto fma_bound = [&] { // images/s if the units did nothing but the chain
    float sink[16];
    uint64_t n = 1 << 21;
    auto p = best == stoker::cpu_isa::avx512
               ? stoker::detail::fp_peaks_avx512(n, sink, now_s)
               : stoker::detail::fp_peaks_avx2(n, sink, now_s);
    peak.lanes = p.lanes;
    peak.chains = p.chains;
    peak.fma_per_s = std::max(peak.fma_per_s, p.fma_per_s);
    peak.add_per_s = std::max(peak.add_per_s, p.add_per_s);
    peak.mixed_per_s = std::max(peak.mixed_per_s, p.mixed_per_s);
    peak.fma_one_chain_per_s = std::max(peak.fma_one_chain_per_s,
                                        p.fma_one_chain_per_s);
    hz = std::max(hz, core_hz());
    double vectors = static_cast<double>(stoker::detail::chain_output_vectors(
                       data.height, data.width, blur.repeat,
                       static_cast<uint32_t>(peak.lanes)))
                     * data.channels; // an image's planes
    double seconds = stoker::detail::chain_seconds_bound(
      peak, vectors, static_cast<uint32_t>(radius));
    return seconds > 0 ? 1.0 / seconds : 0.0;
  };
  row bound{"FMA bound (measured units / ops per image)", {}};
  // The chain alone: an image's CHW planes through every call in place,
  // no reorder and no checksum (copied in first from the ToTensor'd
  // batch, as the other rows copy theirs; the copy is taken out alike).
  row kernel{"  chain alone on CHW planes (widest ISA)", {}};
  std::vector<float> chw(raw.data.size() / sizeof(float));
  for (size_t i = 0; i < raw.size(); ++i)
    stoker::hwc_to_chw(raw.image(i), chw.data() + i * raw.image_elements(),
                       data.height, data.width, data.channels);
  stoker::blur_scratch kernel_scratch;
  auto kernel_loop = [&](uint64_t) {
    size_t n = raw.image_elements();
    float* planes = stoker::aligned_work(kernel_scratch, n);
    kernel_scratch.taps.resize(size_t{blur.repeat} * blur.kernel_size);
    for (size_t i = 0; i < raw.size(); ++i) {
      std::copy(chw.data() + i * n, chw.data() + (i + 1) * n, planes);
      stoker::blur_taps(blur, raw.epoch, raw.sample_ids[i],
                        kernel_scratch.taps.data());
      stoker::blur_planes_chain(planes, data.height, data.width,
                                data.channels, kernel_scratch.taps.data(),
                                blur.repeat, blur.kernel_size, best,
                                kernel_scratch);
    }
  };
  std::vector<double> kernel_vs_bound;
  std::vector<double> vs_opencv, vs_bound;
  auto copy_loop = [&, b = raw](uint64_t) mutable { b.data = raw.data; };
  // The reference: cv::GaussianBlur on an HWC image, 10 times, the way a
  // Python pipeline calls it.
  cv::Mat hwc(static_cast<int>(data.height), static_cast<int>(data.width),
              CV_32FC3, raw.image(0));
  cv::Mat out;
  auto opencv_loop = [&](uint64_t i) {
    for (uint32_t call = 0; call < blur.repeat; ++call) {
      double sigma = 0.1 + 1.9 * static_cast<double>((i + call) % 20) / 19.0;
      cv::GaussianBlur(call == 0 ? hwc : out, out,
                       cv::Size(static_cast<int>(blur.kernel_size),
                                static_cast<int>(blur.kernel_size)),
                       sigma, sigma, cv::BORDER_REFLECT_101);
    }
  };
  // The gaussian-blur transform's path: the chain on the HWC image in
  // place (a copy first, as the transform keeps its input), taps per call.
  std::vector<float> transformed(size_t{data.height} * data.width
                                 * data.channels);
  stoker::blur_scratch transform_scratch;
  auto transform_loop = [&](uint64_t i) {
    std::copy(hwc.ptr<float>(), hwc.ptr<float>() + transformed.size(),
              transformed.begin());
    std::vector<float> taps;
    for (uint32_t call = 0; call < blur.repeat; ++call) {
      auto sigma = 0.1f + 1.9f * static_cast<float>((i + call) % 20) / 19.0f;
      auto k = stoker::gaussian_kernel(sigma, blur.kernel_size);
      taps.insert(taps.end(), k.begin(), k.end());
    }
    stoker::blur_image_chain(transformed.data(), data.height, data.width,
                             data.channels, taps.data(), blur.repeat,
                             blur.kernel_size, best, transform_scratch);
  };
  // The worker row's batch maker, as a worker node opens it.
  stoker::pipeline_options fused;
  fused.kind = stoker::pipeline_kind::fused_blur;
  fused.synthetic = data;
  fused.blur = blur;
  auto& shape = fused.data.output;
  shape.height = data.height;
  shape.width = data.width;
  shape.channels = data.channels;
  auto maker = stoker::batch_maker::open(fused, stoker::registry{});
  if (!maker) {
    std::fprintf(stderr, "bench: %s\n",
                 stoker::describe(maker.error()).c_str());
    return 2;
  }
  stoker::batch_resources own; // the step-by-step row's
  own.buffers = std::make_shared<stoker::buffer_pool>(2);
  // What a worker does: its batch_maker (planes made directly, checksummed
  // on the copy where the chain runs), then stamping whatever is left
  // unstamped; buffers and scratch of its own, reused.
  auto worker_loop = [&] {
    stoker::batch_resources res;
    res.buffers = std::make_shared<stoker::buffer_pool>(2);
    return [&, res](uint64_t i) mutable {
      auto b = maker->make(item_of(i, batch), 1.0, res);
      if (b.checksums.size() != b.size())
        stoker::stamp_checksums(b);
      res.buffers->release(std::move(b.data));
    };
  };
  stoker::node_config cfg;
  caf::actor_system sys{cfg};
  row mapper{"mapper: synthetic standard-normal image", {}};
  std::string stage_name = "blur stage (auto: " + stoker::to_string(chosen->impl)
                           + (chosen->impl == stoker::blur_impl::stoker
                                ? " " + stoker::to_string(chosen->isa)
                                : std::string{})
                           + ")";
  row stage{stage_name.c_str(), {}};
  row worker{"worker: mapper + blur stage + checksum", {}};
  // What the fusions bought, in the same rounds: the same batch made step
  // by step (HWC image, ToTensor, blur, then a checksum pass).
  row stepwise{"  the same, step by step (no fusion)", {}};
  std::vector<double> fusion_gain;
  row reference{"reference: cv::GaussianBlur on HWC, 10x", {}};
  row transform{"gaussian-blur transform: chain on HWC, 10x", {}};
  row parallel{"blur stage on all workers' threads at once", {}};
  row parallel_workers{"worker on all workers' threads at once", {}};
  row pipeline{"local pipeline (steady): workers->router->sim", {}};
  std::vector<double> vs_ideal, vs_workers, vs_parallel, vs_parallel_workers,
    vs_reference, transform_gain;
  // Minor page faults per batch in the pipeline's steady state (the run
  // report's per-thread figures): fresh buffers on the data path show here.
  std::vector<double> worker_faults, trainer_faults;
  for (int round = 0; round < rounds; ++round) {
    double copy = rate(batch, min_seconds / 2, copy_loop);
    // Remove the copy that keeps the input intact from the blur rows.
    auto net = [&](double gross) { return 1.0 / (1.0 / gross - 1.0 / copy); };
    if (!stage_only) {
      mapper.values.push_back(rate(batch, min_seconds, [&](uint64_t i) {
        auto b = stoker::map_synthetic(data, item_of(i, batch));
      }));
      stage.values.push_back(net(rate(batch, min_seconds, blur_loop())));
    }
    for (auto& v : variants)
      v.values.push_back(
        net(rate(batch, min_seconds, blur_loop_with(v.params))));
    if (best != stoker::cpu_isa::scalar) {
      kernel.values.push_back(net(rate(batch, min_seconds, kernel_loop)));
      bound.values.push_back(fma_bound());
    }
    vs_opencv.push_back(variants.front().values.back()
                        / variants.back().values.back());
    worker.values.push_back(rate(batch, min_seconds, worker_loop()));
    if (stage_only) {
      std::fprintf(stderr, "round %d/%d done\n", round + 1, rounds);
      continue;
    }
    stepwise.values.push_back(rate(batch, min_seconds, [&](uint64_t i) {
      auto b = stoker::map_synthetic(data, item_of(i, batch),
                                     own.buffers->acquire(0));
      stoker::apply_blur_stage(blur, b, own.blur);
      stoker::stamp_checksums(b); // a pass of its own, as before
      own.buffers->release(std::move(b.data));
    }));
    fusion_gain.push_back(worker.values.back() / stepwise.values.back());
    reference.values.push_back(rate(1, min_seconds, opencv_loop));
    transform.values.push_back(rate(1, min_seconds, transform_loop));
    transform_gain.push_back(transform.values.back()
                             / reference.values.back());
    double par = 0;
    for (double r : parallel_rates(workers, batch, min_seconds, blur_loop))
      par += net(r);
    parallel.values.push_back(par);
    double par_workers = 0;
    for (double r : parallel_rates(workers, batch, min_seconds, worker_loop))
      par_workers += r;
    parallel_workers.values.push_back(par_workers);
    // The pipeline into a sim trainer taking 1 ms a step, sized to run
    // about max(10, 2 * min_seconds) s, and read at its steady rate (after
    // the first batch): start-up is not what this row is about.
    auto size = static_cast<int>(std::max(
      256.0, parallel.values.back() * std::max(10.0, 2 * min_seconds)));
    stoker::node_config run_cfg;
    auto reg = stoker::builtin_registry();
    auto loaded = run_cfg.load(
      {"--trainer.device=sim", "--trainer.sim-step-ms=1",
       "--trainer.log-every=1000000", "--pipeline.batch-size=32",
       "--pipeline.dataset-size=" + std::to_string(size),
       "--worker.count=" + std::to_string(workers)},
      reg);
    if (!loaded || !*loaded) {
      std::fprintf(stderr, "bench: bad pipeline config\n");
      return 2;
    }
    auto report = stoker::run_local(sys, **loaded, reg);
    if (!report || !report->exactly_once()) {
      std::fprintf(stderr, "bench: the pipeline failed or lost samples\n");
      return 1;
    }
    pipeline.values.push_back(report->steady_throughput_sps);
    for (auto& w : report->workers)
      if (!std::isnan(w.minor_faults_per_batch))
        worker_faults.push_back(w.minor_faults_per_batch);
    if (!std::isnan(report->trainer_minor_faults_per_batch))
      trainer_faults.push_back(report->trainer_minor_faults_per_batch);
    vs_ideal.push_back(pipeline.values.back()
                       / (workers * stage.values.back()));
    vs_workers.push_back(pipeline.values.back()
                         / (workers * worker.values.back()));
    vs_parallel.push_back(pipeline.values.back() / parallel.values.back());
    vs_parallel_workers.push_back(pipeline.values.back()
                                  / parallel_workers.values.back());
    vs_reference.push_back(stage.values.back() / reference.values.back());
    std::fprintf(stderr, "round %d/%d done\n", round + 1, rounds);
  }
  // Each round's rate against the bound of the best units seen in any
  // round: a slow moment of the peak probe cannot make a bound that the
  // chain beats.
  double best_bound = bound.values.empty()
                        ? 0
                        : *std::max_element(bound.values.begin(),
                                            bound.values.end());
  if (best_bound > 0)
    for (size_t i = 0; i < kernel.values.size(); ++i) {
      vs_bound.push_back(variants.front().values[i] / best_bound);
      kernel_vs_bound.push_back(kernel.values[i] / best_bound);
    }
  std::printf("\n%-46s %10s\n", "row (one core unless noted), median",
              "images/s");
  if (!stage_only) {
    std::printf("%-46s %10.0f\n", mapper.name, median(mapper.values));
    std::printf("%-46s %10.0f\n", stage.name, median(stage.values));
  }
  for (auto& v : variants)
    std::printf("%-46s %10.0f\n", v.name.c_str(), median(v.values));
  if (!kernel.values.empty())
    std::printf("%-46s %10.0f\n", kernel.name, median(kernel.values));
  if (!bound.values.empty()) {
    std::printf("%-46s %10.0f\n", bound.name, best_bound);
    std::printf(
      "  the bound: %s, %d lanes; per output and pass the chain issues 1 "
      "multiply + %.0f FMAs on the FMA units and %.0f adds (%.0f FLOP, not "
      "the textbook 2K = %.0f); measured with %d independent chains: "
      "%.2f G vector FMA/s, %.2f G adds/s, %.2f G both mixed 1:1",
      stoker::to_string(best).c_str(), peak.lanes, radius, radius,
      3 * radius + 1,
      2.0 * blur.kernel_size, peak.chains, peak.fma_per_s * 1e-9,
      peak.add_per_s * 1e-9, peak.mixed_per_s * 1e-9);
    if (hz > 0)
      std::printf(
        "; at %.2f GHz (dependent integer adds) that is %.1f FMA units "
        "(FMAs a cycle), %.1f cycles FMA latency, %.1f FP ops a cycle mixed",
        hz * 1e-9, peak.fma_per_s / hz, hz / peak.fma_one_chain_per_s,
        peak.mixed_per_s / hz);
    std::printf("\n");
  }
  std::printf("%-46s %10.2f\n", ("  " + variants.front().name.substr(2)
                                   + " / OpenCV").c_str(),
              median(vs_opencv));
  if (!vs_bound.empty())
    std::printf("%-46s %10.2f\n", ("  " + variants.front().name.substr(2)
                                     + " / FMA bound").c_str(),
                median(vs_bound));
  if (!kernel_vs_bound.empty())
    std::printf("%-46s %10.2f\n", "  chain alone / FMA bound",
                median(kernel_vs_bound));
  auto over = std::count_if(kernel_vs_bound.begin(), kernel_vs_bound.end(),
                            [](double x) { return x > 1.0; });
  if (over > 0)
    std::printf("WARNING: the chain beat the bound in %ld round(s): the "
                "bound's count of the chain's operations is wrong\n",
                static_cast<long>(over));
  std::printf("%-46s %10.0f\n", worker.name, median(worker.values));
  if (stage_only)
    return 0;
  std::printf("%-46s %10.0f\n", stepwise.name, median(stepwise.values));
  std::printf("%-46s %10.2f\n", "  fused / step by step", median(fusion_gain));
  std::printf("%-46s %10.0f\n", reference.name, median(reference.values));
  std::printf("%-46s %10.2f\n", "  blur stage / reference", median(vs_reference));
  std::printf("%-46s %10.0f\n", transform.name, median(transform.values));
  std::printf("%-46s %10.2f\n", "  transform / reference",
              median(transform_gain));
  std::printf("\n%u workers\n", workers);
  std::printf("%-46s %10.0f\n", pipeline.name, median(pipeline.values));
  std::printf("%-46s %10.0f\n", parallel.name, median(parallel.values));
  std::printf("%-46s %10.2f\n", "  pipeline / (workers x one-core blur stage)",
              median(vs_ideal));
  std::printf("%-46s %10.2f\n", "  pipeline / (workers x one-core worker)",
              median(vs_workers));
  std::printf("%-46s %10.2f\n", "  pipeline / blur stage on all threads",
              median(vs_parallel));
  std::printf("%-46s %10.0f\n", parallel_workers.name,
              median(parallel_workers.values));
  std::printf("%-46s %10.2f\n", "  pipeline / worker on all threads",
              median(vs_parallel_workers));
  std::printf("%-46s %10s\n", "steady state, minor page faults per batch",
              "faults");
  if (!worker_faults.empty())
    std::printf("%-46s %10.1f\n", "  a worker's thread (median)",
                median(worker_faults));
  if (!trainer_faults.empty())
    std::printf("%-46s %10.1f\n", "  the sim trainer's thread (median)",
                median(trainer_faults));
  return 0;
}
