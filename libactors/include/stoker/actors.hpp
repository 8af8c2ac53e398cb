#pragma once

// stoker layer: protocol
//
// The actor protocol: the typed interface of every actor of a run and the
// messages between the head and the other nodes. What each actor does is
// in its folder (routing/, worker/, train/, node/); this header is the
// contract they share, and what a user's own actor would speak.

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "stoker/router_status.hpp"
#include "stoker/options.hpp"

namespace stoker {

// The typed interfaces of the pipeline. Each actor is a thin function over
// a small state struct; the work it does lives in plain, unit-tested code
// (epoch_source, batch_maker, lease_book, routing_table, inflight_window,
// step_engine). Messages flow:
//
//   router --next--> source           (router pulls work items)
//   router --work_item--> worker      (a lease)
//   worker --image_batch--> trainer   (batches never pass the router; between
//                                      nodes on a batch stream, see
//                                      batch_channel.hpp)
//   worker --done, report--> router   (rate and queue estimates; also
//                                      every router.report-interval)
//   trainer --credit, hello--> router (here: its machine, the least it
//                                      wants in flight, what it trained on
//                                      before a restart)
//   trainer --batch_ack--> router     (consumed: the lease ends; how long
//                                      it waited for data and how many
//                                      batches wait in front of it)

/// Hands out work items in order. Replies with up to `n` items; an empty
/// vector means every epoch has been handed out. `world` (before the first
/// `next`) sets the data-parallel group's size and answers with its epoch
/// plan, or an error naming the settings that leave no step (epoch_plan). Runs on the scheduler.
using source_actor = caf::typed_actor<
  caf::replies_to<next_atom, uint32_t>::with<std::vector<work_item>>,
  caf::replies_to<world_atom, uint32_t>::with<group_plan>>;

/// Consumes batches: trains one step per batch, acknowledges each to the
/// router with the time it waited for it. A batch whose id it already
/// trained on (the second copy of a hedged lease) is dropped, not trained
/// twice. A `group_spec` (once, before any batch) gives it its rank: it
/// joins the group's collective (world > 1), then says hello to the
/// router. `stats` reports its counters. `rejoin` with a router (a
/// router_actor handle; the head was started again with --resume) sends
/// its acks there from now on, and the next group_spec of a lone trainer
/// says hello again with every batch it trained so far, so the new router
/// leases none of them; a copy it drops is acknowledged all the same (the
/// new router may have leased it). `ended` (from its engine's thread: a
/// loop's) says pending steps ended: it finishes and acks them in order.
/// Runs detached (its own thread): a step takes seconds, a collective
/// waits for the slowest rank.
using trainer_actor = caf::typed_actor<
  caf::reacts_to<image_batch>,
  caf::reacts_to<group_spec>,
  caf::reacts_to<rejoin_atom, caf::actor>,
  caf::reacts_to<ended_atom>,
  caf::replies_to<stats_atom>::with<trainer_stats>>;

/// Where a trainer on another node takes batches on a direct stream
/// (its batch_listener), so a worker need not send them as CAF messages.
struct batch_route {
  trainer_actor trainer;
  std::string host;
  uint16_t port = 0;
  std::string token; ///< the stream's per-run token (its hello carries it)
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, batch_route& x) {
  return f(caf::meta::type_name("batch_route"), x.trainer, x.host, x.port,
           x.token);
}

/// A CPU worker: makes the batch of each leased work item (its node's
/// batch_maker), sends it to `trainer` and reports to the router. A
/// `batch_route` adds a trainer's batch stream (one that joined after the
/// worker). `rejoin` with a router (a router_actor handle: the head was
/// started again) sends its reports there from now on; leases of the old
/// router still queued are made as before. Runs detached: one batch is
/// ~100 ms of blur, which must not starve the scheduler.
using worker_actor = caf::typed_actor<
  caf::reacts_to<work_item, trainer_actor>,
  caf::reacts_to<tick_atom>,
  caf::reacts_to<batch_route>,
  caf::reacts_to<rejoin_atom, caf::actor>,
  caf::replies_to<stats_atom>::with<worker_stats>>;

/// A worker for the router to lease to: its name ("NODE/i", or
/// "worker-i" in a local run), the machine it runs on (node.host: locality)
/// and that machine's memory (whether another worker could make a batch
/// this one could not allocate).
struct worker_join {
  worker_actor worker;
  std::string name;
  std::string host;
  uint64_t memory_bytes = 0; ///< 0: unknown
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, worker_join& x) {
  return f(caf::meta::type_name("worker_join"), x.worker, x.name, x.host,
           x.memory_bytes);
}

/// The console's steering of the router (its drain, undrain, pause,
/// resume, shutdown and trace commands).
enum class steer_verb : uint8_t {
  drain = 1,   ///< no new work to `target` (a node's workers, or a worker)
  undrain,     ///< work for `target` again
  pause,       ///< no new leases; in-flight ones finish
  resume,      ///< lease again
  shutdown,    ///< no new leases; end the run once in-flight ones are acked
  trace_start, ///< record a timeline to the file `target`
  trace_stop,  ///< write it
};

template <>
struct enum_names<steer_verb> {
  static constexpr enum_name<steer_verb> table[] = {
    {steer_verb::drain, "drain"},
    {steer_verb::undrain, "undrain"},
    {steer_verb::pause, "pause"},
    {steer_verb::resume, "resume"},
    {steer_verb::shutdown, "shutdown"},
    {steer_verb::trace_start, "trace-start"},
    {steer_verb::trace_stop, "trace-stop"}};
};

/// One steering command and whom it is for.
struct steer_command {
  steer_verb verb = steer_verb::pause;
  std::string target; ///< drain, undrain: NODE or WORKER; trace-start: FILE
};

/// The console's `set router.policy POLICY`, checked by the console.
struct policy_change {
  routing_policy policy = routing_policy::least_loaded;
};

/// The console's `set router.window N`, checked by the console.
struct window_change {
  uint32_t size = 1; ///< 1..100000 (router.window's range)
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, steer_command& x) {
  return f(caf::meta::type_name("steer_command"), x.verb, x.target);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, policy_change& x) {
  return f(caf::meta::type_name("policy_change"), x.policy);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, window_change& x) {
  return f(caf::meta::type_name("window_change"), x.size);
}

/// Leases work items to workers (routing_table) and bounds what is in
/// flight (inflight_window). A worker_join adds a worker;
/// a `group_spec` with a trainer says that trainer was given that rank
/// (the router watches it from then on: one that stops before its hello
/// is lost like one after); `credit` comes from the trainer, a batch_ack
/// for each batch it
/// consumed; `tick` (to itself, every report interval) checks heartbeats
/// and re-leases stragglers when hedging is on; `saved` with each rank's
/// next slot.seq (from rank 0 of a group, once its checkpoint of every
/// rank is written) says which acked items the group's checkpoint holds;
/// `saved` (from a trainer
/// that checkpoints) says every batch acked so far is in its checkpoint;
/// `status` answers with what it knows now; a steer_command, a
/// policy_change or a window_change come from the console; `run` answers
/// once every item has been acknowledged. `world` (before `run`) sets the
/// data-parallel group's size: it tells the source and answers with the
/// group's plan; nothing is leased until a trainer of every
/// rank has said hello. Runs on the scheduler: it must answer in ms.
// -- a data-parallel group's rendezvous store -------------------------------

/// What a rank asks its group's store (c10d::Store's calls).
enum class store_verb : uint8_t {
  set = 1,     ///< key = value
  compare_set, ///< key = value if it holds `expected` (or is missing and
               ///< `expected` is empty); answers the value it holds after
  get,         ///< the value, once the key exists
  add,         ///< key += amount (a decimal count; missing: 0)
  erase,       ///< answers whether it existed
  check,       ///< whether every key of `keys` exists
  count,       ///< how many keys
  wait,        ///< answers once every key of `keys` exists
};

/// One call of c10d::Store to the group's store actor. `timeout_ms`
/// bounds a `get` or `wait` that waits for keys (then an error names
/// them).
struct store_op {
  store_verb verb = store_verb::get;
  std::string key;
  std::vector<uint8_t> value;
  std::vector<uint8_t> expected;
  int64_t amount = 0;
  std::vector<std::string> keys;
  uint64_t timeout_ms = 0;
};

/// The store's answer: a value, a number or a yes/no, by verb.
struct store_reply {
  std::vector<uint8_t> value;
  int64_t number = 0;
  bool yes = false;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, store_op& x) {
  return f(caf::meta::type_name("store_op"), x.verb, x.key, x.value,
           x.expected, x.amount, x.keys, x.timeout_ms);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, store_reply& x) {
  return f(caf::meta::type_name("store_reply"), x.value, x.number, x.yes);
}

/// A data-parallel group's rendezvous store (train/group_store.hpp): the
/// head's (or a local run's), reached by the ranks over their CAF
/// connections, so it has no port of its own. Runs on the scheduler.
using store_actor = caf::typed_actor<caf::replies_to<store_op>::with<store_reply>,
                                     caf::reacts_to<tick_atom>>;

/// The head's membership actor to the router: a node that answered the
/// head's pings has not for `silent_ms`, over cluster.heartbeat-timeout
/// (hung, stopped, cut off). Its trainers' ranks are lost: in a group the
/// others would only wait for them in a collective, and then the wrong
/// rank would seem to fail.
struct node_silent {
  std::string node;
  uint64_t silent_ms = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, node_silent& x) {
  return f(caf::meta::type_name("node_silent"), x.node, x.silent_ms);
}

/// A node's answer to the head's `ping` (its main thread, which never
/// blocks on training: a rank hung in a collective still answers, a
/// stopped process does not).
struct node_alive {
  std::string node;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, node_alive& x) {
  return f(caf::meta::type_name("node_alive"), x.node);
}

/// A trainer whose training loop ended the run on purpose (a Python loop
/// closed its loader before the last epoch): the router ends the run now,
/// as stopped; what is in flight is not trained (the report's missing).
struct loop_stopped {
  uint32_t rank = 0;
  std::string why;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, loop_stopped& x) {
  return f(caf::meta::type_name("loop_stopped"), x.rank, x.why);
}

using router_actor = caf::typed_actor<
  caf::reacts_to<worker_join>,
  caf::reacts_to<node_silent>,
  caf::reacts_to<credit_atom, trainer_actor, trainer_hello>,
  caf::reacts_to<group_spec, trainer_actor>,
  caf::reacts_to<batch_ack>,
  caf::reacts_to<loop_stopped>,
  caf::reacts_to<done_atom, worker_actor, worker_report>,
  caf::reacts_to<tick_atom>,
  caf::reacts_to<saved_atom>,
  caf::reacts_to<saved_atom, std::vector<uint64_t>>,
  caf::replies_to<status_atom>::with<router_status>,
  caf::replies_to<steer_command>::with<std::string>,
  caf::replies_to<policy_change>::with<std::string>,
  caf::replies_to<window_change>::with<std::string>,
  caf::replies_to<world_atom, uint32_t>::with<group_plan>,
  caf::replies_to<run_atom>::with<router_summary>>;

// -- messages between the head and the other nodes --------------------------

/// Where one trainer of a trainer node listens, so worker nodes can connect
/// to it directly (batches never pass through the head).
struct trainer_endpoint {
  std::string node;
  uint32_t index = 0; ///< which of its node's trainers (trainer.count)
  std::string host;
  uint16_t port = 0;      ///< the trainer actor, published through CAF
  uint16_t data_port = 0; ///< its batch stream; 0 = batches as CAF messages
  /// What a batch stream's hello must carry: a random secret per run,
  /// handed to workers over CAF (so a stranger cannot inject batches).
  std::string stream_token;
  /// Started with --resume: the size of the group that saved the
  /// checkpoint it would resume (1: a lone trainer's); 0: none. Rank 0's
  /// must match the group that forms, or the head refuses the run.
  uint32_t resume_world = 0;
};

/// What a node says when it joins.
struct node_info {
  std::string name;
  std::string host; ///< the machine (node.host): locality for the router
  role_kind role = role_kind::worker; ///< worker or trainer
  uint32_t cores = 0;
  uint64_t memory_bytes = 0; ///< the machine's (physical_memory_bytes)
  uint32_t workers = 0;  ///< worker actors it runs (worker nodes)
  std::string device;    ///< the trainer's device setting (trainer nodes)
  caf::actor control;    ///< receives `shutdown` at the end of the run
  uint32_t trainers = 0; ///< trainers it runs (trainer nodes)
};

/// One node as the head knows it (the console's `nodes`).
struct node_row {
  std::string name;
  role_kind role = role_kind::local;
  std::string host;
  uint32_t cores = 0;
  uint32_t workers = 0;
  std::string device;
  int64_t joined_unix_s = 0; ///< when it said hello
  std::string state;         ///< "joining", "joined" or "left"
};

/// The head's answer to `hello`: what to run and whom to talk to.
struct welcome {
  pipeline_options pipeline; ///< the head's: what every node runs
  router_actor router;
  std::vector<trainer_endpoint> trainers;
  /// The head journals the run (cluster.state-dir): if it goes, a node
  /// keeps its work and retries it for cluster.connect-timeout.
  bool resumable = false;
};

/// Who is in the cluster.
struct roster {
  std::vector<std::string> nodes;   ///< joined, in order
  std::vector<std::string> missing; ///< expected, not joined yet
  std::vector<caf::actor> controls;
  std::vector<worker_actor> workers;
  std::vector<trainer_actor> trainers;
  std::vector<trainer_endpoint> trainer_places; ///< beside `trainers`
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, trainer_endpoint& x) {
  return f(caf::meta::type_name("trainer_endpoint"), x.node, x.index, x.host,
           x.port, x.data_port, x.stream_token, x.resume_world);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, node_info& x) {
  return f(caf::meta::type_name("node_info"), x.name, x.host, x.role, x.cores,
           x.memory_bytes, x.workers, x.device, x.control, x.trainers);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, node_row& x) {
  return f(caf::meta::type_name("node_row"), x.name, x.role, x.host, x.cores,
           x.workers, x.device, x.joined_unix_s, x.state);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, welcome& x) {
  return f(caf::meta::type_name("welcome"), x.pipeline, x.router,
           x.trainers, x.resumable);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, roster& x) {
  return f(caf::meta::type_name("roster"), x.nodes, x.missing, x.controls,
           x.workers, x.trainers, x.trainer_places);
}

/// The head's word to every node that the run will not start, and why (a
/// setting that cannot work, found once the nodes joined): each node says
/// it and exits 2 when the `shutdown` that follows comes.
struct run_refusal {
  std::string reason;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, run_refusal& x) {
  return f(caf::meta::type_name("run_refusal"), x.reason);
}

/// The head's word to every node that the run failed, and why (the line
/// the head says: the rank that exited, the node that went silent), sent
/// before the `shutdown`: each node says it, so a rank whose peer died
/// names that peer, not only its collective's error ("Connection closed
/// by peer"). The node's exit code is unchanged (its own work ended well).
struct run_failure_note {
  std::string reason;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, run_failure_note& x) {
  return f(caf::meta::type_name("run_failure_note"), x.reason);
}

using hello_atom = caf::atom_constant<caf::atom("hello")>;
using wait_atom = caf::atom_constant<caf::atom("wait")>;
using roster_atom = caf::atom_constant<caf::atom("roster")>;
using shutdown_atom = caf::atom_constant<caf::atom("shutdown")>;
using nodes_atom = caf::atom_constant<caf::atom("nodes")>;
using ping_atom = caf::atom_constant<caf::atom("ping")>;

/// The head's front door, published on `cluster.port`. `hello` answers with
/// the pipeline (a worker node's answer waits until a trainer has joined, so
/// it can connect to it); `join` brings a node's actors in (workers go to
/// the router at once, also in the middle of a run); `wait` answers once
/// every expected node has joined; `roster` answers with who is in now;
/// `world` (from the head, once the group is formed) says the group's size:
/// with one rank, a trainer that rejoins later (--resume) gets its
/// group_spec from here;
/// `nodes` with every node seen, joined or gone (the console).
/// It monitors every node's control actor: when a node's process goes, its
/// name is free again (a trainer restarted with --resume rejoins under it),
/// and worker nodes get the endpoint of every trainer that joins after
/// them. On `tick` (to itself) it sends `ping` to every node's control, a
/// fifth of cluster.heartbeat-timeout apart: a node that hears nothing
/// from the head for the whole timeout knows the head is hung. Each node
/// answers with `node_alive`; one that answered before and has not for
/// the whole timeout is told to the router (`node_silent`). Runs on the
/// scheduler.
using membership_actor = caf::typed_actor<
  caf::replies_to<hello_atom, node_info>::with<welcome>,
  caf::reacts_to<join_atom, std::string, std::vector<worker_actor>>,
  caf::reacts_to<join_atom, std::string, std::vector<trainer_actor>,
                 std::vector<trainer_endpoint>>,
  caf::reacts_to<world_atom, uint32_t, store_actor>,
  caf::replies_to<wait_atom>::with<roster>,
  caf::replies_to<roster_atom>::with<roster>,
  caf::replies_to<nodes_atom>::with<std::vector<node_row>>,
  caf::reacts_to<node_alive>,
  caf::reacts_to<tick_atom>>;

/// Registers every message type of messages.hpp and of this header (and
/// the actor handles above) with `cfg`; call once before the actor system
/// starts.
void register_message_types(caf::actor_system_config& cfg);

} // namespace stoker
