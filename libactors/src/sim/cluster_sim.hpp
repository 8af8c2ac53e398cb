#pragma once

// A discrete-event simulation of a Stoker cluster that drives the router's
// own plain classes (routing_table, inflight_window, lease_book) and the
// trainer's delivery_ledger, with workers, trainers and links modelled, so
// a cluster larger than any machine at hand can be tried before it is
// built (tools/simulate-cluster, docs/scaling.md).

#include <cstdint>
#include <string>
#include <vector>

#include "stoker/options.hpp"

namespace stoker {

/// One simulated worker: a single thread making one item at a time.
struct sim_worker {
  double rate_sps = 500.0; ///< samples/s when not straggling
  std::string host;        ///< its machine (locality, local-only)
};

/// What to simulate. Times in the units their names say; every random
/// draw comes from `seed` (the same scenario and seed give the same
/// figures on every machine).
struct sim_scenario {
  routing_policy policy = routing_policy::least_loaded;
  /// A DistributedSampler-like split instead of the router's choice:
  /// batch b goes to worker b mod W, each trainer steps on its batches in
  /// order (a slow worker's batch blocks the ones behind it), each worker
  /// has `static_prefetch` batches in flight, and a lost worker's batches
  /// are never made again (the run stalls, as a DataLoader's does).
  bool static_split = false;
  uint32_t static_prefetch = 2;

  /// The workers; empty: `workers` of them, rates drawn log-uniformly from
  /// [worker_rate_sps / speed_spread, worker_rate_sps], `workers_per_host`
  /// to a machine of their own ("cpu-0", "cpu-1", ...).
  std::vector<sim_worker> worker_list;
  uint32_t workers = 16;
  double worker_rate_sps = 500.0;
  double speed_spread = 1.0; ///< fastest / slowest, >= 1
  uint32_t workers_per_host = 8;

  /// Trainers (data-parallel ranks), each on machine "gpu-R"; with more
  /// than one they step together (an all-reduce of `allreduce_ms` after
  /// every rank's step).
  uint32_t trainers = 1;
  double step_ms = 1.0;
  double allreduce_ms = 0.0;

  uint32_t batch_size = 16;
  uint64_t batches = 2000;                     ///< over every rank
  uint64_t batch_bytes = 16ull * 224 * 224 * 3 * 4; ///< one batch on the wire

  /// An item straggles with this probability: its time is multiplied by a
  /// Pareto draw of tail index `straggler_alpha` (>= 1, heavy-tailed;
  /// capped at 1,000).
  double straggler_prob = 0.0;
  double straggler_alpha = 1.5;

  double latency_us = 50.0;    ///< one way, every message and batch
  double bandwidth_gbps = 10.0; ///< into each trainer (gigabits/s), shared
                                ///< by every batch sent to it

  /// Workers killed at times drawn uniformly over the run's expected
  /// length (the router finds out by their silence, as it does for a
  /// hung process).
  uint32_t failures = 0;

  router_spec router;     ///< window, idle target, hedging, heartbeats
  uint32_t prefetch = 4;  ///< the window's floor (trainer.prefetch)
  uint64_t seed = 1;
  /// Stop here even if the run is not done (a stalled static split).
  double max_sim_seconds = 3600.0;
};

/// What a simulated run gave.
struct sim_result {
  bool completed = false;   ///< every batch trained on
  std::string stalled_why;  ///< why not, if not
  double sim_seconds = 0.0; ///< until the last step ended
  uint64_t samples_trained = 0;
  double throughput_sps = 0.0;
  std::vector<double> idle_fraction; ///< per trainer: data wait / (wait + step)
  double idle_mean = 0.0;
  double idle_max = 0.0;
  /// Mean over trainers of step time over the run: below 1 - idle where
  /// ranks wait at the all-reduce for one that waits for data.
  double busy_mean = 0.0;
  double lease_to_ack_p50_ms = 0.0;
  double lease_to_ack_p99_ms = 0.0;
  uint64_t leases = 0;   ///< lease orders sent (first leases and re-leases)
  uint64_t released = 0; ///< re-leased from lost workers
  uint64_t hedged = 0;
  uint64_t copies_dropped = 0; ///< second copies the trainers dropped
  uint64_t missing = 0;        ///< samples never trained (delivery ledger)
  uint64_t duplicates = 0;     ///< samples trained twice (must be 0)
  uint32_t workers_lost = 0;
  uint32_t final_window = 0;   ///< rank 0's window at the end
  uint64_t events = 0;         ///< events the simulator processed
  /// Samples each worker made (copies included), by worker.
  std::vector<uint64_t> worker_samples;
};

/// Runs `scenario` to its end (or max_sim_seconds). Deterministic: no
/// clock is read. A bad scenario (no workers, zero rates, zero batch size)
/// gives an error naming the field.
sim_result simulate_cluster(const sim_scenario& scenario);

/// The scenario's workers as simulated (worker_list, or the generated
/// ones).
std::vector<sim_worker> sim_workers_of(const sim_scenario& scenario);

/// Empty if `scenario` can run, else what is wrong with it, naming the
/// field and the value.
std::string check_scenario(const sim_scenario& scenario);

} // namespace stoker
