#pragma once

// stoker layer: core

// The atoms that tag Stoker's messages between the router, sources,
// workers and trainers (the node roles' own are in actors.hpp): one name
// each, at most 10 characters (CAF 0.17's limit).

#include <caf/atom.hpp>

namespace stoker {

using next_atom = caf::atom_constant<caf::atom("next")>;
using join_atom = caf::atom_constant<caf::atom("join")>;
using credit_atom = caf::atom_constant<caf::atom("credit")>;
using done_atom = caf::atom_constant<caf::atom("done")>;
using run_atom = caf::atom_constant<caf::atom("run")>;
using stats_atom = caf::atom_constant<caf::atom("stats")>;
using tick_atom = caf::atom_constant<caf::atom("tick")>;
using saved_atom = caf::atom_constant<caf::atom("saved")>;
using status_atom = caf::atom_constant<caf::atom("status")>;
using world_atom = caf::atom_constant<caf::atom("world")>;
using rejoin_atom = caf::atom_constant<caf::atom("rejoin")>;
using ended_atom = caf::atom_constant<caf::atom("ended")>;

} // namespace stoker
