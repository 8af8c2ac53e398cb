#pragma once

// The router actor's state, shared by router_actor.cpp (leasing, failures)
// and router_console.cpp (what the console asks and changes). Internal.

#include <chrono>
#include <map>
#include <unordered_map>
#include <set>
#include <optional>
#include <string>
#include <vector>

#include <caf/stateful_actor.hpp>

#include "stoker/router_status.hpp"
#include "stoker/actors.hpp"
#include "core/batch_id_set.hpp"
#include "core/trace_recorder.hpp"
#include "routing/inflight_window.hpp"
#include "routing/lease_book.hpp"
#include "routing/offload.hpp"
#include "routing/router_actor.hpp"
#include "routing/routing_table.hpp"
#include "routing/latency_record.hpp"
#include "routing/run_series.hpp"

namespace stoker::detail {

using clock_type = std::chrono::steady_clock;

/// One rank of the data-parallel group as the router keeps it.
struct trainer_slot {
  trainer_actor actor;                   // null until it says hello
  caf::actor_addr given;                 // given this rank, hello or not
  uint32_t prefetch = 0; // its hello's: the least it wants in flight
  uint64_t heard_ns = 0; // its last credit, ack or `saved`
  bool gpu = false;      // its hello said it has a CUDA blur stage
  std::string node;
  std::string host;
  // Moving averages per step (acks), nanoseconds.
  double period_ns = 0.0; // step + collective: how long a batch lasts it
  double wait_ns = 0.0;
  double collective_ns = 0.0;
  bool measured = false;
  bool checkpoints = false; // its hello: it saves (rank 0: the group's)
  uint64_t resume_seq = 0;  // its hello: trained below this seq before
  uint64_t acked = 0;       // its batches acknowledged, over the run
};

struct router_state {
  router_spec spec;
  router_scope scope = router_scope::cluster;
  // -- the plain parts the actor is glue over
  lease_book book;   // every work item from the source to the ack
  routing_table table{routing_policy::least_loaded};
  window_limits limits;
  // pipeline.placement: which leases go to the trainer's GPU unblurred,
  // judged once per placement_period from the acks and worker reports.
  offload_controller offload;
  // -- the actors it talks to
  source_actor source;
  std::vector<worker_actor> workers; // by routing table index
  std::vector<uint64_t> worker_memory; // its machine's, 0: unknown
  std::unordered_map<caf::actor_addr, size_t> worker_index; // O(1) a report
  std::vector<trainer_slot> trainers; // by rank
  // The group's in-flight window, each rank's (inflight_window says why
  // one for the group): made when every rank is here, gone with a rank.
  std::optional<inflight_window> window;
  // Trainers of a group told to stop when another rank was lost: their
  // exits are expected, not failures.
  std::set<caf::actor_addr> retired;
  bool fetching = false;         // a request to the source is out
  std::optional<uint64_t> no_workers_since; // ns, while none is alive
  // -- the console's
  std::optional<trace_recorder> trace; // trace start FILE
  std::string trace_path;
  bool paused = false;  // pause: no new leases
  std::string stopping; // shutdown: why; finish when drained
  bool stop_now = false; // a loop stopped: finish without draining
  // -- the placement period
  offload_signals period; // acks summed since the period began
  uint64_t period_started_ns = 0;
  std::vector<uint64_t> busy_total;     // per worker: last busy_total_ns
  // Per worker: its last report's counters and when it joined (the
  // report's view of a worker lost before it could answer).
  std::vector<worker_report> last_counts;
  std::vector<uint64_t> joined_ns;
  std::vector<uint64_t> busy_at_period; // per worker: at the period's start
  // -- the run
  router_summary summary; // what the book does not count
  run_series series;      // the report's time series, offered every tick
  latency_record lease_to_ack; // every acked lease's time
  uint64_t total_wait_ns = 0; // every rank's data wait, summed over the run
  uint64_t total_step_ns = 0; // and its steps
  clock_type::time_point started = clock_type::now(); // the table's clock
  clock_type::time_point run_started;
  caf::typed_response_promise<router_summary> run_promise;
  bool run_requested = false;
  caf::error failure;
  // -- the journal (cluster.state-dir; dir empty: none)
  router_journal journal;
  batch_id_set acked;         // every batch acknowledged, over every head
  bool journal_dirty = false; // acks or checkpoints since the last write
  uint64_t journal_written_ns = 0;
  uint64_t journal_run_ns = 0; // the run's time under earlier heads
  static constexpr const char* name = "stoker.router";

  uint64_t now_ns() const {
    return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(clock_type::now()
                                                           - started)
        .count());
  }

  /// The summary with the book's and the window's counts in it.
  router_summary current_summary() const;

  /// Offers the run's counts now to the time series (`last`: the end).
  void offer_series(bool last = false);

  /// The group's size (`world`; one until it says otherwise).
  uint32_t world() const noexcept {
    return static_cast<uint32_t>(trainers.size());
  }

  /// Makes the group's window once every rank is here: at least each
  /// rank's prefetch, fed by every rank's acks.
  void open_window();

  /// A trainer of every rank is here (nothing is leased before).
  bool group_complete() const;

  /// Every rank's trainer has a CUDA blur stage (placement may send it
  /// unblurred batches).
  bool all_gpu() const;

  /// The rank of the trainer `addr`, if it is one of the group.
  std::optional<uint32_t> rank_of(const caf::actor_addr& addr) const;
};

using router_ptr = router_actor::stateful_pointer<router_state>;

/// Leases what the window allows (router_actor.cpp).
void dispatch(router_ptr self);

/// Sends each lease to its worker (router_actor.cpp).
void send_leases(router_ptr self, std::vector<lease_order> orders);

/// Answers `run` if the run is over (router_actor.cpp).
void maybe_finish(router_ptr self);

/// Writes the journal if there is one and something changed, at most once
/// a second unless `now` (router_actor.cpp).
void write_journal(router_ptr self, bool now = false);

/// A trainer said hello (router_trainers.cpp).
void trainer_joined(router_ptr self, trainer_actor trainer,
                    const trainer_hello& hello);

/// The trainer of rank `rank` is gone: `event` says how ("exited before
/// the run ended", "stopped answering"), `why` the reason if known
/// (router_trainers.cpp).
void lose_trainer(router_ptr self, uint32_t rank, const std::string& why,
                  const std::string& event = "exited before the run ended");

/// A worker died or hung: the book re-leases what it held, the report
/// keeps what the router last saw of it (router_workers.cpp).
void lose_worker(router_ptr self, size_t index, const std::string& why);

/// A worker's actor exited: lost as above, or the run fails where no
/// other worker could make its batch (router_workers.cpp).
void worker_exited(router_ptr self, size_t index, const caf::error& reason);

/// A worker's report: a finished item, or its periodic heartbeat
/// (router_workers.cpp).
void on_report(router_ptr self, const worker_actor& worker,
               const worker_report& report);

/// A trainer acknowledged a batch (router_trainers.cpp).
void on_ack(router_ptr self, const batch_ack& ack);

/// The console's `router` view of the state now (router_console.cpp).
router_status status_of(router_ptr self);

/// The console's `set router.policy` (router_console.cpp).
std::string set_policy(router_ptr self, const policy_change& change);

/// The console's `set router.window`, clamped to the window's bounds
/// (router_console.cpp).
std::string set_window(router_ptr self, const window_change& change);

/// The console's drain/undrain NODE|WORKER, pause, resume, shutdown,
/// trace start FILE, trace stop (router_console.cpp).
caf::result<std::string> steer(router_ptr self, const steer_command& cmd);

/// Writes the trace being recorded, if any, and stops recording; the
/// answer says how many spans went where (router_console.cpp).
caf::expected<std::string> finish_trace(router_ptr self);

} // namespace stoker::detail
