#include "worker/worker_actor.hpp"

#include <chrono>
#include <thread>
#include <optional>
#include <stdexcept>

#include <caf/stateful_actor.hpp>
#include <opencv2/core.hpp>

#include "stoker/actors.hpp"
#include "stoker/errors.hpp"
#include "config/run_config.hpp"
#include "core/machine.hpp"
#include "transport/batch_channel.hpp"
#include "transport/batch_check.hpp"
#include "transport/batch_codec.hpp"
#include "worker/worker_pulse.hpp"
#include "core/system_log.hpp"

namespace stoker {

namespace {

using clock_type = std::chrono::steady_clock;

struct worker_state {
  worker_stats stats;
  clock_type::time_point started = clock_type::now();
  std::vector<batch_route> routes;
  std::vector<std::optional<batch_sender>> senders; // one per route
  std::shared_ptr<const tls_context> tls;            // for the senders
  std::chrono::milliseconds handshake_timeout{10000};
  // Set by the node when it shuts down: a batch that cannot be sent then
  // is dropped without a word (the run is over).
  std::shared_ptr<const std::atomic<bool>> stopping;
  std::unique_ptr<worker_pulse> pulse; // alive while busy on one item
  batch_resources own; // its scratch, the node's buffer pool
  router_actor router; // where reports go (another after a head restart)
  static constexpr const char* name = "stoker.worker";
};

using worker_ptr = worker_actor::stateful_pointer<worker_state>;

// Sends `batch` on the trainer's batch stream if it has one, else (or if
// the stream fails) as a CAF message.
void deliver(worker_ptr self, image_batch&& batch,
             const trainer_actor& trainer) {
  auto& st = self->state;
  for (size_t i = 0; i < st.routes.size(); ++i) {
    auto& route = st.routes[i];
    if (route.port == 0 || route.trainer.address() != trainer.address())
      continue;
    bool stopping = st.stopping && *st.stopping;
    auto& sender = st.senders[i];
    if (!sender) {
      auto opened = batch_sender::connect(
        route.host, route.port,
        stream_security{route.token, st.tls, st.handshake_timeout});
      if (!opened && stopping)
        return; // told to shut down: no fallback, and nothing to say
      if (!opened) {
        log_to(self->system(), log_level::warning)
          << "worker '" << st.stats.name << "': "
          << describe(opened.error())
          << "; sending batches as CAF messages";
        route.port = 0;
        break;
      }
      sender.emplace(std::move(*opened));
    }
    auto err = sender->send(batch);
    if (!err) {
      if (st.own.buffers) // on the wire: the buffer is free again
        st.own.buffers->release(std::move(batch.data));
      return;
    }
    if (stopping)
      return; // told to shut down: no fallback, and nothing to say
    log_to(self->system(), log_level::warning)
      << "worker '" << st.stats.name << "': " << describe(err)
      << "; sending batches as CAF messages";
    sender.reset();
    route.port = 0;
    break;
  }
  batch.verified_here = true; // checksummed as written; dropped if CAF
                              // serializes it (another process)
  self->send(trainer, std::move(batch));
}

uint64_t ns_since(clock_type::time_point t0) {
  return static_cast<uint64_t>(
    std::chrono::duration_cast<std::chrono::nanoseconds>(clock_type::now()
                                                         - t0)
      .count());
}

worker_report make_report(worker_ptr self) {
  auto& st = self->state;
  worker_report report;
  report.mailbox_depth = self->mailbox().size();
  report.processed = st.stats.batches;
  report.busy_total_ns = st.stats.busy_ns;
  report.samples_total = st.stats.samples;
  report.decoded_files = st.stats.decoded_files;
  report.decode_ns = st.stats.decode_ns;
  report.decoded_pixels = st.stats.decoded_pixels;
  report.file_pixels = st.stats.file_pixels;
  report.stages = st.stats.stages;
  return report;
}

worker_actor::behavior_type worker_fn(worker_ptr self, worker_setup setup,
                                      router_actor router) {
  self->state.stats.name = setup.name;
  self->state.senders.resize(setup.routes.size());
  self->state.routes = std::move(setup.routes);
  self->state.stopping = setup.stopping;
  self->state.tls = setup.tls;
  self->state.handshake_timeout = setup.handshake_timeout;
  self->state.own.buffers = setup.buffers;
  auto interval = setup.report_interval;
  // The pulse's thread holds no strong reference: the worker may go. Made
  // again for a new router (between items: the pulse is idle then).
  auto weak = caf::actor_cast<caf::weak_actor_ptr>(self);
  auto start_pulse = [self, weak, interval] {
    self->state.pulse = std::make_unique<worker_pulse>(
      interval, [weak, router = self->state.router](const worker_report& r) {
        if (auto strong = caf::actor_cast<caf::strong_actor_ptr>(weak))
          caf::anon_send(router, done_atom::value,
                         caf::actor_cast<worker_actor>(strong), r);
      });
  };
  self->state.router = std::move(router);
  start_pulse();
  self->delayed_send(self, interval, tick_atom::value);
  auto me = [self] { return caf::actor_cast<worker_actor>(self); };
  return {
    [=](const work_item& item, const trainer_actor& trainer) {
      auto& st = self->state;
      auto t0 = clock_type::now();
      auto faults_before = thread_minor_faults();
      st.pulse->busy(make_report(self));
      // Whatever happens below (sending included), it stops with the item.
      struct idle_at_end {
        worker_pulse& pulse;
        ~idle_at_end() {
          pulse.idle();
        }
      } idle{*st.pulse};
      image_batch batch;
      try {
        batch = setup.maker->make(item, setup.slowdown, st.own);
        encode_batch(batch, setup.wire, st.own.buffers.get());
        if (setup.sim_item.count() > 0) // a detached worker: it may sleep
          std::this_thread::sleep_for(setup.sim_item);
      } catch (const std::bad_alloc&) {
        // Another machine may have the memory: the router decides.
        self->quit(make_error(
          errc::out_of_memory,
          "worker '" + st.stats.name + "', batch "
            + std::to_string(item.batch_id) + ": cannot allocate its "
            + std::to_string(item.sample_ids.size()) + " images ("
            + human_bytes(setup.maker->float_bytes(item))
            + " as float32): out of memory"));
        return;
      } catch (const std::exception& e) {
        // The same item would fail on any worker: stop loudly.
        self->quit(make_error(errc::bad_batch,
                              "worker '" + st.stats.name + "', batch "
                                + std::to_string(item.batch_id) + ": "
                                + e.what()));
        return;
      }
      // The blur stage and the mapper stamp them as they write the data
      // (one pass less); a 16-bit wire's encoding clears them: here.
      if (batch.checksums.size() != batch.size())
        stamp_checksums(batch);
      batch.producer = st.stats.name;
      auto busy = ns_since(t0);
      ++st.stats.batches;
      st.stats.samples += item.sample_ids.size();
      st.stats.busy_ns += busy;
      st.stats.decoded_files = st.own.decode.files;
      st.stats.decode_ns = st.own.decode.ns;
      st.stats.decoded_pixels = st.own.decode.decoded_pixels;
      st.stats.file_pixels = st.own.decode.file_pixels;
      st.stats.stages = st.own.decode.stages;
      deliver(self, std::move(batch), trainer);
      if (st.stats.batches > warmup_batches) { // the steady state
        st.stats.steady_faults += thread_minor_faults() - faults_before;
        ++st.stats.steady_batches;
      }
      auto report = make_report(self);
      report.batch_id = item.batch_id;
      report.samples = static_cast<uint32_t>(item.sample_ids.size());
      report.busy_ns = busy;
      self->send(st.router, done_atom::value, me(), report);
    },
    [=](batch_route& route) {
      // A trainer that joined after this worker (e.g. one restarted with
      // --resume): its batch stream from now on.
      auto& st = self->state;
      for (auto& known : st.routes)
        if (known.trainer.address() == route.trainer.address())
          return;
      st.routes.push_back(std::move(route));
      st.senders.emplace_back();
    },
    [=](rejoin_atom, const caf::actor& next) {
      // The head was started again: its router gets the reports now.
      self->state.router = caf::actor_cast<router_actor>(next);
      start_pulse();
    },
    [=](tick_atom) {
      // Between items: say it is alive and how much waits in its mailbox.
      self->send(self->state.router, done_atom::value, me(),
                 make_report(self));
      self->delayed_send(self, interval, tick_atom::value);
    },
    [=](stats_atom) {
      auto stats = self->state.stats;
      stats.alive_ns = ns_since(self->state.started);
      stats.usage = node_usage_now(setup.node);
      return stats;
    },
  };
}

} // namespace

caf::expected<worker_setup>
node_worker_setup(const run_config& cfg, const registry& reg,
                  std::shared_ptr<buffer_pool> buffers,
                  std::shared_ptr<const log_sink> log) {
  python_binding python;
  python.spec = cfg.node.python;
  python.processes = std::max<size_t>(1, cfg.node.workers);
  python.log = std::move(log);
  auto maker = batch_maker::open(cfg.pipeline, reg, python);
  if (!maker)
    return std::move(maker.error());
  worker_setup setup;
  setup.maker = std::make_shared<const batch_maker>(std::move(*maker));
  setup.buffers = std::move(buffers);
  setup.wire = cfg.pipeline.transport.wire;
  setup.slowdown = cfg.node.slowdown;
  setup.sim_item = cfg.node.sim_item;
  setup.report_interval = cfg.pipeline.router.report_interval;
  setup.node = cfg.node;
  return setup;
}

size_t batch_buffers_for(const run_config& cfg) {
  auto batch = std::max<uint64_t>(1, batch_float_bytes(cfg.pipeline));
  auto in_flight = std::min<uint64_t>(
    64, cfg.pipeline.router.max_inflight_bytes / batch + 1);
  return static_cast<size_t>(in_flight) + cfg.node.workers;
}

worker_actor spawn_worker(caf::actor_system& sys, worker_setup setup,
                          router_actor router) {
  // One OpenCV thread per worker (a process-wide setting): on a 224x224
  // image OpenCV's own threads only add contention; parallelism comes from
  // running one worker per core.
  cv::setNumThreads(1);
  return sys.spawn<caf::detached>(worker_fn, std::move(setup),
                                  std::move(router));
}

} // namespace stoker
