#include "stoker/actors.hpp"
#include "stoker/blur.hpp"
#include "stoker/errors.hpp"
#include "stoker/synthetic_mapper.hpp"

namespace stoker {

// Standalone stage actors, for pipelines that place each stage in its own
// actor. The worker actor runs the same plain functions inline to save a
// message hop per batch.

mapper_actor spawn_mapper(caf::actor_system& sys, const synthetic_spec& spec) {
  return sys.spawn<caf::detached>([spec]() -> mapper_actor::behavior_type {
    return {
      [spec](const work_item& item) { return map_synthetic(spec, item); },
    };
  });
}

transform_actor spawn_blur_transform(caf::actor_system& sys,
                                     const blur_params& params) {
  return sys.spawn<caf::detached>(
    [params]() -> transform_actor::behavior_type {
      return {
        [params](image_batch& batch) -> caf::result<image_batch> {
          try {
            apply_blur_stage(params, batch);
          } catch (const std::exception& e) {
            return make_error(errc::bad_batch, e.what());
          }
          return std::move(batch);
        },
      };
    });
}

} // namespace stoker
