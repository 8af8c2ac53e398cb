#pragma once

// A local run (stoker-node --role=local) inside the test process, from
// command-line flags: for the suites that check what a whole run does.

#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

#include <caf/actor_system.hpp>

#include "stoker/registry.hpp"
#include "node/local_role.hpp"
#include "node/node_config.hpp"

#include "support/real_data.hpp"

namespace stoker_test {

// Runs a local job with `args` (flags as on the command line) and returns
// its report, or the error it failed with; flags that do not load fail the
// test, naming why.
inline caf::expected<stoker::run_report>
run_local_with(const std::vector<std::string>& args) {
  stoker::node_config cfg;
  auto loaded = cfg.load(args, stoker::builtin_registry());
  BOOST_REQUIRE_MESSAGE(loaded, why(loaded));
  BOOST_REQUIRE(loaded->has_value());
  caf::actor_system sys{cfg};
  return stoker::run_local(sys, **loaded, stoker::builtin_registry());
}

} // namespace stoker_test
