#include "node/member_parts.hpp"

#include <caf/send.hpp>

#include "stoker/errors.hpp"
#include "core/system_log.hpp"
#include "node/prepare_run.hpp"
#include "train/step_engine.hpp"
#include "train/trainer_actor.hpp"
#include "worker/worker_actor.hpp"

namespace stoker {

// A worker node: connects straight to every trainer (so batches do not pass
// through the head), then runs its worker actors.
caf::expected<local_part>
start_workers(caf::actor_system& sys, caf::scoped_actor& self,
              const run_config& cfg, const welcome& w,
              const membership_actor& head, const registry& reg,
              node_links& links) {
  local_part local;
  std::vector<batch_route> routes;
  for (auto& t : w.trainers) {
    auto direct = links.connect_retrying<trainer_actor>(
      sys, t.host, t.port, "trainer '" + t.node + "'",
      cfg.node.cluster.connect_timeout);
    if (!direct) // its error names the trainer and its address
      return std::move(direct.error());
    if (t.data_port != 0)
      routes.push_back(
        batch_route{*direct, t.host, t.data_port, t.stream_token});
  }
  // This node's view of the files must be the head's (shared storage).
  // Buffers come back once a batch is on its stream (not after one sent
  // as a CAF message, which CAF copies).
  auto common = node_worker_setup(
    cfg, reg, std::make_shared<buffer_pool>(batch_buffers_for(cfg)),
    shared_log_of(sys));
  if (!common)
    return make_error(errc::run_failure, "worker node '" + cfg.node.name
                                           + "': "
                                           + describe(common.error()));
  common->routes = routes;
  common->tls = links.tls();
  common->handshake_timeout = cfg.node.cluster.connect_timeout;
  common->stopping = local.stopping;
  std::vector<worker_actor> workers;
  for (uint32_t i = 0; i < cfg.node.workers; ++i) {
    auto setup = *common;
    setup.name = cfg.node.name + "/" + std::to_string(i);
    workers.push_back(spawn_worker(sys, std::move(setup), w.router));
    local.actors.push_back(caf::actor_cast<caf::actor>(workers.back()));
  }
  self->send(head, join_atom::value, cfg.node.name, std::move(workers));
  return local;
}

// One trainer of a trainer node (index `index`): spawned, published for
// worker nodes, with its batch stream beside it. Its actor and stream go
// into `local`; returns where it listens.
caf::expected<std::pair<trainer_actor, trainer_endpoint>>
start_trainer(caf::actor_system& sys, const run_config& cfg,
              const router_actor& router, const registry& reg,
              uint32_t index, local_part& local, node_links& links,
              const trainer_hooks* hooks) {
  auto pool = std::make_shared<buffer_pool>(cfg.pipeline.trainer.prefetch
                                            + 4);
  // --resume without a checkpoint here is fine for a rank of a group
  // (rank 0's checkpoint holds every rank's state): said at the join.
  auto trainer = spawn_trainer(sys, cfg, reg, router, pool, index, true,
                               hooks);
  if (!trainer)
    return std::move(trainer.error());
  auto fail = [&](const std::string& what, const std::string& why) {
    caf::anon_send_exit(*trainer, caf::exit_reason::user_shutdown);
    return make_error(errc::run_failure, "trainer: cannot listen " + what
                                           + " on " + cfg.node.cluster.bind
                                           + ": " + why);
  };
  auto port = links.publish(sys, *trainer, cfg.node.cluster.bind, 0,
                            "trainer " + std::to_string(index) + "'s port");
  if (!port)
    return fail("for actors", describe(port.error()));
  trainer_endpoint where;
  where.node = cfg.node.name;
  where.index = index;
  where.host = cfg.node.cluster.bind;
  where.port = *port;
  local.ports.push_back(*port);
  if (cfg.pipeline.transport.batch_stream) {
    // The largest frame a worker may send: a full batch of float32.
    auto token = random_token();
    if (!token)
      return fail("for batch streams", describe(token.error()));
    where.stream_token = *token;
    auto stream = batch_listener::start(
      cfg.node.cluster.bind, 0, batch_float_bytes(cfg.pipeline),
      stream_security{*token, links.tls(), cfg.node.cluster.connect_timeout},
      pool,
      [t = *trainer](image_batch&& b) { caf::anon_send(t, std::move(b)); },
      [log = shared_log_of(sys)](const std::string& what) {
        log->warning("stoker-node: " + what);
      });
    if (!stream)
      return fail("for batch streams", describe(stream.error()));
    where.data_port = (*stream)->port();
    local.streams.push_back(std::move(*stream));
  }
  local.actors.push_back(caf::actor_cast<caf::actor>(*trainer));
  local.places.push_back(where);
  return std::make_pair(std::move(*trainer), std::move(where));
}

// A trainer node: its trainers (trainer.count: one per GPU) train what the
// head's pipeline makes, each on its own device, and each listens where
// worker nodes can reach it. Each waits for its rank (a group_spec from
// the head).
caf::expected<local_part>
start_trainers(caf::actor_system& sys, caf::scoped_actor& self,
               const run_config& cfg, const welcome& w,
               const membership_actor& head, const registry& reg,
               node_links& links, const trainer_hooks* hooks) {
  local_part local;
  std::vector<trainer_actor> trainers;
  std::vector<trainer_endpoint> places;
  auto count = trainers_on_node(cfg.node.trainer);
  // The head checks rank 0's against the group that forms.
  auto resume_world = resume_world_of(cfg);
  for (uint32_t i = 0; i < count; ++i) {
    auto started = start_trainer(sys, cfg, w.router, reg, i, local, links,
                                 hooks);
    if (!started) {
      for (auto& a : local.actors)
        self->send_exit(a, caf::exit_reason::user_shutdown);
      return std::move(started.error());
    }
    started->second.resume_world = resume_world;
    local.places.back().resume_world = resume_world;
    self->monitor(started->first);
    local.indices.push_back(i);
    trainers.push_back(std::move(started->first));
    places.push_back(std::move(started->second));
  }
  self->send(head, join_atom::value, cfg.node.name, std::move(trainers),
             std::move(places));
  return local;
}

} // namespace stoker
