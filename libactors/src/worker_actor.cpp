#include <chrono>

#include <caf/actor_ostream.hpp>
#include <caf/stateful_actor.hpp>
#include <opencv2/core.hpp>

#include "stoker/actors.hpp"
#include "stoker/batch_check.hpp"
#include "stoker/batch_codec.hpp"
#include "stoker/blur.hpp"
#include "stoker/errors.hpp"
#include "stoker/synthetic_mapper.hpp"

namespace stoker {

namespace {

using clock_type = std::chrono::steady_clock;

struct worker_state {
  worker_stats stats;
  clock_type::time_point started = clock_type::now();
  static constexpr const char* name = "stoker.worker";
};

uint64_t ns_since(clock_type::time_point t0) {
  return static_cast<uint64_t>(
    std::chrono::duration_cast<std::chrono::nanoseconds>(clock_type::now()
                                                         - t0)
      .count());
}

worker_actor::behavior_type
worker_fn(worker_actor::stateful_pointer<worker_state> self, std::string name,
          synthetic_spec data, blur_params blur, dtype wire,
          router_actor router) {
  self->state.stats.name = std::move(name);
  return {
    [=](const work_item& item, const trainer_actor& trainer) {
      auto& st = self->state;
      auto t0 = clock_type::now();
      image_batch batch;
      try {
        batch = map_synthetic(data, item);
        apply_blur_stage(blur, batch);
        encode_batch(batch, wire);
      } catch (const std::exception& e) {
        // The same item would fail on any worker: stop loudly.
        self->quit(make_error(errc::bad_batch,
                              "worker '" + st.stats.name + "', batch "
                                + std::to_string(item.batch_id) + ": "
                                + e.what()));
        return;
      }
      stamp_checksums(batch);
      batch.producer = st.stats.name;
      worker_report report;
      report.batch_id = item.batch_id;
      report.samples = static_cast<uint32_t>(item.sample_ids.size());
      report.busy_ns = ns_since(t0);
      report.mailbox_depth = self->mailbox().size();
      ++st.stats.batches;
      st.stats.samples += report.samples;
      st.stats.busy_ns += report.busy_ns;
      self->send(trainer, std::move(batch));
      self->send(router, done_atom::value, caf::actor_cast<worker_actor>(self), report);
    },
    [=](stats_atom) {
      auto stats = self->state.stats;
      stats.alive_ns = ns_since(self->state.started);
      return stats;
    },
  };
}

} // namespace

worker_actor spawn_worker(caf::actor_system& sys, std::string name,
                          const synthetic_spec& data, const blur_params& blur,
                          dtype wire, router_actor router) {
  // One OpenCV thread per worker (a process-wide setting): on a 224x224
  // image OpenCV's own threads only add contention; parallelism comes from
  // running one worker per core.
  cv::setNumThreads(1);
  return sys.spawn<caf::detached>(worker_fn, std::move(name), data, blur,
                                  wire, std::move(router));
}

} // namespace stoker
