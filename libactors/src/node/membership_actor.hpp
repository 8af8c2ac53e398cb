#pragma once

// The head's front door: cluster membership as an actor, glue over the
// plain `membership` (membership.hpp).

#include <caf/actor_system.hpp>

#include "stoker/actors.hpp"
#include "stoker/options.hpp"

namespace stoker {

/// Spawns the membership actor for a run of `cfg`: it waits for the nodes
/// of `cfg.cluster.nodes` and hands each joining worker to `router`.
membership_actor spawn_membership(caf::actor_system& sys,
                                  const run_config& cfg, router_actor router);

} // namespace stoker
