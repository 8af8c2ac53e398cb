#include "core/run_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <optional>
#include <sstream>

#include <fcntl.h>
#include <unistd.h>

#include "stoker/errors.hpp"
#include "core/atomic_file.hpp"
#include "core/json_text.hpp"

namespace stoker {

namespace {

double per_batch(uint64_t faults, uint64_t batches) {
  return batches > 0 ? static_cast<double>(faults)
                         / static_cast<double>(batches)
                     : std::nan("");
}

// A group's ledgers as one: a sample counts once however many ranks had
// it; the surplus is duplicates. Returns the unique samples.
uint64_t merged_unique(const std::vector<trainer_stats>& trainers,
                       uint64_t* cross_duplicates) {
  std::vector<uint8_t> all;
  uint64_t sum = 0;
  for (auto& t : trainers) {
    sum += t.unique_samples;
    if (all.size() < t.ledger_bits.size())
      all.resize(t.ledger_bits.size(), 0);
    for (size_t i = 0; i < t.ledger_bits.size(); ++i)
      all[i] |= t.ledger_bits[i];
  }
  uint64_t unique = 0;
  for (auto byte : all)
    unique += static_cast<uint64_t>(__builtin_popcount(byte));
  *cross_duplicates = sum - std::min(sum, unique);
  return unique;
}

} // namespace

run_report make_report(const router_summary& router,
                       const trainer_stats& trainer,
                       const std::vector<worker_stats>& workers) {
  return make_report(router, std::vector<trainer_stats>{trainer}, workers);
}

run_report make_report(const router_summary& router,
                       std::vector<trainer_stats> trainers,
                       const std::vector<worker_stats>& answered) {
  run_report r;
  // Every worker: those that answered, and the lost ones as the router
  // last saw them (a lost worker's batches and decodes still happened).
  std::vector<worker_stats> workers = answered;
  std::vector<bool> lost(workers.size(), false);
  for (auto& seen : router.lost_worker_stats) {
    bool answered_too = std::any_of(workers.begin(), workers.end(),
                                    [&](auto& w) {
                                      return w.name == seen.name;
                                    });
    if (!answered_too) {
      workers.push_back(seen);
      lost.push_back(true);
    }
  }
  // The group that ran: one trainer per rank as the router gave them. A
  // trainer that holds no rank (its node started more than the group has)
  // is left out; of a rank's trainers (one restarted) the one furthest on
  // counts. A rank whose trainer did not answer (hung in a collective,
  // gone) is named from the router's view.
  auto world = std::max<uint32_t>(1, router.plan.world);
  std::vector<std::optional<trainer_stats>> by_rank(world);
  for (auto& t : trainers) {
    if (!t.grouped || t.rank >= world)
      continue;
    auto& slot = by_rank[t.rank];
    if (!slot || slot->steps < t.steps)
      slot = std::move(t);
  }
  trainers.clear();
  for (auto& t : by_rank)
    if (t)
      trainers.push_back(*t);
  trainer_stats absent; // rank 0 did not answer
  auto& lead = by_rank.front() ? trainers.front() : absent;
  trainer_stats sum;
  for (auto& t : trainers) {
    sum.samples_delivered += t.samples_delivered;
    sum.unique_samples += t.unique_samples;
    sum.duplicates += t.duplicates;
    sum.resumed_samples += t.resumed_samples;
    sum.dropped_copies += t.dropped_copies;
    sum.copy_mismatches += t.copy_mismatches;
    sum.gpu_blurred_batches += t.gpu_blurred_batches;
    sum.steady_faults += t.steady_faults;
    sum.steady_batches += t.steady_batches;
    sum.rejected_batches += t.rejected_batches;
    sum.skipped_samples += t.skipped_samples;
    sum.skipped_unique += t.skipped_unique;
    for (auto& x : t.skipped_sources) {
      auto same = std::find_if(sum.skipped_sources.begin(),
                               sum.skipped_sources.end(),
                               [&](auto& y) { return y.source == x.source; });
      if (same == sum.skipped_sources.end())
        sum.skipped_sources.push_back(x);
      else
        same->samples += x.samples;
    }
    sum.padded_samples += t.padded_samples;
    if (sum.first_error.empty())
      sum.first_error = t.first_error;
    for (auto& x : t.skipped_examples)
      if (sum.skipped_examples.size() < 10)
        sum.skipped_examples.push_back(x);
  }
  r.world = world;
  uint64_t unique = sum.unique_samples;
  uint64_t cross = 0;
  if (trainers.size() > 1)
    unique = merged_unique(trainers, &cross);
  r.samples_delivered = sum.samples_delivered;
  r.duplicates = sum.duplicates + cross;
  r.missing = router.samples_expected > unique
                ? router.samples_expected - unique
                : 0;
  // Global steps (every rank takes each one): rank 0's, or what the
  // router saw it take.
  r.steps = by_rank.front()       ? lead.steps
            : router.ranks.empty() ? 0
                                   : router.ranks.front().batches_acked;
  r.wall_s = static_cast<double>(router.wall_ns) * 1e-9;
  r.time_to_first_batch_s = static_cast<double>(router.first_ack_ns) * 1e-9;
  if (router.first_ack_ns > 0 && router.wall_ns > router.first_ack_ns
      && router.samples_acked > router.first_ack_samples)
    r.steady_throughput_sps =
      static_cast<double>(router.samples_acked - router.first_ack_samples)
      / (static_cast<double>(router.wall_ns - router.first_ack_ns) * 1e-9);
  // What this run delivered: a resumed run's counters include the samples
  // trained before the restart, its wall time does not.
  auto this_run = sum.samples_delivered
                  - std::min(sum.samples_delivered, sum.resumed_samples);
  r.samples_this_run = this_run;
  r.samples_before_resume = sum.samples_delivered - this_run;
  r.throughput_sps
    = r.wall_s > 0 ? static_cast<double>(this_run) / r.wall_s : 0;
  double idle_sum = 0.0;
  for (uint32_t rank = 0; rank < world; ++rank) {
    if (!by_rank[rank]) {
      trainer_entry e;
      e.rank = rank;
      e.answered = false;
      if (rank < router.ranks.size()) {
        e.node = router.ranks[rank].node;
        e.steps = router.ranks[rank].batches_acked;
      }
      r.trainers.push_back(std::move(e));
      continue;
    }
    auto& t = *by_rank[rank];
    trainer_entry e;
    e.rank = t.rank;
    e.node = t.node;
    e.device = t.device;
    e.steps = t.steps;
    e.samples = t.unique_samples - std::min(t.unique_samples,
                                            t.skipped_unique);
    double busy = static_cast<double>(t.step_ns);
    double wait = static_cast<double>(t.wait_ns);
    double coll = static_cast<double>(t.collective_ns);
    double total = busy + wait + coll;
    e.idle_fraction = total > 0 ? wait / total : 0;
    e.collective_fraction = total > 0 ? coll / total : 0;
    // The times are this run's: so are the steps they are divided by (a
    // resumed rank's count includes the steps before the restart).
    auto run_steps = static_cast<double>(
      t.steps - std::min(t.steps, t.resumed_steps));
    auto per_step = [&](double ns) {
      return run_steps > 0 ? ns * 1e-6 / run_steps : 0;
    };
    e.data_wait_ms_per_step = per_step(wait);
    e.compute_ms_per_step = per_step(busy);
    e.collective_ms_per_step = per_step(coll);
    idle_sum += e.idle_fraction;
    r.accelerator_idle_max = std::max(r.accelerator_idle_max,
                                      e.idle_fraction);
    r.exposed_data_wait_ms_per_step = std::max(
      r.exposed_data_wait_ms_per_step, e.data_wait_ms_per_step);
    r.trainers.push_back(std::move(e));
  }
  r.accelerator_idle_fraction
    = trainers.empty() ? 0.0
                       : idle_sum / static_cast<double>(trainers.size());
  std::vector<const trainer_entry*> measured_ranks;
  for (auto& e : r.trainers)
    if (e.answered)
      measured_ranks.push_back(&e);
  if (measured_ranks.size() > 1) {
    std::vector<double> compute;
    for (auto* e : measured_ranks)
      compute.push_back(e->compute_ms_per_step);
    auto slowest = *std::max_element(measured_ranks.begin(),
                                     measured_ranks.end(),
                                     [](auto* a, auto* b) {
                                       return a->compute_ms_per_step
                                              < b->compute_ms_per_step;
                                     });
    std::nth_element(compute.begin(), compute.begin() + compute.size() / 2,
                     compute.end());
    std::ostringstream text;
    text.precision(3);
    text << "rank " << slowest->rank << " on node '" << slowest->node
         << "': " << slowest->compute_ms_per_step
         << " ms compute per step (the ranks' median "
         << compute[compute.size() / 2] << " ms)";
    r.slowest_trainer = text.str();
  }
  r.samples_dropped = router.plan.samples_dropped;
  r.samples_padded = sum.padded_samples;
  r.trainer_device = lead.device;
  r.trainer_simulated = lead.simulated;
  r.policy = router.policy;
  r.batches_leased = router.batches_leased;
  r.batches_acked = router.batches_acked;
  r.batches_hedged = router.batches_hedged;
  r.batches_released = router.batches_released;
  r.batches_resumed = router.batches_resumed;
  r.stopped_by = router.stopped_by;
  r.lost_workers = router.lost_workers;
  r.dropped_copies = sum.dropped_copies;
  r.copy_mismatches = sum.copy_mismatches;
  r.window = router.window;
  r.window_max = router.window_max;
  r.window_changes = router.window_changes;
  r.window_last_change = router.window_last_change;
  r.series = router.series;
  r.lease_to_ack_ms_p50 = router.lease_to_ack_ms_p50;
  r.lease_to_ack_ms_p99 = router.lease_to_ack_ms_p99;
  r.placement = router.placement;
  r.gpu_share = router.gpu_share;
  r.batches_gpu_blur = router.batches_gpu_blur;
  r.gpu_blurred_batches = sum.gpu_blurred_batches;
  r.trainer_minor_faults_per_batch
    = per_batch(sum.steady_faults, sum.steady_batches);
  r.placement_changes = router.placement_changes;
  r.placement_last_change = router.placement_last_change;
  r.placement_reason = router.placement_reason;
  r.status = !router.stopped_by.empty() ? "stopped"
             : router.finished           ? "ok"
                                         : "running";
  r.rejected_batches = sum.rejected_batches;
  r.first_error = sum.first_error;
  r.skipped_files = sum.skipped_samples;
  r.skipped_file_examples = sum.skipped_examples;
  r.skipped_sources = sum.skipped_sources;
  // Not measured (< 0 in the trainer's counters) is NaN here: null in JSON.
  auto measured = [](std::vector<double> xs) {
    for (auto& x : xs)
      x = x < 0 ? std::nan("") : x;
    return xs;
  };
  r.epoch_train_loss = measured(lead.epoch_train_loss);
  r.epoch_test_accuracy = measured(lead.epoch_test_accuracy);
  auto last_or_nan = [](const std::vector<double>& xs) {
    return xs.empty() ? std::nan("") : xs.back();
  };
  r.train_loss = last_or_nan(r.epoch_train_loss);
  r.test_accuracy = last_or_nan(r.epoch_test_accuracy);
  uint64_t decode_ns = 0;
  uint64_t decoded_pixels = 0;
  uint64_t file_pixels = 0;
  for (auto& w : workers) {
    r.decoded_files += w.decoded_files;
    decode_ns += w.decode_ns;
    decoded_pixels += w.decoded_pixels;
    file_pixels += w.file_pixels;
  }
  r.decode_ms_per_file = r.decoded_files == 0
                           ? std::nan("")
                           : static_cast<double>(decode_ns) * 1e-6
                               / static_cast<double>(r.decoded_files);
  std::vector<stage_time> stages;
  for (auto& w : workers)
    for (auto& t : w.stages)
      add_stage_time(stages, t.stage, t.samples, t.ns);
  for (auto& t : stages)
    if (t.samples > 0)
      r.stages.push_back(stage_entry{
        t.stage, t.samples,
        static_cast<double>(t.ns) * 1e-6 / static_cast<double>(t.samples)});
  r.decoded_pixel_share = file_pixels == 0
                            ? std::nan("")
                            : static_cast<double>(decoded_pixels)
                                / static_cast<double>(file_pixels);
  for (size_t i = 0; i < workers.size(); ++i) {
    auto& w = workers[i];
    worker_entry e;
    e.lost = lost[i];
    e.name = w.name;
    e.batches = w.batches;
    e.samples = w.samples;
    if (w.alive_ns > 0)
      e.busy_fraction = static_cast<double>(w.busy_ns)
                        / static_cast<double>(w.alive_ns);
    e.minor_faults_per_batch = per_batch(w.steady_faults, w.steady_batches);
    r.workers.push_back(std::move(e));
  }
  return r;
}

run_report make_failed_report(const router_summary& so_far,
                              const std::vector<trainer_stats>& trainers,
                              const std::vector<worker_stats>& workers,
                              const std::string& why) {
  auto r = make_report(so_far, trainers, workers);
  bool none_answered = std::none_of(r.trainers.begin(), r.trainers.end(),
                                    [](auto& t) { return t.answered; });
  if (none_answered) {
    r.samples_delivered = so_far.samples_acked;
    r.samples_this_run = so_far.samples_acked;
    r.missing = so_far.samples_expected
                - std::min(so_far.samples_expected, so_far.samples_acked);
    auto wall = r.wall_s;
    r.throughput_sps = wall > 0 ? static_cast<double>(so_far.samples_acked)
                                    / wall
                                : 0;
  }
  r.status = "failed";
  r.first_error = why;
  return r;
}

std::string to_json(const run_report& r) {
  std::ostringstream out;
  out << "{\n"
      << "  \"status\": " << json_quoted(r.status) << ",\n"
      << "  \"samples_delivered\": " << r.samples_delivered << ",\n"
      << "  \"samples_this_run\": " << r.samples_this_run << ",\n"
      << "  \"samples_before_resume\": " << r.samples_before_resume << ",\n"
      << "  \"duplicates\": " << r.duplicates << ",\n"
      << "  \"missing\": " << r.missing << ",\n"
      << "  \"steps\": " << r.steps << ",\n"
      << "  \"wall_s\": " << json_number(r.wall_s) << ",\n"
      << "  \"throughput_sps\": " << json_number(r.throughput_sps) << ",\n"
      << "  \"time_to_first_batch_s\": " << json_number(r.time_to_first_batch_s)
      << ",\n"
      << "  \"steady_throughput_sps\": " << json_number(r.steady_throughput_sps)
      << ",\n"
      << "  \"accelerator_idle_fraction\": "
      << json_number(r.accelerator_idle_fraction) << ",\n"
      << "  \"accelerator_idle_max\": " << json_number(r.accelerator_idle_max)
      << ",\n"
      << "  \"exposed_data_wait_ms_per_step\": "
      << json_number(r.exposed_data_wait_ms_per_step) << ",\n"
      << "  \"world\": " << r.world << ",\n"
      << "  \"samples_dropped\": " << r.samples_dropped << ",\n"
      << "  \"samples_padded\": " << r.samples_padded << ",\n"
      << "  \"slowest_trainer\": " << json_quoted(r.slowest_trainer) << ",\n"
      << "  \"trainer_device\": " << json_quoted(r.trainer_device) << ",\n"
      << "  \"trainer_simulated\": " << (r.trainer_simulated ? "true" : "false")
      << ",\n"
      << "  \"policy\": " << json_quoted(r.policy) << ",\n"
      << "  \"batches_leased\": " << r.batches_leased << ",\n"
      << "  \"batches_acked\": " << r.batches_acked << ",\n"
      << "  \"batches_hedged\": " << r.batches_hedged << ",\n"
      << "  \"batches_released\": " << r.batches_released << ",\n"
      << "  \"batches_resumed\": " << r.batches_resumed << ",\n"
      << "  \"stopped_by\": " << json_quoted(r.stopped_by) << ",\n"
      << "  \"lost_workers\": [";
  for (size_t i = 0; i < r.lost_workers.size(); ++i)
    out << (i == 0 ? "" : ", ") << json_quoted(r.lost_workers[i]);
  out << "],\n"
      << "  \"dropped_copies\": " << r.dropped_copies << ",\n"
      << "  \"copy_mismatches\": " << r.copy_mismatches << ",\n"
      << "  \"window\": " << r.window << ",\n"
      << "  \"window_max\": " << r.window_max << ",\n"
      << "  \"window_changes\": " << r.window_changes << ",\n"
      << "  \"window_last_change\": " << json_quoted(r.window_last_change) << ",\n"
      << "  \"lease_to_ack_ms_p50\": " << json_number(r.lease_to_ack_ms_p50) << ",\n"
      << "  \"lease_to_ack_ms_p99\": " << json_number(r.lease_to_ack_ms_p99) << ",\n"
      << "  \"trainer_utilisation\": " << json_number(r.trainer_utilisation) << ",\n"
      << "  \"cost_usd\": " << json_number(r.cost_usd) << ",\n"
      << "  \"cost_per_1000_steps_usd\": "
      << json_number(r.cost_per_1000_steps_usd) << ",\n"
      << "  \"cost_per_1000_samples_usd\": "
      << json_number(r.cost_per_1000_samples_usd) << ",\n"
      << "  \"unpriced_hosts\": [";
  for (size_t i = 0; i < r.unpriced_hosts.size(); ++i)
    out << (i == 0 ? "" : ", ") << json_quoted(r.unpriced_hosts[i]);
  out << "],\n"
      << "  \"hosts\": [";
  for (size_t i = 0; i < r.hosts.size(); ++i) {
    auto& h = r.hosts[i];
    out << (i == 0 ? "\n" : ",\n") << "    {\"host\": " << json_quoted(h.host)
        << ", \"cpu_utilisation\": " << json_number(h.cpu_utilisation)
        << ", \"price_per_hour\": " << json_number(h.price_per_hour)
        << ", \"nodes\": [";
    for (size_t k = 0; k < h.nodes.size(); ++k)
      out << (k == 0 ? "" : ", ") << json_quoted(h.nodes[k]);
    out << "]}";
  }
  out << (r.hosts.empty() ? "],\n" : "\n  ],\n")
      << "  \"placement\": " << json_quoted(r.placement) << ",\n"
      << "  \"gpu_share\": " << json_number(r.gpu_share) << ",\n"
      << "  \"batches_gpu_blur\": " << r.batches_gpu_blur << ",\n"
      << "  \"gpu_blurred_batches\": " << r.gpu_blurred_batches << ",\n"
      << "  \"trainer_minor_faults_per_batch\": "
      << json_number(r.trainer_minor_faults_per_batch) << ",\n"
      << "  \"placement_changes\": " << r.placement_changes << ",\n"
      << "  \"placement_last_change\": " << json_quoted(r.placement_last_change)
      << ",\n"
      << "  \"placement_reason\": " << json_quoted(r.placement_reason) << ",\n"
      << "  \"rejected_batches\": " << r.rejected_batches << ",\n"
      << "  \"first_error\": " << json_quoted(r.first_error) << ",\n"
      << "  \"skipped_files\": " << r.skipped_files << ",\n"
      << "  \"skipped_file_examples\": [";
  for (size_t i = 0; i < r.skipped_file_examples.size(); ++i)
    out << (i == 0 ? "" : ", ") << json_quoted(r.skipped_file_examples[i]);
  out << "],\n"
      << "  \"skipped_sources\": [";
  for (size_t i = 0; i < r.skipped_sources.size(); ++i) {
    auto& s = r.skipped_sources[i];
    out << (i == 0 ? "\n" : ",\n") << "    {\"source\": "
        << json_quoted(s.source) << ", \"samples\": " << s.samples
        << ", \"reason\": " << json_quoted(s.reason) << "}";
  }
  out << (r.skipped_sources.empty() ? "],\n" : "\n  ],\n")
      << "  \"data_damage\": [";
  for (size_t i = 0; i < r.data_damage.size(); ++i)
    out << (i == 0 ? "" : ", ") << json_quoted(r.data_damage[i]);
  out << "],\n"
      << "  \"decoded_files\": " << r.decoded_files << ",\n"
      << "  \"decode_ms_per_file\": " << json_number(r.decode_ms_per_file)
      << ",\n"
      << "  \"decoded_pixel_share\": " << json_number(r.decoded_pixel_share)
      << ",\n";
  out << "  \"stages\": [";
  for (size_t i = 0; i < r.stages.size(); ++i) {
    auto& t = r.stages[i];
    out << (i == 0 ? "\n" : ",\n") << "    {\"stage\": "
        << json_quoted(t.stage) << ", \"samples\": " << t.samples
        << ", \"ms_per_sample\": " << json_number(t.ms_per_sample) << "}";
  }
  out << (r.stages.empty() ? "],\n" : "\n  ],\n")
      << "  \"train_loss\": " << json_number(r.train_loss) << ",\n"
      << "  \"test_accuracy\": " << json_number(r.test_accuracy) << ",\n";
  for (auto [key, values] : {std::pair{"epoch_train_loss", &r.epoch_train_loss},
                             std::pair{"epoch_test_accuracy",
                                       &r.epoch_test_accuracy}}) {
    out << "  \"" << key << "\": [";
    for (size_t i = 0; i < values->size(); ++i)
      out << (i == 0 ? "" : ", ") << json_number((*values)[i]);
    out << "],\n";
  }
  out << "  \"workers\": [";
  for (size_t i = 0; i < r.workers.size(); ++i) {
    auto& w = r.workers[i];
    out << (i == 0 ? "\n" : ",\n") << "    {\"name\": " << json_quoted(w.name)
        << ", \"batches\": " << w.batches << ", \"samples\": " << w.samples
        << ", \"busy_fraction\": " << json_number(w.busy_fraction)
        << ", \"minor_faults_per_batch\": "
        << json_number(w.minor_faults_per_batch)
        << ", \"lost\": " << (w.lost ? "true" : "false") << "}";
  }
  out << (r.workers.empty() ? "],\n" : "\n  ],\n");
  out << "  \"trainers\": [";
  for (size_t i = 0; i < r.trainers.size(); ++i) {
    auto& t = r.trainers[i];
    out << (i == 0 ? "\n" : ",\n") << "    {\"rank\": " << t.rank
        << ", \"node\": " << json_quoted(t.node) << ", \"device\": "
        << json_quoted(t.device) << ", \"steps\": " << t.steps
        << ", \"samples\": " << t.samples << ", \"idle_fraction\": "
        << json_number(t.idle_fraction) << ", \"collective_fraction\": "
        << json_number(t.collective_fraction) << ", \"data_wait_ms_per_step\": "
        << json_number(t.data_wait_ms_per_step) << ", \"compute_ms_per_step\": "
        << json_number(t.compute_ms_per_step)
        << ", \"collective_ms_per_step\": "
        << json_number(t.collective_ms_per_step)
        << ", \"answered\": " << (t.answered ? "true" : "false") << "}";
  }
  out << (r.trainers.empty() ? "],\n" : "\n  ],\n");
  // One point a line: t, samples/s, idle, window, busy workers.
  out << "  \"series\": [";
  for (size_t i = 0; i < r.series.size(); ++i) {
    auto& p = r.series[i];
    out << (i == 0 ? "\n" : ",\n") << "    {\"t\": " << json_number(p.t)
        << ", \"samples_per_s\": " << json_number(p.samples_per_s)
        << ", \"idle\": " << json_number(p.idle) << ", \"window\": " << p.window
        << ", \"busy_workers\": " << json_number(p.busy_workers) << "}";
  }
  out << (r.series.empty() ? "]\n" : "\n  ]\n") << "}\n";
  return out.str();
}

void account_hosts(run_report& report,
                   const std::vector<trainer_stats>& trainers,
                   const std::vector<worker_stats>& workers,
                   const std::vector<node_usage>& extra) {
  // The latest figure of each node process (its workers all carry it).
  std::map<std::string, node_usage> by_node;
  auto take = [&](const node_usage& u) {
    if (u.node.empty() && u.host.empty())
      return; // not measured (a stats message from an older node)
    auto& kept = by_node[u.node];
    if (u.wall_s >= kept.wall_s)
      kept = u;
  };
  for (auto& t : trainers)
    take(t.usage);
  for (auto& w : workers)
    take(w.usage);
  for (auto& u : extra)
    take(u);
  std::map<std::string, host_entry> hosts;
  std::map<std::string, std::pair<double, double>> capacity; // cpu, wall x cores
  for (auto& [name, u] : by_node) {
    auto& h = hosts[u.host];
    h.host = u.host;
    h.nodes.push_back(name);
    h.price_per_hour = std::max(h.price_per_hour, u.price_per_hour);
    auto& c = capacity[u.host];
    c.first += u.cpu_s;
    c.second = std::max(c.second, u.wall_s * std::max(1u, u.cores));
  }
  report.hosts.clear();
  report.unpriced_hosts.clear();
  double per_hour = 0.0;
  for (auto& [name, h] : hosts) {
    auto& c = capacity[name];
    h.cpu_utilisation = c.second > 0.0 ? c.first / c.second : 0.0;
    per_hour += h.price_per_hour;
    if (h.price_per_hour <= 0.0)
      report.unpriced_hosts.push_back(name);
    report.hosts.push_back(std::move(h));
  }
  report.trainer_utilisation = 1.0 - report.accelerator_idle_fraction;
  auto nan = std::numeric_limits<double>::quiet_NaN();
  bool priced = per_hour > 0.0;
  report.cost_usd = priced ? per_hour * report.wall_s / 3600.0 : nan;
  report.cost_per_1000_steps_usd =
    priced && report.steps > 0
      ? report.cost_usd * 1000.0 / static_cast<double>(report.steps)
      : nan;
  report.cost_per_1000_samples_usd =
    priced && report.samples_delivered > 0
      ? report.cost_usd * 1000.0
          / static_cast<double>(report.samples_delivered)
      : nan;
}

caf::error write_report(const run_report& report, const std::string& path) {
  if (auto err = write_file_atomically(path, to_json(report)))
    return make_error(errc::io_failure,
                      "--report=" + path + ": " + describe(err));
  return caf::none;
}

} // namespace stoker
