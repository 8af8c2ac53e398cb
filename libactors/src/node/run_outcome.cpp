#include "node/run_outcome.hpp"

#include <cmath>
#include <iomanip>
#include <iostream>
#include <optional>

#include "stoker/errors.hpp"
#include "core/peak_rss.hpp"
#include "kernels/cuda_devices.hpp"

namespace stoker {

namespace {

// Every worker's counters that arrive within `wait`, asked all at once: a
// worker the router lost (dead, or hung) or one still busy on an item has
// none to give in time; the report names the lost under lost_workers.
std::vector<worker_stats> gather_worker_stats(caf::scoped_actor& self,
                                              const std::vector<worker_actor>&
                                                workers,
                                              std::chrono::milliseconds wait) {
  std::vector<worker_stats> out;
  for (auto& w : workers)
    self->send(w, stats_atom::value);
  bool waiting = true;
  self->receive_while([&] { return waiting && out.size() < workers.size(); })(
    [&](worker_stats& s) { out.push_back(std::move(s)); },
    caf::after(wait) >> [&] { waiting = false; });
  return out;
}

} // namespace

caf::expected<run_report>
collect_report(caf::scoped_actor& self, const router_summary& summary,
               const std::vector<trainer_actor>& trainers,
               const std::vector<worker_actor>& workers,
               const node_usage& own) {
  caf::error failure;
  std::vector<trainer_stats> tstats;
  for (auto& t : trainers)
    self->request(t, caf::infinite, stats_atom::value)
      .receive([&](trainer_stats& s) { tstats.push_back(std::move(s)); },
               [&](caf::error& err) { failure = std::move(err); });
  auto wstats = gather_worker_stats(self, workers, std::chrono::seconds(2));
  if (failure)
    return failure;
  auto report = make_report(summary, tstats, wstats);
  account_hosts(report, tstats, wstats, {own});
  return report;
}

run_report collect_failed_report(caf::scoped_actor& self,
                                 const router_actor& router,
                                 const std::vector<trainer_actor>& trainers,
                                 const std::vector<worker_actor>& workers,
                                 const caf::error& why) {
  constexpr auto wait = std::chrono::milliseconds(500);
  router_summary so_far;
  self->request(router, wait, status_atom::value)
    .receive([&](router_status& st) { so_far = std::move(st.summary); },
             [](caf::error&) {});
  // All asked at once: those stuck in a collective do not hold the others.
  std::vector<trainer_stats> tstats;
  size_t asked = 0;
  for (auto& t : trainers)
    if (t) {
      self->send(t, stats_atom::value);
      ++asked;
    }
  bool waiting = true;
  self->receive_while([&] { return waiting && tstats.size() < asked; })(
    [&](trainer_stats& s) { tstats.push_back(std::move(s)); },
    caf::after(wait) >> [&] { waiting = false; });
  auto wstats = gather_worker_stats(self, workers, wait);
  return make_failed_report(so_far, tstats, wstats, describe(why));
}

namespace {

// The pipeline in one line: the source and the transforms.
std::string pipeline_line(const pipeline_options& p) {
  auto& d = p.data;
  auto& o = d.output;
  std::string shape = std::to_string(o.height) + "x" + std::to_string(o.width)
                      + "x" + std::to_string(o.channels);
  if (p.kind == pipeline_kind::fused_blur)
    return "synthetic " + shape + ", " + std::to_string(p.blur.repeat)
           + "x GaussianBlur(" + std::to_string(p.blur.kernel_size) + ")";
  std::string out = d.source.text
                    + (d.data.empty() ? "" : " " + d.data) + ", "
                    + std::to_string(d.num_classes) + " classes, ";
  for (size_t i = 0; i < d.transforms.size(); ++i)
    out += (i == 0 ? "" : " -> ") + d.transforms[i].text;
  out += " = " + shape;
  if (d.eval)
    out += "; eval on " + std::to_string(d.eval_size)
           + " test samples after each epoch";
  return out;
}

// What was skipped, one line a source (the report lists every one), and
// the damage the listing found.
void print_skips(const run_report& r) {
  constexpr size_t shown = 10;
  if (r.skipped_files > 0)
    std::cout << "  skipped " << r.skipped_files
              << " sample(s) that could not be read or decoded (each epoch's "
                 "counted; neither trained on nor missing):"
              << std::endl;
  for (size_t i = 0; i < r.skipped_sources.size() && i < shown; ++i) {
    auto& s = r.skipped_sources[i];
    std::cout << "    " << s.source << ": " << s.samples << " ("
              << s.reason << ")" << std::endl;
  }
  if (r.skipped_sources.size() > shown)
    std::cout << "    and " << r.skipped_sources.size() - shown
              << " more source(s): the report lists them" << std::endl;
  for (auto& line : r.data_damage)
    std::cout << "  damaged data: " << line << std::endl;
}

} // namespace

void print_banner(const run_config& cfg) {
  auto& p = cfg.pipeline;
  std::cout << "stoker-node: role " << to_string(cfg.node.role) << ", node "
            << cfg.node.name << ", config " << cfg.node.config_source
            << "\n  dataset " << p.source.dataset_size << " samples x "
            << p.source.epochs << " epoch(s), batch " << p.source.batch_size
            << ": " << pipeline_line(p) << "\n  "
            << (cfg.node.role == role_kind::head
                  ? std::string{"workers on the nodes"}
                  : std::to_string(cfg.node.workers) + " CPU worker(s)")
            << ", router " << to_string(p.router.policy) << " (window "
            << p.router.window << "), trainer " << p.trainer.model_entry.text
            << " on " << to_string(cfg.node.trainer.device);
  if (p.router.placement != blur_placement::cpu)
    std::cout << ", blur placement " << to_string(p.router.placement);
  auto cuda = probe_cuda_devices();
  std::cout << "\n  CUDA runtime: " << cuda.count << " device(s)"
            << (cuda.detail.empty() ? "" : ": " + cuda.detail) << std::endl;
  // Damage in the data is said before anything runs, once; the report
  // lists it again, and what it cost in samples each epoch.
  for (auto& line : p.data.damage)
    std::cout << "  damaged data: " << line << std::endl;
}

std::string run_failure_text(const caf::expected<run_report>& report) {
  if (!report)
    return is(report.error(), errc::invalid_config)
             ? std::string{}
             : describe(report.error());
  return report->status == "failed" ? report->first_error : std::string{};
}

int finish_run(const caf::expected<run_report>& report,
               const run_config& cfg) {
  auto failed = run_failure_text(report);
  if (!report) {
    // A setting that cannot work is refused before the run (exit 2, as
    // for a bad config file); anything else failed the run (exit 1).
    if (failed.empty()) {
      std::cerr << "stoker-node: refused: " << describe(report.error())
                << std::endl;
      return 2;
    }
    std::cerr << "stoker-node: run failed: " << failed << std::endl;
    return 1;
  }
  auto& r = *report;
  if (r.status == "failed") {
    std::cerr << "stoker-node: run failed: " << failed << std::endl;
    std::cout << "  so far: " << r.samples_delivered
              << " samples delivered, " << r.missing << " missing"
              << std::endl;
    if (!cfg.node.report_path.empty()) {
      if (auto err = write_report(r, cfg.node.report_path))
        std::cerr << "stoker-node: " << describe(err) << std::endl;
      else
        std::cout << "report written to " << cfg.node.report_path
                  << std::endl;
    }
    return 1;
  }
  // The rate is this run's samples over this run's time; samples trained
  // before a resume are said apart.
  std::cout << std::fixed << std::setprecision(2) << "run: "
            << r.samples_this_run << " samples in " << r.wall_s << " s ("
            << r.throughput_sps << " samples/s)"
            << (r.samples_before_resume > 0
                  ? " after " + std::to_string(r.samples_before_resume)
                      + " trained before the resume"
                  : std::string{})
            << ", " << r.steps << " steps on "
            << r.trainer_device
            << (r.trainer_simulated ? " [simulated accelerator]" : "")
            << ", accelerator idle "
            << 100.0 * r.accelerator_idle_fraction << "%, missing "
            << r.missing << ", duplicates " << r.duplicates << ", rejected "
            << r.rejected_batches << ", skipped " << r.skipped_files
            << std::endl;
  print_skips(r);
  if (r.time_to_first_batch_s > 0.0)
    std::cout << "  first batch after " << r.time_to_first_batch_s
              << " s, then " << r.steady_throughput_sps << " samples/s"
              << std::endl;
  std::cout << "  trainer utilisation " << 100.0 * r.trainer_utilisation
            << "%; CPU utilisation";
  for (auto& h : r.hosts)
    std::cout << (&h == &r.hosts.front() ? " " : ", ") << h.host << " "
              << 100.0 * h.cpu_utilisation << "%";
  std::cout << " (every core counted)";
  if (std::isfinite(r.cost_usd))
    std::cout << "; cost $" << std::setprecision(4) << r.cost_usd << " ($"
              << r.cost_per_1000_steps_usd << " per 1,000 steps, $"
              << r.cost_per_1000_samples_usd << " per 1,000 samples"
              << (r.unpriced_hosts.empty() ? ""
                                           : "; no price for "
                                               + r.unpriced_hosts.front()
                                               + (r.unpriced_hosts.size() > 1
                                                    ? " and others"
                                                    : ""))
              << ")" << std::setprecision(2);
  std::cout << std::endl;
  if (r.world > 1) {
    for (auto& t : r.trainers)
      std::cout << "  trainer rank " << t.rank << " (" << t.node << ", "
                << t.device << "): " << t.steps << " steps, " << t.samples
                << " samples, compute " << t.compute_ms_per_step
                << " ms/step, idle " << 100.0 * t.idle_fraction
                << "%, collective wait " << 100.0 * t.collective_fraction
                << "%" << std::endl;
    std::cout << "  slowest: " << r.slowest_trainer << "; exposed data wait "
              << r.exposed_data_wait_ms_per_step << " ms/step" << std::endl;
  }
  if (r.samples_dropped + r.samples_padded > 0)
    std::cout << "  pipeline.last-batch = "
              << to_string(cfg.pipeline.source.last_batch) << ": " << r.samples_dropped << " sample(s) dropped, "
              << r.samples_padded << " repeated to fill last batches"
              << std::endl;
  for (auto& w : r.workers)
    std::cout << "  " << w.name << ": " << w.batches << " batches, busy "
              << 100.0 * w.busy_fraction << "%"
              << (w.lost ? " (lost; as the head last saw it)" : "")
              << std::endl;
  if (r.decoded_files > 0)
    std::cout << "  decode: " << r.decoded_files << " files, "
              << std::setprecision(3) << r.decode_ms_per_file
              << " ms per file, " << std::setprecision(1)
              << 100.0 * r.decoded_pixel_share
              << "% of their pixels decoded" << std::setprecision(2)
              << std::endl;
  for (auto& name : r.lost_workers)
    std::cout << "  " << name << ": lost during the run" << std::endl;
  if (r.batches_released > 0)
    std::cout << "  " << r.batches_released
              << " batch(es) re-leased from lost workers" << std::endl;
  std::cout << "  router: window " << r.window << " (ceiling " << r.window_max
            << ", " << r.window_changes << " change(s)"
            << (r.window_last_change.empty() ? ""
                                             : "; last: " + r.window_last_change)
            << "), hedged " << r.batches_hedged << ", copies dropped "
            << r.dropped_copies << std::endl;
  std::cout << "  peak RSS " << detail::peak_rss_bytes() / 1000000 << " MB"
            << std::endl;
  if (!cfg.node.report_path.empty()) {
    if (auto err = write_report(r, cfg.node.report_path)) {
      std::cerr << "stoker-node: " << describe(err) << std::endl;
      return 1;
    }
    std::cout << "report written to " << cfg.node.report_path << std::endl;
  }
  if (!r.stopped_by.empty()) {
    // Ended on purpose: what was trained was trained once; the rest was
    // never leased.
    std::cout << "run stopped early (" << r.stopped_by << "): "
              << r.missing << " sample(s) not trained" << std::endl;
    return r.duplicates == 0 ? 0 : 1;
  }
  if (!r.exactly_once()) {
    std::cerr << "stoker-node: delivery was not exactly once"
              << (r.first_error.empty() ? "" : ": " + r.first_error)
              << std::endl;
    return 1;
  }
  return 0;
}

} // namespace stoker
