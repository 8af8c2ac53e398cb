#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "stoker/buffer_pool.hpp"
#include "stoker/messages.hpp"
#include "stoker/run_config.hpp"
#include "stoker/transform_chain.hpp"

namespace stoker {

// The typed interfaces of the pipeline. Each actor is a thin function over
// a small state struct; the work it does lives in plain, unit-tested code
// (epoch_source, map_synthetic, apply_blur_stage, routing_table,
// step_engine). Messages flow:
//
//   router --next--> source           (router pulls work items)
//   router --work_item--> worker      (a lease)
//   worker --image_batch--> trainer   (batches never pass the router; between
//                                      nodes on a batch stream, see
//                                      batch_channel.hpp)
//   worker --done, report--> router   (rate and queue estimates; also
//                                      every router.report-interval)
//   trainer --credit, hello--> router (here: its machine, the least it
//                                      wants in flight, what it trained on
//                                      before a restart)
//   trainer --ack, id, wait, step, backlog--> router (consumed: the lease
//                                   ends; how long it waited for data and
//                                   how many batches wait in front of it)

/// Hands out work items in order. Replies with up to `n` items; an empty
/// vector means every epoch has been handed out. Runs on the scheduler.
using source_actor = caf::typed_actor<
  caf::replies_to<next_atom, uint32_t>::with<std::vector<work_item>>>;

/// Turns a work item into a batch of raw samples (the mapper stage).
using mapper_actor
  = caf::typed_actor<caf::replies_to<work_item>::with<image_batch>>;

/// Runs the blur stage (ToTensor + N GaussianBlur) over a batch.
using transform_actor
  = caf::typed_actor<caf::replies_to<image_batch>::with<image_batch>>;

/// Consumes batches: trains one step per batch, acknowledges each to the
/// router with the time it waited for it. A batch whose id it already
/// trained on (the second copy of a hedged lease) is dropped, not trained
/// twice. `stats` reports its counters. Runs detached (its own thread): a
/// step takes seconds.
using trainer_actor = caf::typed_actor<
  caf::reacts_to<image_batch>,
  caf::replies_to<stats_atom>::with<trainer_stats>>;

/// Where a trainer on another node takes batches on a direct stream
/// (its batch_listener), so a worker need not send them as CAF messages.
struct batch_route {
  trainer_actor trainer;
  std::string host;
  uint16_t port = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, batch_route& x) {
  return f(caf::meta::type_name("batch_route"), x.trainer, x.host, x.port);
}

/// A CPU worker: runs mapper + transforms for each leased work item, sends
/// the batch to `trainer` and reports to the router. A `batch_route` adds a
/// trainer's batch stream (one that joined after the worker). Runs detached: one
/// batch is ~100 ms of blur, which must not starve the scheduler.
using worker_actor = caf::typed_actor<
  caf::reacts_to<work_item, trainer_actor>,
  caf::reacts_to<tick_atom>,
  caf::reacts_to<batch_route>,
  caf::replies_to<stats_atom>::with<worker_stats>>;

/// Leases work items to workers (routing_table) and bounds what is in
/// flight (inflight_window). `join` adds a worker named NAME on HOST;
/// `credit` comes from the trainer; `tick` (to itself, every report
/// interval) re-leases stragglers when hedging is on; `saved` (from a
/// trainer that checkpoints) says every batch acked so far is in its
/// checkpoint; `status` answers with what it knows now, `set` changes
/// router.policy or router.window, `control` does drain/undrain NODE,
/// pause, resume and shutdown (the console); `run` answers once
/// every item has been acknowledged. Runs on the scheduler: it must answer
/// in ms.
using router_actor = caf::typed_actor<
  caf::reacts_to<join_atom, worker_actor, std::string, std::string>,
  caf::reacts_to<credit_atom, trainer_actor, trainer_hello>,
  caf::reacts_to<ack_atom, uint64_t, uint64_t, uint64_t, uint64_t>,
  caf::reacts_to<done_atom, worker_actor, worker_report>,
  caf::reacts_to<tick_atom>,
  caf::reacts_to<saved_atom>,
  caf::replies_to<status_atom>::with<router_status>,
  caf::replies_to<set_atom, std::string, std::string>::with<std::string>,
  caf::replies_to<control_atom, std::string, std::string>::with<std::string>,
  caf::replies_to<run_atom>::with<router_summary>>;

/// Spawns a source over `spec`.
source_actor spawn_source(caf::actor_system& sys, const source_spec& spec);

/// Spawns a mapper for the synthetic dataset.
mapper_actor spawn_mapper(caf::actor_system& sys, const synthetic_spec& spec);

/// Spawns a blur-stage transform.
transform_actor spawn_blur_transform(caf::actor_system& sys,
                                     const blur_params& params);

/// Spawns a router that pulls from `source` and leases by `spec`; it
/// expects `expected_samples` acknowledged samples before `run` answers.
/// `batch_bytes` (one batch on the wire) turns the byte budget into a
/// window ceiling.
router_actor spawn_router(caf::actor_system& sys, source_actor source,
                          const router_spec& spec, uint64_t expected_samples,
                          uint64_t batch_bytes);


/// What a worker makes and how it behaves.
struct worker_setup {
  std::string name;
  synthetic_spec image; ///< the synthetic source's images
  /// The resolved pipeline. No transforms: the article's synthetic images
  /// through the fused blur stage (`blur`); else the chains over `train`
  /// and `test`, opened once per node and shared by its workers.
  data_spec data;
  std::shared_ptr<const dataset> train;
  std::shared_ptr<const dataset> test; ///< null unless the run evaluates
  /// data.transforms and data.eval_transforms, bound to their definitions.
  transform_chain train_chain;
  transform_chain test_chain;
  blur_params blur;
  dtype wire = dtype::float32; ///< transport.dtype
  double slowdown = 1.0;       ///< worker.slowdown (benchmarks and tests)
  std::chrono::milliseconds report_interval{100};
  /// A batch for a trainer in `routes` goes on that trainer's batch stream
  /// (one connection per worker, opened on first use); any other trainer
  /// gets it as a CAF message.
  std::vector<batch_route> routes;
};

/// Opens the splits `setup.data` reads through its source in `reg` (none
/// for the fused synthetic path; the test split only when the run
/// evaluates) into `setup.train` and `setup.test`, and binds their chains.
/// Do it once per node and copy the setup for each worker: they share the
/// datasets. Errors name the path (see open_dataset) or the missing entry.
caf::error open_worker_data(worker_setup& setup, const registry& reg);

/// Spawns a detached worker that reports to `router` after each item and
/// every `report_interval` between items.
worker_actor spawn_worker(caf::actor_system& sys, worker_setup setup,
                          router_actor router);

/// Spawns a detached trainer; returns an error if its device cannot be
/// set up (e.g. `cuda` without a GPU). With a `pool`, each batch's buffer
/// goes back to it after the step (the batch_listener that filled it
/// takes it from there). With `cfg.resume` it loads the checkpoint in
/// trainer.checkpoint-dir first; an error names what does not fit. The
/// model comes from `reg` (read here only: the trainer keeps no reference).
caf::expected<trainer_actor>
spawn_trainer(caf::actor_system& sys, const run_config& cfg,
              const registry& reg, router_actor router,
              std::shared_ptr<buffer_pool> pool = nullptr);

} // namespace stoker
