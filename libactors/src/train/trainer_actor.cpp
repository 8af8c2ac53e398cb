#include "train/trainer_actor.hpp"

#include <iostream>
#include <optional>

#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>

#include "stoker/actors.hpp"
#include "stoker/errors.hpp"
#include "config/run_config.hpp"
#include "core/batch_id_set.hpp"
#include "core/machine.hpp"
#include "data/epoch_plan.hpp"
#include "kernels/blur.hpp"
#include "train/checkpoint.hpp"
#include "train/collective.hpp"
#include "train/delivery_ledger.hpp"
#include "train/epoch_gate.hpp"
#include "train/step_engine.hpp"
#include "train/trainer_state.hpp"
#include "transport/batch_check.hpp"
#include "transport/batch_codec.hpp"
#include "core/system_log.hpp"

namespace stoker {

namespace {

using namespace stoker::detail;

trainer_actor::behavior_type
trainer_fn(trainer_ptr self, std::shared_ptr<step_engine> engine,
           run_config cfg, router_actor router,
           std::shared_ptr<buffer_pool> pool,
           std::shared_ptr<const checkpoint> resumed,
           std::shared_ptr<cuda_blur_stage> gpu_blur,
           caf::error resume_missing, std::optional<loop_place> loop_resume) {
  auto& st = self->state;
  st.resume_missing = std::move(resume_missing);
  st.engine = std::move(engine);
  st.gpu_blur = std::move(gpu_blur);
  auto& p = cfg.pipeline;
  st.blur = p.blur;
  st.spec = p.trainer;
  st.pool = std::move(pool);
  st.router = router;
  st.run = identity_of(cfg);
  st.checkpoint_dir = cfg.node.trainer.checkpoint_dir;
  st.checkpoint_every = cfg.node.trainer.checkpoint_every;
  st.ledger.emplace(p.source.dataset_size, p.source.epochs);
  auto& hello = st.hello;
  hello.prefetch = p.trainer.prefetch;
  hello.host = cfg.node.host;
  hello.checkpoints = !cfg.node.trainer.checkpoint_dir.empty();
  hello.resumed = resumed != nullptr;
  hello.gpu_blur = st.gpu_blur != nullptr;
  if (resumed) {
    st.loop_resume = loop_resume;
    if (!loop_resume)
      st.lone_resume_refused = check_resume_world(
        checkpoint_world(*resumed), 1,
        "in " + checkpoint_path(cfg.node.trainer.checkpoint_dir));
    else if (loop_resume->world != 1)
      st.lone_resume_refused = make_error(
        errc::invalid_config,
        "the trainer resumes from the state_dict() of rank "
          + std::to_string(loop_resume->rank) + " of a group of "
          + std::to_string(loop_resume->world)
          + ", but is alone; expected the same "
          + std::to_string(loop_resume->world)
          + " trainers, each given its own rank's state_dict()");
    st.ledger->restore(resumed->ledger_bits, resumed->delivered,
                       resumed->duplicates);
    st.consumed.restore(resumed->done_below, resumed->done_ids);
    st.stats.steps = resumed->step;
    st.stats.resumed_steps = resumed->step;
    st.stats.resumed_samples = resumed->delivered;
    st.gate_resumed = st.ledger->unique();
    hello.done_below = resumed->done_below;
    hello.done_ids = resumed->done_ids;
    // A rank's place in its group's sequence (a loop's cursor of a rank;
    // a group's file sets it when the group forms).
    st.next_seq = resumed->next_seq;
    hello.resume_seq = resumed->next_seq;
    log_to(self->system()) << "trainer: resumed from step " << resumed->step
                           << " (" << st.ledger->unique() - st.ledger->skipped()
                           << " samples trained before)";
  }
  auto& e = st.expect;
  e.height = p.data.output.height;
  e.width = p.data.output.width;
  e.channels = p.data.output.channels;
  e.num_classes = p.data.num_classes;
  e.order = layout::chw;
  e.type = p.transport.wire;
  e.dataset_size = p.source.dataset_size;
  e.epochs = p.source.epochs;
  e.eval_size = p.source.eval_size;
  e.labels_from_ids = p.data.source.name == "synthetic";
  e.recheck_verified = cfg.node.trainer.recheck_images;
  st.stats.device = st.engine->device();
  st.stats.simulated = st.engine->simulated();
  // The process's progress line replaces the Iteration lines (local run).
  bool progress_line = cfg.node.role == role_kind::local
                       && shows_progress(cfg.node);
  st.log_every = progress_line ? 0 : p.trainer.log_every;
  st.line_start = progress_line ? "\r\x1b[K" : "";
  st.cfg = std::move(cfg);
  // A pending step's end comes from the engine's thread (a loop's) as a
  // message, so the trainer finishes it on its own. Weak: the engine is
  // the trainer's, and must not keep it alive.
  st.engine->on_step_ended(
    [weak = caf::actor_cast<caf::weak_actor_ptr>(self)] {
      if (auto strong = caf::actor_cast<caf::strong_actor_ptr>(weak))
        caf::anon_send(caf::actor_cast<trainer_actor>(strong),
                       ended_atom::value);
    });
  return {
    [=](image_batch& batch) {
      auto& s = self->state;
      if (!s.grouped) {
        s.early.push_back(std::move(batch));
        return;
      }
      on_batch(self, batch);
    },
    [=](group_spec& g) {
      auto& s = self->state;
      if (s.grouped && s.rejoining && g.world == 1 && s.group.world == 1) {
        // The head's new router: every batch trained so far (the ledger
        // and the model have them) is never leased again.
        s.rejoining = false;
        s.hello.resumed = true;
        s.hello.done_below = s.consumed.watermark();
        s.hello.done_ids = s.consumed.sparse();
        self->send(s.router, credit_atom::value,
                   caf::actor_cast<trainer_actor>(self), s.hello);
        log_to(self->system())
          << "trainer: said hello to the new head's router ("
          << s.ledger->unique() << " samples trained so far)";
        return;
      }
      if (s.grouped)
        return; // one group per trainer
      if (!join_group(self, std::move(g)))
        return;
      while (!s.early.empty()) {
        auto b = std::move(s.early.front());
        s.early.pop_front();
        on_batch(self, b);
      }
    },
    [=](ended_atom) {
      finish_ended(self);
    },
    [=](rejoin_atom, const caf::actor& next) {
      // The head was started again (--resume): acks go to its router.
      auto& s = self->state;
      s.router = caf::actor_cast<router_actor>(next);
      s.rejoining = true;
    },
    [=](stats_atom) {
      auto& s = self->state;
      auto stats = s.stats;
      stats.samples_delivered = s.ledger->delivered();
      stats.unique_samples = s.ledger->unique();
      stats.skipped_unique = s.ledger->skipped();
      stats.skipped_sources = s.skips.sources();
      stats.duplicates = s.ledger->duplicates();
      stats.usage = node_usage_now(s.cfg.node);
      if (s.group.world > 1)
        stats.ledger_bits = s.ledger->pack();
      return stats;
    },
  };
}

// The GPU blur stage `pipeline.placement` asks for: none for cpu; for gpu
// it must open; for auto a GPU-less trainer says so and the workers blur.
caf::expected<std::shared_ptr<cuda_blur_stage>>
open_gpu_blur(const run_config& cfg, const log_sink& log) {
  auto placement = cfg.pipeline.router.placement;
  if (placement == blur_placement::cpu)
    return std::shared_ptr<cuda_blur_stage>{};
  auto stage = cuda_blur_stage::open(0);
  if (!stage) {
    if (placement == blur_placement::gpu)
      return make_error(errc::invalid_config,
                        "pipeline.placement = \"gpu\": "
                          + describe(stage.error())
                          + "; expected a trainer with a CUDA device, or "
                            "pipeline.placement = \"cpu\" or \"auto\"");
    log.info("trainer: pipeline.placement = \"auto\": "
             + describe(stage.error()) + "; the workers blur everything");
    return std::shared_ptr<cuda_blur_stage>{};
  }
  log.info("trainer: the blur stage can run on " + stage->device_name()
           + " (pipeline.placement = \"" + to_string(placement) + "\")");
  return std::make_shared<cuda_blur_stage>(std::move(*stage));
}

} // namespace

run_identity identity_of(const run_config& cfg) {
  auto& s = cfg.pipeline.source;
  run_identity id;
  id.dataset_size = s.dataset_size;
  id.epochs = s.epochs;
  id.batch_size = s.batch_size;
  id.seed = s.seed;
  id.shuffle = s.shuffle;
  return id;
}

caf::error check_resume(const run_config& cfg, uint32_t world) {
  if (!cfg.node.resume)
    return caf::none;
  auto& dir = cfg.node.trainer.checkpoint_dir;
  auto loaded = read_checkpoint(dir);
  if (!loaded)
    return std::move(loaded.error());
  if (auto err = check_resumable(loaded->run, identity_of(cfg)))
    return err;
  return check_resume_world(checkpoint_world(*loaded), world,
                            "in " + checkpoint_path(dir));
}

uint32_t resume_world_of(const run_config& cfg) {
  if (!cfg.node.resume || cfg.node.trainer.checkpoint_dir.empty())
    return 0;
  auto loaded = read_checkpoint(cfg.node.trainer.checkpoint_dir);
  return loaded ? checkpoint_world(*loaded) : 0;
}

caf::expected<trainer_actor>
spawn_trainer(caf::actor_system& sys, const run_config& cfg,
              const registry& reg, router_actor router,
              std::shared_ptr<buffer_pool> pool, uint32_t local_index,
              bool defer_missing_checkpoint, const trainer_hooks* hooks) {
  auto engine = hooks && hooks->make_engine
                  ? hooks->make_engine(cfg, local_index, pool)
                  : make_step_engine(cfg.pipeline.trainer, cfg.node.trainer,
                                     reg, local_index);
  if (!engine)
    return std::move(engine.error());
  std::shared_ptr<const checkpoint> resumed;
  caf::error resume_missing;
  std::optional<loop_place> loop_resume;
  if (hooks && hooks->resume_from) {
    // A loop's own cursor (its state_dict()), not a file of this node.
    if (auto err = check_resumable(hooks->resume_from->run, identity_of(cfg)))
      return err;
    if (auto err = check_resume_world(checkpoint_world(*hooks->resume_from),
                                      1, "in the loader's state_dict()"))
      return err;
    if (hooks->resume_world == 0 || hooks->resume_rank >= hooks->resume_world)
      return make_error(errc::invalid_config,
                        "the state_dict() says rank "
                          + std::to_string(hooks->resume_rank) + " of "
                          + std::to_string(hooks->resume_world)
                          + "; expected a rank below a world of 1 or more");
    resumed = hooks->resume_from;
    loop_resume = loop_place{hooks->resume_rank, hooks->resume_world};
  } else if (cfg.node.resume) {
    auto loaded = read_checkpoint(cfg.node.trainer.checkpoint_dir);
    if (!loaded && !defer_missing_checkpoint)
      return std::move(loaded.error());
    if (!loaded) {
      resume_missing = std::move(loaded.error());
    } else {
      if (auto err = check_resumable(loaded->run, identity_of(cfg)))
        return err;
      if (auto err = (*engine)->load_state(loaded->engine_state))
        return err;
      loaded->engine_state.clear(); // in the engine now
      resumed = std::make_shared<const checkpoint>(std::move(*loaded));
    }
  }
  auto gpu_blur = open_gpu_blur(cfg, log_of(sys));
  if (!gpu_blur)
    return std::move(gpu_blur.error());
  std::shared_ptr<step_engine> shared = std::move(*engine);
  return sys.spawn<caf::detached>(trainer_fn, std::move(shared), cfg,
                                  std::move(router), std::move(pool),
                                  std::move(resumed), std::move(*gpu_blur),
                                  std::move(resume_missing),
                                  std::move(loop_resume));
}

} // namespace stoker
