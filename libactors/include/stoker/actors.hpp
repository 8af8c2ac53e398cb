#pragma once

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
//   worker --done, report--> router   (rate and queue estimates)
//   trainer --credit, n--> router     (how many batches it may buffer)
//   trainer --ack, batch id--> router (consumed: the lease ends)

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
/// router. `stats` reports its counters. Runs detached (its own thread):
/// a step takes seconds.
using trainer_actor = caf::typed_actor<
  caf::reacts_to<image_batch>,
  caf::replies_to<stats_atom>::with<trainer_stats>>;

/// A CPU worker: runs mapper + transforms for each leased work item, sends
/// the batch to `trainer` and reports to the router. Runs detached: one
/// batch is ~100 ms of blur, which must not starve the scheduler.
using worker_actor = caf::typed_actor<
  caf::reacts_to<work_item, trainer_actor>,
  caf::replies_to<stats_atom>::with<worker_stats>>;

/// Leases work items to workers and bounds what is in flight. `join` adds
/// a worker; `credit` comes from the trainer; `run` answers once every item
/// has been acknowledged. Runs on the scheduler: it must answer in ms.
using router_actor = caf::typed_actor<
  caf::reacts_to<join_atom, worker_actor, std::string>,
  caf::reacts_to<credit_atom, trainer_actor, uint32_t>,
  caf::reacts_to<ack_atom, uint64_t>,
  caf::reacts_to<done_atom, worker_actor, worker_report>,
  caf::replies_to<run_atom>::with<router_summary>>;

/// Spawns a source over `spec`.
source_actor spawn_source(caf::actor_system& sys, const source_spec& spec);

/// Spawns a mapper for the synthetic dataset.
mapper_actor spawn_mapper(caf::actor_system& sys, const synthetic_spec& spec);

/// Spawns a blur-stage transform.
transform_actor spawn_blur_transform(caf::actor_system& sys,
                                     const blur_params& params);

/// Spawns a router that pulls from `source`; it expects
/// `expected_samples` acknowledged samples before `run` answers.
router_actor spawn_router(caf::actor_system& sys, source_actor source,
                          routing_policy policy, uint32_t window,
                          uint64_t expected_samples);

/// Where a trainer on another node takes batches on a direct stream
/// (its batch_listener), so a worker need not send them as CAF messages.
struct batch_route {
  trainer_actor trainer;
  std::string host;
  uint16_t port = 0;
};

/// Spawns a detached worker named `name` that reports to `router` and sends
/// batches as `wire` (see transport.dtype). A batch for a trainer in
/// `routes` goes on that trainer's batch stream (one connection per worker,
/// opened on first use); any other trainer gets it as a CAF message.
worker_actor spawn_worker(caf::actor_system& sys, std::string name,
                          const synthetic_spec& data, const blur_params& blur,
                          dtype wire, router_actor router,
                          std::vector<batch_route> routes = {});

/// Spawns a detached trainer; returns an error if its device cannot be
/// set up (e.g. `cuda` without a GPU). With a `pool`, each batch's buffer
/// goes back to it after the step (the batch_listener that filled it
/// takes it from there).
caf::expected<trainer_actor>
spawn_trainer(caf::actor_system& sys, const run_config& cfg,
              router_actor router, std::shared_ptr<buffer_pool> pool = nullptr);

} // namespace stoker
