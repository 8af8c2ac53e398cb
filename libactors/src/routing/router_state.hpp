#pragma once

// The router actor's state, shared by router_actor.cpp (leasing, failures)
// and router_console.cpp (what the console asks and changes). Internal.

#include <chrono>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <caf/stateful_actor.hpp>

#include "stoker/actors.hpp"
#include "core/batch_id_set.hpp"
#include "core/trace_recorder.hpp"
#include "routing/inflight_window.hpp"
#include "routing/offload.hpp"
#include "routing/routing_table.hpp"

namespace stoker::detail {

using clock_type = std::chrono::steady_clock;

// One batch leased and not yet acknowledged.
struct lease {
  work_item item; // kept to lease it again (hedging)
  size_t worker = 0;
  uint64_t leased_ns = 0;
  bool hedged = false;
};

struct router_state {
  router_spec spec;
  std::optional<trace_recorder> trace; // the console's trace start FILE
  std::string trace_path;
  bool paused = false; // the console's pause: no new leases
  std::string stopping; // the console's shutdown: why; finish when drained
  // A trainer that checkpoints can be restarted: the items it acked since
  // its last checkpoint are kept until it says `saved`, and while it is
  // gone (since when, why) nothing is leased.
  bool trainer_checkpoints = false;
  std::map<uint64_t, work_item> unsaved;
  std::optional<uint64_t> trainer_lost_at;
  batch_id_set resumed; // trained before a restart: never leased again
  std::deque<work_item> orphans; // a lost worker's, waiting for a live one
  std::optional<uint64_t> no_workers_since; // ns, while none is alive
  routing_table table{routing_policy::least_loaded};
  std::optional<inflight_window> window;
  window_limits limits;
  source_actor source;
  std::vector<worker_actor> workers;
  std::map<caf::actor_addr, size_t> worker_index;
  trainer_actor trainer;
  uint64_t trainer_heard_ns = 0; // its last credit, ack or `saved`
  std::deque<work_item> pending; // pulled from the source, not yet leased
  bool fetching = false;
  bool source_done = false;
  std::unordered_map<uint64_t, lease> leases; // by batch id
  std::deque<uint64_t> recent_ns; // lease-to-ack times of the last batches
  router_summary summary;
  // pipeline.placement: which leases go to the trainer's GPU unblurred,
  // judged once per placement_period from the acks and worker reports.
  offload_controller offload;
  bool trainer_gpu = false;   // its hello said it has a CUDA blur stage
  offload_signals period;     // acks summed since the period began
  uint64_t period_started_ns = 0;
  std::vector<uint64_t> busy_total;     // per worker: last busy_total_ns
  std::vector<uint64_t> busy_at_period; // per worker: at the period's start
  clock_type::time_point started = clock_type::now(); // the table's clock
  clock_type::time_point run_started;
  caf::typed_response_promise<router_summary> run_promise;
  bool run_requested = false;
  caf::error failure;
  static constexpr const char* name = "stoker.router";

  uint64_t now_ns() const {
    return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(clock_type::now()
                                                           - started)
        .count());
  }
};

using router_ptr = router_actor::stateful_pointer<router_state>;

/// Leases what the window allows (router_actor.cpp).
void dispatch(router_ptr self);

/// Answers `run` if the run is over (router_actor.cpp).
void maybe_finish(router_ptr self);

/// The console's `router` view of the state now (router_console.cpp).
router_status status_of(router_ptr self);

/// The console's `set router.policy|router.window` (router_console.cpp).
caf::result<std::string> set_option(router_ptr self, const std::string& key,
                                    const std::string& value);

/// The console's drain/undrain NODE, pause, resume, shutdown, trace-start
/// FILE, trace-stop (router_console.cpp).
caf::result<std::string> control(router_ptr self, const std::string& what,
                                 const std::string& arg);

/// Writes the trace being recorded, if any, and stops recording; the
/// answer says how many spans went where (router_console.cpp).
caf::expected<std::string> finish_trace(router_ptr self);

} // namespace stoker::detail
