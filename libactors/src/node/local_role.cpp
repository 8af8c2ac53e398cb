#include "node/local_role.hpp"

#include <ctime>
#include <optional>
#include <thread>

#include <caf/scoped_actor.hpp>

#include "stoker/actors.hpp"
#include "stoker/errors.hpp"
#include "config/run_config.hpp"
#include "console/node_consoles.hpp"
#include "node/node_links.hpp"
#include "node/prepare_run.hpp"
#include "observe/http_observer.hpp"
#include "observe/progress_line.hpp"
#include "core/machine.hpp"
#include "data/epoch_source.hpp"
#include "node/roles.hpp"
#include "node/run_outcome.hpp"
#include "routing/router_actor.hpp"
#include "routing/source_actor.hpp"
#include "train/group_store.hpp"
#include "train/step_engine.hpp"
#include "train/trainer_actor.hpp"
#include "worker/worker_actor.hpp"
#include "core/system_log.hpp"

namespace stoker {

namespace {

// A local run has no registry: the console is told its actors and its one
// node up front.
job_target local_job_target(const run_config& cfg,
                                    const router_actor& router,
                                    const std::vector<trainer_actor>& trainers,
                                    const std::vector<worker_actor>& workers) {
  job_target target;
  target.router = router;
  target.members.nodes = {cfg.node.name};
  target.members.workers = workers;
  target.members.trainers = trainers;
  node_row self;
  self.name = cfg.node.name;
  self.role = role_kind::local;
  self.host = cfg.node.host;
  self.cores = std::thread::hardware_concurrency();
  self.workers = cfg.node.workers;
  self.device = to_string(cfg.node.trainer.device);
  self.joined_unix_s = static_cast<int64_t>(std::time(nullptr));
  self.state = "joined";
  target.nodes.push_back(std::move(self));
  return target;
}

} // namespace

caf::expected<run_report>
run_local(caf::actor_system& sys, const run_config& cfg, const registry& reg,
          std::shared_ptr<const tls_context> serving_tls,
          const trainer_hooks* hooks) {
  // The data-parallel group: trainer.count trainers in this process.
  auto world = trainers_on_node(cfg.node.trainer);
  // A port that is taken, or a checkpoint that cannot resume this run, is
  // refused before anything starts (exit 2), not after the workers ran.
  if (auto err = check_ports_free(cfg.node))
    return err;
  if (auto err = check_resume(cfg, world))
    return err;
  epoch_source plan{cfg.pipeline.source};
  auto source = spawn_source(sys, cfg.pipeline.source);
  auto router = spawn_router(sys, source, cfg.pipeline.router,
                             plan.total_samples(),
                             batch_wire_bytes(cfg.pipeline),
                             router_scope::local);
  caf::scoped_actor self{sys};
  auto stop = [&](auto&&... actors) {
    (self->send_exit(actors, caf::exit_reason::user_shutdown), ...);
  };
  std::vector<trainer_actor> trainers;
  auto stop_trainers = [&] {
    for (auto& t : trainers)
      stop(t);
  };
  // The group's trainers meet at a store of their own on loopback.
  caf::error failure;
  self->request(router, caf::infinite, world_atom::value, world)
    .receive([](group_plan&) {}, [&](caf::error& err) { failure = err; });
  if (failure) {
    stop(router, source);
    return failure;
  }
  // Its rendezvous: an actor of this process, no port at all.
  store_actor store;
  if (world > 1)
    store = spawn_group_store(sys);
  // One pool for the run's image buffers: the workers take them, the
  // trainers give them back after their steps.
  auto buffers = std::make_shared<buffer_pool>(batch_buffers_for(cfg));
  for (uint32_t rank = 0; rank < world; ++rank) {
    auto trainer = spawn_trainer(sys, cfg, reg, router, buffers, rank,
                                 false, hooks);
    if (!trainer) {
      stop_trainers();
      stop(router, source);
      return std::move(trainer.error());
    }
    trainers.push_back(std::move(*trainer));
  }
  for (uint32_t rank = 0; rank < world; ++rank) {
    group_spec g;
    g.rank = rank;
    g.world = world;
    g.store = caf::actor_cast<caf::actor>(store);
    g.node = cfg.node.name;
    g.interface = "127.0.0.1";
    self->send(router, g, trainers[rank]);
    self->send(trainers[rank], std::move(g));
  }
  auto common = node_worker_setup(cfg, reg, buffers,
                                  shared_log_of(self->system()));
  if (!common) {
    stop_trainers();
    stop(router, source);
    return std::move(common.error());
  }
  std::vector<worker_actor> workers;
  for (uint32_t i = 0; i < cfg.node.workers; ++i) {
    auto setup = *common;
    setup.name = "worker-" + std::to_string(i);
    auto name = setup.name;
    workers.push_back(spawn_worker(sys, std::move(setup), router));
    worker_join join;
    join.worker = workers.back();
    join.name = name;
    join.host = cfg.node.host;
    join.memory_bytes = physical_memory_bytes();
    self->send(router, std::move(join));
  }
  auto target = local_job_target(cfg, router, trainers, workers);
  auto consoles = node_consoles::open(sys, cfg.node.console, target, "local",
                                      serving_tls);
  auto observer = open_http_observer(sys, cfg.node.metrics, std::move(target),
                                     std::move(serving_tls), "local");
  std::optional<progress_reporter> progress;
  if (shows_progress(cfg.node))
    progress.emplace(sys, router);
  caf::expected<run_report> result{caf::error{}};
  if (!consoles)
    result = std::move(consoles.error());
  else if (!observer)
    result = std::move(observer.error());
  else
    self->request(router, caf::infinite, run_atom::value)
      .receive(
        [&](router_summary& summary) {
          result = collect_report(self, summary, trainers, workers,
                                  node_usage_now(cfg.node));
        },
        [&](caf::error& err) {
          // The workers stop now (each after its current item); the report
          // says how far the run got.
          for (auto& w : workers)
            stop(w);
          result = collect_failed_report(self, router, trainers, workers,
                                         err);
        });
  progress.reset(); // ends its line before anything else is printed
  if (result)
    result->data_damage = cfg.pipeline.data.damage;
  if (observer) {
    linger(observer->get(), cfg.node.metrics, "local");
    observer->reset(); // before the actors it asks
  }
  consoles = node_consoles{}; // before the actors they ask
  for (auto& w : workers)
    stop(w);
  stop_trainers();
  stop(router, source);
  if (store)
    stop(store);
  return result;
}

} // namespace stoker
