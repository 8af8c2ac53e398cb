#pragma once

// The local role: every actor of the run in this process.

#include <memory>

#include <caf/actor_system.hpp>
#include <caf/expected.hpp>

#include "stoker/options.hpp"
#include "core/run_report.hpp"

namespace stoker {

class node_links;
class registry;
class tls_context;
struct trainer_hooks;

/// Runs the whole pipeline in this process: a source, a router,
/// `cfg.node.workers` detached CPU workers and one trainer, until every
/// work item of every epoch has been acknowledged. Blocks the calling thread.
/// Returns the run report, or the error that ended the run early. The
/// sources, transforms and model come from `reg` (read while the actors
/// are set up; they keep no reference to it). `serving_tls`: mutual TLS
/// for a console or HTTP endpoints bound beyond loopback. `hooks` (may be
/// null): the trainers' engine and cursor from an embedding process (the
/// Python package's loop).
caf::expected<run_report>
run_local(caf::actor_system& sys, const run_config& cfg, const registry& reg,
          std::shared_ptr<const tls_context> serving_tls = nullptr,
          const trainer_hooks* hooks = nullptr);

} // namespace stoker
