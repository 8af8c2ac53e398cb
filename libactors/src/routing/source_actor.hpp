#pragma once

// The source actor: glue over the cursor (data/epoch_source.hpp).

#include <caf/actor_system.hpp>

#include "stoker/actors.hpp"
#include "stoker/options.hpp"

namespace stoker {

/// Spawns a source over `spec` (the source_actor protocol: runs on the
/// scheduler and answers `next` with up to n work items).
source_actor spawn_source(caf::actor_system& sys, const source_spec& spec);

} // namespace stoker
