#include "core/run_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include <fcntl.h>
#include <unistd.h>

#include "stoker/errors.hpp"

namespace stoker {

namespace {

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string number(double x) {
  if (!std::isfinite(x))
    return "null";
  std::ostringstream out;
  out.precision(6);
  out << x;
  return out.str();
}

double per_batch(uint64_t faults, uint64_t batches) {
  return batches > 0 ? static_cast<double>(faults)
                         / static_cast<double>(batches)
                     : std::nan("");
}

} // namespace

run_report make_report(const router_summary& router,
                       const trainer_stats& trainer,
                       const std::vector<worker_stats>& workers) {
  run_report r;
  r.samples_delivered = trainer.samples_delivered;
  r.duplicates = trainer.duplicates;
  r.missing = router.samples_expected > trainer.unique_samples
                ? router.samples_expected - trainer.unique_samples
                : 0;
  r.steps = trainer.steps;
  r.wall_s = static_cast<double>(router.wall_ns) * 1e-9;
  // What this run delivered: a resumed run's counters include the samples
  // trained before the restart, its wall time does not.
  auto this_run = trainer.samples_delivered
                  - std::min(trainer.samples_delivered,
                             trainer.resumed_samples);
  r.throughput_sps
    = r.wall_s > 0 ? static_cast<double>(this_run) / r.wall_s : 0;
  double busy = static_cast<double>(trainer.step_ns);
  double wait = static_cast<double>(trainer.wait_ns);
  r.accelerator_idle_fraction = busy + wait > 0 ? wait / (busy + wait) : 0;
  r.trainer_device = trainer.device;
  r.trainer_simulated = trainer.simulated;
  r.policy = router.policy;
  r.batches_leased = router.batches_leased;
  r.batches_acked = router.batches_acked;
  r.batches_hedged = router.batches_hedged;
  r.batches_released = router.batches_released;
  r.batches_resumed = router.batches_resumed;
  r.stopped_by = router.stopped_by;
  r.lost_workers = router.lost_workers;
  r.dropped_copies = trainer.dropped_copies;
  r.window = router.window;
  r.window_max = router.window_max;
  r.window_changes = router.window_changes;
  r.window_last_change = router.window_last_change;
  r.placement = router.placement;
  r.gpu_share = router.gpu_share;
  r.batches_gpu_blur = router.batches_gpu_blur;
  r.gpu_blurred_batches = trainer.gpu_blurred_batches;
  r.trainer_minor_faults_per_batch
    = per_batch(trainer.steady_faults, trainer.steady_batches);
  r.placement_changes = router.placement_changes;
  r.placement_last_change = router.placement_last_change;
  r.placement_reason = router.placement_reason;
  r.status = router.stopped_by.empty() ? "ok" : "stopped";
  r.rejected_batches = trainer.rejected_batches;
  r.first_error = trainer.first_error;
  r.skipped_files = trainer.skipped_samples;
  r.skipped_file_examples = trainer.skipped_examples;
  // Not measured (< 0 in the trainer's counters) is NaN here: null in JSON.
  auto measured = [](std::vector<double> xs) {
    for (auto& x : xs)
      x = x < 0 ? std::nan("") : x;
    return xs;
  };
  r.epoch_train_loss = measured(trainer.epoch_train_loss);
  r.epoch_test_accuracy = measured(trainer.epoch_test_accuracy);
  auto last_or_nan = [](const std::vector<double>& xs) {
    return xs.empty() ? std::nan("") : xs.back();
  };
  r.train_loss = last_or_nan(r.epoch_train_loss);
  r.test_accuracy = last_or_nan(r.epoch_test_accuracy);
  for (auto& w : workers) {
    worker_entry e;
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
                              const trainer_stats* trainer,
                              const std::vector<worker_stats>& workers,
                              const std::string& why) {
  trainer_stats none;
  auto r = make_report(so_far, trainer != nullptr ? *trainer : none, workers);
  if (trainer == nullptr) {
    r.samples_delivered = so_far.samples_acked;
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
      << "  \"status\": " << quoted(r.status) << ",\n"
      << "  \"samples_delivered\": " << r.samples_delivered << ",\n"
      << "  \"duplicates\": " << r.duplicates << ",\n"
      << "  \"missing\": " << r.missing << ",\n"
      << "  \"steps\": " << r.steps << ",\n"
      << "  \"wall_s\": " << number(r.wall_s) << ",\n"
      << "  \"throughput_sps\": " << number(r.throughput_sps) << ",\n"
      << "  \"accelerator_idle_fraction\": "
      << number(r.accelerator_idle_fraction) << ",\n"
      << "  \"trainer_device\": " << quoted(r.trainer_device) << ",\n"
      << "  \"trainer_simulated\": " << (r.trainer_simulated ? "true" : "false")
      << ",\n"
      << "  \"policy\": " << quoted(r.policy) << ",\n"
      << "  \"batches_leased\": " << r.batches_leased << ",\n"
      << "  \"batches_acked\": " << r.batches_acked << ",\n"
      << "  \"batches_hedged\": " << r.batches_hedged << ",\n"
      << "  \"batches_released\": " << r.batches_released << ",\n"
      << "  \"batches_resumed\": " << r.batches_resumed << ",\n"
      << "  \"stopped_by\": " << quoted(r.stopped_by) << ",\n"
      << "  \"lost_workers\": [";
  for (size_t i = 0; i < r.lost_workers.size(); ++i)
    out << (i == 0 ? "" : ", ") << quoted(r.lost_workers[i]);
  out << "],\n"
      << "  \"dropped_copies\": " << r.dropped_copies << ",\n"
      << "  \"window\": " << r.window << ",\n"
      << "  \"window_max\": " << r.window_max << ",\n"
      << "  \"window_changes\": " << r.window_changes << ",\n"
      << "  \"window_last_change\": " << quoted(r.window_last_change) << ",\n"
      << "  \"placement\": " << quoted(r.placement) << ",\n"
      << "  \"gpu_share\": " << number(r.gpu_share) << ",\n"
      << "  \"batches_gpu_blur\": " << r.batches_gpu_blur << ",\n"
      << "  \"gpu_blurred_batches\": " << r.gpu_blurred_batches << ",\n"
      << "  \"trainer_minor_faults_per_batch\": "
      << number(r.trainer_minor_faults_per_batch) << ",\n"
      << "  \"placement_changes\": " << r.placement_changes << ",\n"
      << "  \"placement_last_change\": " << quoted(r.placement_last_change)
      << ",\n"
      << "  \"placement_reason\": " << quoted(r.placement_reason) << ",\n"
      << "  \"rejected_batches\": " << r.rejected_batches << ",\n"
      << "  \"first_error\": " << quoted(r.first_error) << ",\n"
      << "  \"skipped_files\": " << r.skipped_files << ",\n"
      << "  \"skipped_file_examples\": [";
  for (size_t i = 0; i < r.skipped_file_examples.size(); ++i)
    out << (i == 0 ? "" : ", ") << quoted(r.skipped_file_examples[i]);
  out << "],\n"
      << "  \"train_loss\": " << number(r.train_loss) << ",\n"
      << "  \"test_accuracy\": " << number(r.test_accuracy) << ",\n";
  for (auto [key, values] : {std::pair{"epoch_train_loss", &r.epoch_train_loss},
                             std::pair{"epoch_test_accuracy",
                                       &r.epoch_test_accuracy}}) {
    out << "  \"" << key << "\": [";
    for (size_t i = 0; i < values->size(); ++i)
      out << (i == 0 ? "" : ", ") << number((*values)[i]);
    out << "],\n";
  }
  out << "  \"workers\": [";
  for (size_t i = 0; i < r.workers.size(); ++i) {
    auto& w = r.workers[i];
    out << (i == 0 ? "\n" : ",\n") << "    {\"name\": " << quoted(w.name)
        << ", \"batches\": " << w.batches << ", \"samples\": " << w.samples
        << ", \"busy_fraction\": " << number(w.busy_fraction)
        << ", \"minor_faults_per_batch\": "
        << number(w.minor_faults_per_batch) << "}";
  }
  out << (r.workers.empty() ? "]\n" : "\n  ]\n") << "}\n";
  return out.str();
}

caf::error write_report(const run_report& report, const std::string& path) {
  auto fail = [&](const std::string& what) {
    return make_error(errc::io_failure,
                      "--report=" + path + ": " + what + " failed");
  };
  auto tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0)
    return fail("creating " + tmp);
  auto text = to_json(report);
  size_t written = 0;
  while (written < text.size()) {
    auto n = ::write(fd, text.data() + written, text.size() - written);
    if (n <= 0) {
      ::close(fd);
      return fail("writing " + tmp);
    }
    written += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0)
    return fail("syncing " + tmp);
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    return fail("renaming " + tmp);
  return caf::none;
}

} // namespace stoker
