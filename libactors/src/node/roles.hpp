#pragma once

// The roles a node process runs besides local (local_role.hpp): the head,
// and the worker and trainer members that join it.

#include <chrono>

#include <caf/actor_system.hpp>
#include <caf/expected.hpp>

#include "stoker/actors.hpp"
#include "stoker/options.hpp"
#include "stoker/run_report.hpp"

namespace stoker {

class node_links;
class registry;
struct trainer_hooks;

/// Connects to the head at cfg.cluster.head_host:head_port (through
/// `links`), retrying with back-off (100 ms doubling to 1 s) until
/// cfg.cluster.connect_timeout. The error names the address, the time
/// waited and the last failure; a TLS refusal ends it at once.
caf::expected<membership_actor> connect_to_head(caf::actor_system& sys,
                                                const cluster_spec& cfg,
                                                node_links& links);

/// `--role=head`: publishes the membership actor, waits for the expected
/// nodes, runs the job, says its outcome and writes the report
/// (finish_run), tells every node to exit. Returns the report, or what
/// ended the run before it ran (said already): errc::invalid_config for a
/// setting refused, errc::run_failure otherwise. judge_run reads either.
caf::expected<run_report> run_head(caf::actor_system& sys,
                                   const run_config& cfg, node_links& links);

/// `stoker-node --role=worker` or `--role=trainer`: joins the head, runs
/// its actors until the head says `shutdown`. Refuses to join (exit 1,
/// naming the entry) when the head's pipeline names a source, transform
/// or model `reg` lacks. Returns the exit code. `hooks` (may be null): a
/// trainer node's engine from an embedding process (the Python package's
/// loop); then a lost trainer is not started again. `failure` (may be
/// null) gets the first failure line it said (without "stoker-node: "),
/// so an embedder raises the reason, not an exit code.
int member_role_main(caf::actor_system& sys, const run_config& cfg,
                     const registry& reg, node_links& links,
                     const trainer_hooks* hooks = nullptr,
                     std::string* failure = nullptr);

/// Bounds the process's remaining lifetime: if it has not exited within
/// `limit` (e.g. because the actor system's shutdown waits on a network peer
/// that vanished; the hang once seen in about ten cluster runs here was a
/// detached actor held by a stopped BASP broker: node/actor_release.hpp),
/// it exits with `code`, said to `log` (kept alive until then). Call when
/// all of a node's own work is done and reported.
void bound_shutdown(int code, std::chrono::seconds limit,
                    std::shared_ptr<const log_sink> log);

} // namespace stoker
