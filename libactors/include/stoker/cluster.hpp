#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/expected.hpp>

#include "stoker/actors.hpp"
#include "stoker/run_config.hpp"

namespace stoker {

class registry;

// -- messages between the head and the other nodes --------------------------

/// Where a trainer node listens, so worker nodes can connect to it directly
/// (batches never pass through the head).
struct trainer_endpoint {
  std::string node;
  std::string host;
  uint16_t port = 0;      ///< the trainer actor, published through CAF
  uint16_t data_port = 0; ///< its batch stream; 0 = batches as CAF messages
};

/// What a node says when it joins.
struct node_info {
  std::string name;
  std::string host; ///< the machine (node.host): locality for the router
  std::string role; ///< "worker" or "trainer"
  uint32_t cores = 0;
  uint32_t workers = 0;  ///< worker actors it runs (worker nodes)
  std::string device;    ///< the trainer's device setting (trainer nodes)
  caf::actor control;    ///< receives `shutdown` at the end of the run
};

/// One node as the head knows it (the console's `nodes`).
struct node_row {
  std::string name;
  std::string role;
  std::string host;
  uint32_t cores = 0;
  uint32_t workers = 0;
  std::string device;
  int64_t joined_unix_s = 0; ///< when it said hello
  std::string state;         ///< "joining", "joined" or "left"
};

/// The head's answer to `hello`: what to run and whom to talk to.
struct welcome {
  run_config config; ///< the pipeline, as the head has it
  router_actor router;
  std::vector<trainer_endpoint> trainers;
};

/// Who is in the cluster.
struct roster {
  std::vector<std::string> nodes;   ///< joined, in order
  std::vector<std::string> missing; ///< expected, not joined yet
  std::vector<caf::actor> controls;
  std::vector<worker_actor> workers;
  std::vector<trainer_actor> trainers;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, trainer_endpoint& x) {
  return f(caf::meta::type_name("trainer_endpoint"), x.node, x.host, x.port,
           x.data_port);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, node_info& x) {
  return f(caf::meta::type_name("node_info"), x.name, x.host, x.role, x.cores,
           x.workers, x.device, x.control);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, node_row& x) {
  return f(caf::meta::type_name("node_row"), x.name, x.role, x.host, x.cores,
           x.workers, x.device, x.joined_unix_s, x.state);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, welcome& x) {
  return f(caf::meta::type_name("welcome"), x.config, x.router, x.trainers);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, roster& x) {
  return f(caf::meta::type_name("roster"), x.nodes, x.missing, x.controls,
           x.workers, x.trainers);
}

using hello_atom = caf::atom_constant<caf::atom("hello")>;
using wait_atom = caf::atom_constant<caf::atom("wait")>;
using roster_atom = caf::atom_constant<caf::atom("roster")>;
using shutdown_atom = caf::atom_constant<caf::atom("shutdown")>;
using nodes_atom = caf::atom_constant<caf::atom("nodes")>;

/// The head's front door, published on `cluster.port`. `hello` answers with
/// the pipeline (a worker node's answer waits until a trainer has joined, so
/// it can connect to it); `join` brings a node's actors in (workers go to
/// the router at once, also in the middle of a run); `wait` answers once
/// every expected node has joined; `roster` answers with who is in now;
/// `nodes` with every node seen, joined or gone (the console).
/// It monitors every node's control actor: when a node's process goes, its
/// name is free again (a trainer restarted with --resume rejoins under it),
/// and worker nodes get the endpoint of every trainer that joins after
/// them. Runs on the scheduler.
using registry_actor = caf::typed_actor<
  caf::replies_to<hello_atom, node_info>::with<welcome>,
  caf::reacts_to<join_atom, std::string, std::vector<worker_actor>>,
  caf::reacts_to<join_atom, std::string, trainer_actor, trainer_endpoint>,
  caf::replies_to<wait_atom>::with<roster>,
  caf::replies_to<roster_atom>::with<roster>,
  caf::replies_to<nodes_atom>::with<std::vector<node_row>>>;

/// Spawns the registry for a run of `cfg`, waiting for `cfg.cluster.expect`.
registry_actor spawn_registry(caf::actor_system& sys, const run_config& cfg,
                              router_actor router);

/// Connects to the head at cfg.cluster.head_host:head_port, retrying with
/// back-off (100 ms doubling to 1 s) until cfg.cluster.connect_timeout.
/// The error names the address, the time waited and the last failure.
caf::expected<registry_actor> connect_to_head(caf::actor_system& sys,
                                              const cluster_spec& cfg);

/// `stoker-node --role=head`: publishes the registry, waits for the
/// expected nodes, runs the job, reports, tells every node to exit.
/// Returns the process exit code.
int head_role_main(caf::actor_system& sys, const run_config& cfg);

/// `stoker-node --role=worker` or `--role=trainer`: joins the head, runs
/// its actors until the head says `shutdown`. Refuses to join (exit 1,
/// naming the entry) when the head's pipeline names a source, transform
/// or model `reg` lacks. Returns the exit code.
int member_role_main(caf::actor_system& sys, const run_config& cfg,
                     const registry& reg);

/// Bounds the process's remaining lifetime: if it has not exited within
/// `limit` (e.g. because the actor system's shutdown waits on a network peer
/// that vanished, which CAF 0.17.6's middleman was seen to do about once in
/// ten cluster runs here), it exits with `code`. Call when all of a node's
/// own work is done and reported.
void bound_shutdown(int code, std::chrono::seconds limit);

} // namespace stoker
