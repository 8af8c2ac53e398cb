#include "routing/source_actor.hpp"

#include <optional>

#include "stoker/actors.hpp"
#include "stoker/errors.hpp"
#include "data/epoch_source.hpp"

namespace stoker {

namespace {

struct source_state {
  source_spec spec;
  std::optional<epoch_source> cursor;
  bool started = false; // a `next` came: the group's size is fixed
  static constexpr const char* name = "stoker.source";
};

source_actor::behavior_type
source_fn(source_actor::stateful_pointer<source_state> self,
          source_spec spec) {
  self->state.spec = spec;
  self->state.cursor.emplace(spec);
  return {
    [=](world_atom, uint32_t world) -> caf::result<group_plan> {
      auto& s = self->state;
      if (s.started)
        return make_error(errc::run_failure,
                          "the group's size (" + std::to_string(world)
                            + ") came after the first work items; expected "
                              "it before the run starts");
      if (world == 0)
        return make_error(errc::invalid_config,
                          "a data-parallel group of 0 trainers; expected "
                          "at least one");
      epoch_source cursor{s.spec, world};
      if (auto err = cursor.plan().check())
        return err;
      s.cursor.emplace(std::move(cursor));
      auto& plan = s.cursor->plan();
      group_plan out;
      out.world = world;
      out.samples_expected = s.cursor->total_samples();
      out.samples_dropped = plan.dropped_per_epoch() * s.spec.epochs;
      out.samples_padded = plan.padded_per_epoch() * s.spec.epochs;
      out.steps_per_epoch = plan.steps();
      return out;
    },
    [=](next_atom, uint32_t n) {
      self->state.started = true;
      std::vector<work_item> items;
      for (uint32_t i = 0; i < n; ++i) {
        auto item = self->state.cursor->next();
        if (!item)
          break;
        items.push_back(std::move(*item));
      }
      return items;
    },
  };
}

} // namespace

source_actor spawn_source(caf::actor_system& sys, const source_spec& spec) {
  return sys.spawn(source_fn, spec);
}

} // namespace stoker
