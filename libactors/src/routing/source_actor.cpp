#include "routing/source_actor.hpp"

#include <optional>

#include "stoker/actors.hpp"
#include "data/epoch_source.hpp"

namespace stoker {

namespace {

struct source_state {
  std::optional<epoch_source> cursor;
  static constexpr const char* name = "stoker.source";
};

source_actor::behavior_type
source_fn(source_actor::stateful_pointer<source_state> self,
          source_spec spec) {
  self->state.cursor.emplace(spec);
  return {
    [=](next_atom, uint32_t n) {
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
