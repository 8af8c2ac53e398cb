#pragma once

// The CPU worker actor: glue over the mappers and transforms below it.

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/error.hpp>

#include "stoker/actors.hpp"
#include "stoker/dataset.hpp"
#include "stoker/options.hpp"
#include "transforms/transform_chain.hpp"

namespace stoker {

class registry;

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

} // namespace stoker
