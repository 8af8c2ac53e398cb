#pragma once

// stoker layer: core
//
// What a run did: the JSON report --report=PATH writes, and what an
// embedded run (stoker/embed.hpp) ends with.

#include <cstdint>
#include <string>
#include <vector>

#include <caf/error.hpp>

#include "stoker/router_status.hpp"

namespace stoker {

/// One worker's line in the run report.
struct worker_entry {
  std::string name;
  uint64_t batches = 0;
  uint64_t samples = 0;
  double busy_fraction = 0.0; ///< busy time / time alive
  /// Minor page faults per batch after the first few (NaN: too few).
  double minor_faults_per_batch = 0.0;
  /// Lost during the run: its figures are what the head last saw of it
  /// (its reports and finished items), not its own answer.
  bool lost = false;
};

/// One stage of the workers' transform chains in the run report (every
/// worker's stage_time of that name summed): the C++ entries and Python
/// stages side by side.
struct stage_entry {
  std::string stage;
  uint64_t samples = 0;
  double ms_per_sample = 0.0; ///< wall time on a worker thread
};

/// One trainer (a rank of the data-parallel group) in the run report.
struct trainer_entry {
  uint32_t rank = 0;
  std::string node;
  std::string device;
  uint64_t steps = 0;
  uint64_t samples = 0; ///< trained on, each once (its own ledger)
  /// Shares of its time (data wait + step + collective): waiting for
  /// data, and waiting for the other ranks in the collective.
  double idle_fraction = 0.0;
  double collective_fraction = 0.0;
  double data_wait_ms_per_step = 0.0;
  double compute_ms_per_step = 0.0;
  double collective_ms_per_step = 0.0;
  /// It gave its counters; false: a rank that could not answer (hung in a
  /// collective, gone), named from the router's view, steps as the router
  /// saw them acknowledged and nothing else measured.
  bool answered = true;
};

/// One machine of the run: its nodes' CPU use and what it costs.
struct host_entry {
  std::string host;
  std::vector<std::string> nodes; ///< node processes on it
  /// Its nodes' CPU time over (their time alive x the machine's cores):
  /// 1.0 is every core busy for the whole run.
  double cpu_utilisation = 0.0;
  double price_per_hour = 0.0; ///< 0: unknown
};

/// What a run did, as written by --report=PATH. Field names are a stable
/// interface: later features add fields, never rename these.
struct run_report {
  /// How the run ended: "ok" (every item acknowledged), "stopped" (ended
  /// on purpose: stopped_by says how) or "failed" (first_error says why).
  std::string status = "ok";
  /// Samples trained on, duplicates included; skipped ones are not.
  uint64_t samples_delivered = 0;
  /// Of samples_delivered, those of this run and those trained before a
  /// resume (the group's, every rank counted); the rates count this run's.
  uint64_t samples_this_run = 0;
  uint64_t samples_before_resume = 0;
  uint64_t duplicates = 0;
  uint64_t missing = 0; ///< samples of the run never trained on
  uint64_t steps = 0;
  double wall_s = 0.0;
  double throughput_sps = 0.0; ///< samples_this_run / wall_s
  /// Start-up apart: from the run's start to the first acknowledged batch,
  /// and the rate after it (samples after the first batch over the time
  /// after it; 0 with fewer than two batches).
  double time_to_first_batch_s = 0.0;
  double steady_throughput_sps = 0.0;
  /// wait / (wait + step + collective time), the mean over the ranks.
  double accelerator_idle_fraction = 0.0;
  double accelerator_idle_max = 0.0; ///< the same, the worst rank's
  /// The most any rank waited for data per step (Ray Train's "exposed
  /// data loading time").
  double exposed_data_wait_ms_per_step = 0.0;
  uint32_t world = 1; ///< trainers in the data-parallel group
  uint64_t samples_dropped = 0; ///< left out by pipeline.last-batch = drop
  uint64_t samples_padded = 0;  ///< repeats trained on (pad), not counted
  /// Several ranks: the one with the longest compute per step, which the
  /// others wait for at every step ("" for one trainer).
  std::string slowest_trainer;
  std::string trainer_device;
  bool trainer_simulated = false;
  std::string policy;
  uint64_t batches_leased = 0; ///< leases the router handed out
  uint64_t batches_acked = 0;  ///< leases the trainer acknowledged
  uint64_t batches_hedged = 0; ///< stragglers leased a second time
  uint64_t batches_released = 0; ///< re-leased because a worker was lost
  uint64_t batches_resumed = 0;  ///< trained before a restart: skipped
  std::string stopped_by; ///< non-empty: ended early on purpose (how)
  std::vector<std::string> lost_workers; ///< died or went silent
  uint64_t dropped_copies = 0; ///< second copies the trainer dropped
  /// Of those, copies that were not the same bits as the one trained on
  /// (a chain that is not deterministic).
  uint64_t copy_mismatches = 0;
  uint32_t window = 0;         ///< in-flight window at the end, batches
  uint32_t window_max = 0;     ///< its ceiling from router.max-inflight-bytes
  uint32_t window_changes = 0;
  std::string window_last_change; ///< why the window last changed
  std::string placement;          ///< pipeline.placement: cpu, gpu, auto
  double gpu_share = 0.0;         ///< batches leased for GPU blur, at the end
  uint64_t batches_gpu_blur = 0;  ///< leased for the trainer's GPU blur
  uint64_t gpu_blurred_batches = 0; ///< blurred there (the trainer's count)
  /// The trainer thread's minor page faults per batch after the first few
  /// (NaN: too few batches): fresh memory on its data path shows here.
  double trainer_minor_faults_per_batch = 0.0;
  uint32_t placement_changes = 0;
  std::string placement_last_change; ///< why the share last changed
  std::string placement_reason;      ///< why it held at the end
  uint64_t rejected_batches = 0;
  std::string first_error;
  uint64_t skipped_files = 0; ///< unreadable or corrupt, left out
  std::vector<std::string> skipped_file_examples; ///< the first few
  /// Every skipped sample by where it came from (its shard, or its own
  /// file), with the first reason: "ok" means nothing else is undelivered.
  std::vector<skip_source> skipped_sources;
  /// Damage the source's listing found (pipeline.data_damage: a tar shard
  /// that is truncated, byte ranges that could not be read).
  std::vector<std::string> data_damage;
  /// Every worker's decode steps: files decoded, the decoder's time per
  /// file, and the share of the files' pixels it made (below 1 where the
  /// fused start decoded only a crop's rows and columns, at M/8). NaN,
  /// written null: nothing decoded (no files, or the workers' counters
  /// did not come).
  uint64_t decoded_files = 0;
  double decode_ms_per_file = 0.0;
  double decoded_pixel_share = 0.0;
  /// Time per sample in each stage of the chains (empty: no chain ran, as
  /// in the synthetic blur pipeline, or no worker's counters came).
  std::vector<stage_entry> stages;
  /// The last epoch's mean training loss and test accuracy (NaN, written
  /// null: not measured), then every epoch's.
  double train_loss = 0.0;
  double test_accuracy = 0.0;
  std::vector<double> epoch_train_loss;
  std::vector<double> epoch_test_accuracy;
  std::vector<worker_entry> workers;
  std::vector<trainer_entry> trainers; ///< by rank
  double lease_to_ack_ms_p50 = 0; ///< a batch's lease to its ack (router)
  double lease_to_ack_ms_p99 = 0;
  /// The run second by second (tools/ops/plot-run draws it).
  std::vector<series_point> series;
  /// Every machine (node.host) of the run, and what the run cost: each
  /// machine's price for wall_s (NaN, written null: no price known).
  std::vector<host_entry> hosts;
  double trainer_utilisation = 0.0; ///< 1 - accelerator_idle_fraction
  double cost_usd = 0.0;
  double cost_per_1000_steps_usd = 0.0;
  double cost_per_1000_samples_usd = 0.0;
  std::vector<std::string> unpriced_hosts; ///< hosts without a price

  /// Exactly once: nothing missing, duplicated or rejected.
  bool exactly_once() const noexcept {
    return missing == 0 && duplicates == 0 && rejected_batches == 0;
  }
};

/// The report as a JSON object (pretty-printed, one key per line).
std::string to_json(const run_report& report);

/// Writes the JSON report to `path` atomically (temp file, fsync, rename),
/// so a reader never sees half a report.
caf::error write_report(const run_report& report, const std::string& path);

} // namespace stoker
