#include "node/run_outcome.hpp"

#include <cmath>
#include <iomanip>
#include <optional>

#include "stoker/errors.hpp"
#include "core/peak_rss.hpp"
#include "core/system_log.hpp"
#include "kernels/cuda_devices.hpp"

namespace stoker {

namespace {

// How long the report waits for each trainer's counters.
constexpr auto report_wait = std::chrono::seconds(10);

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
  for (size_t rank = 0; rank < trainers.size(); ++rank) {
    auto& t = trainers[rank];
    // A trainer gone by now (a Python trainer whose script ended without
    // close() leaves as soon as its loop is done), or one that cannot
    // answer: named, within a deadline.
    auto node = rank < summary.ranks.size() ? summary.ranks[rank].node
                                            : std::string{};
    auto who = "trainer rank " + std::to_string(rank)
               + (node.empty() ? "" : " on node '" + node + "'");
    self->request(t, report_wait, stats_atom::value)
      .receive([&](trainer_stats& s) { tstats.push_back(std::move(s)); },
               [&](caf::error& err) {
                 if (failure)
                   return;
                 auto gone = err == caf::sec::request_receiver_down;
                 failure = make_error(
                   errc::run_failure,
                   who
                     + (gone ? " exited before the run's report was made "
                               "(a Python trainer leaves that early when "
                               "its script ends without close())"
                             : " did not answer for the run's report within "
                                 + std::to_string(report_wait.count())
                                 + " s (" + describe(err) + ")"));
               });
  }
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
void print_skips(const run_report& r, const log_sink& log) {
  constexpr size_t shown = 10;
  if (r.skipped_files > 0)
    log_stream{log, log_level::warning}
      << "  skipped " << r.skipped_files
      << " sample(s) that could not be read or decoded (each epoch's "
         "counted; neither trained on nor missing):";
  for (size_t i = 0; i < r.skipped_sources.size() && i < shown; ++i) {
    auto& s = r.skipped_sources[i];
    log_stream{log, log_level::warning}
      << "    " << s.source << ": " << s.samples << " (" << s.reason << ")";
  }
  if (r.skipped_sources.size() > shown)
    log_stream{log, log_level::warning}
      << "    and " << r.skipped_sources.size() - shown
      << " more source(s): the report lists them";
  for (auto& line : r.data_damage)
    log.warning("  damaged data: " + line);
}

} // namespace

void print_banner(const run_config& cfg, const log_sink& log) {
  auto& p = cfg.pipeline;
  log_stream{log, log_level::info}
    << "stoker-node: role " << to_string(cfg.node.role) << ", node "
    << cfg.node.name << ", config " << cfg.node.config_source;
  log_stream{log, log_level::info}
    << "  dataset " << p.source.dataset_size << " samples x "
    << p.source.epochs << " epoch(s), batch " << p.source.batch_size << ": "
    << pipeline_line(p);
  {
    log_stream line{log, log_level::info};
    line << "  "
         << (cfg.node.role == role_kind::head
               ? std::string{"workers on the nodes"}
               : std::to_string(cfg.node.workers) + " CPU worker(s)")
         << ", router " << to_string(p.router.policy) << " (window "
         << p.router.window << "), trainer " << p.trainer.model_entry.text
         << " on " << to_string(cfg.node.trainer.device);
    if (p.router.placement != blur_placement::cpu)
      line << ", blur placement " << to_string(p.router.placement);
  }
  auto cuda = probe_cuda_devices();
  log.info("  CUDA runtime: " + std::to_string(cuda.count) + " device(s)"
           + (cuda.detail.empty() ? "" : ": " + cuda.detail));
  // Damage in the data is said before anything runs, once; the report
  // lists it again, and what it cost in samples each epoch.
  for (auto& line : p.data.damage)
    log.warning("  damaged data: " + line);
}

run_judgement judge_run(const caf::expected<run_report>& report) {
  if (!report)
    return {is(report.error(), errc::invalid_config) ? run_verdict::refused
                                                     : run_verdict::failed,
            describe(report.error())};
  auto& r = *report;
  if (r.status == "failed")
    return {run_verdict::failed, r.first_error};
  // Stopped on purpose, the samples never leased are not missing; one
  // trained twice, or a batch rejected, still fails the run.
  bool once = r.status == "stopped"
                ? r.duplicates == 0 && r.rejected_batches == 0
                : r.exactly_once();
  if (!once)
    return {run_verdict::failed,
            "delivery was not exactly once ("
              + std::to_string(r.status == "stopped" ? 0 : r.missing)
              + " missing, " + std::to_string(r.duplicates) + " duplicates, "
              + std::to_string(r.rejected_batches) + " rejected batches)"
              + (r.first_error.empty() ? "" : ": " + r.first_error)};
  return {r.status == "stopped" ? run_verdict::stopped : run_verdict::ok,
          {}};
}

std::string run_failure_text(const caf::expected<run_report>& report) {
  auto judged = judge_run(report);
  if (judged.verdict != run_verdict::failed)
    return {};
  return judged.reason;
}

int finish_run(const caf::expected<run_report>& report,
               const run_config& cfg, const log_sink& log) {
  auto judged = judge_run(report);
  if (!report) {
    // A setting that cannot work is refused before the run (exit 2, as
    // for a bad config file); anything else failed the run (exit 1).
    log.error(std::string{"stoker-node: "}
              + (judged.verdict == run_verdict::refused ? "refused: "
                                                        : "run failed: ")
              + judged.reason);
    return judged.exit_code();
  }
  auto& r = *report;
  auto info = [&log] { return log_stream{log, log_level::info}; };
  if (r.status == "failed") {
    log.error("stoker-node: run failed: " + judged.reason);
    info() << "  so far: " << r.samples_delivered << " samples delivered, "
           << r.missing << " missing";
    if (!cfg.node.report_path.empty()) {
      if (auto err = write_report(r, cfg.node.report_path))
        log.error("stoker-node: " + describe(err));
      else
        log.info("report written to " + cfg.node.report_path);
    }
    return 1;
  }
  // The rate is this run's samples over this run's time; samples trained
  // before a resume are said apart.
  info() << std::fixed << std::setprecision(2) << "run: "
         << r.samples_this_run << " samples in " << r.wall_s << " s ("
         << r.throughput_sps << " samples/s)"
         << (r.samples_before_resume > 0
               ? " after " + std::to_string(r.samples_before_resume)
                   + " trained before the resume"
               : std::string{})
         << ", " << r.steps << " steps on " << r.trainer_device
         << (r.trainer_simulated ? " [simulated accelerator]" : "")
         << ", accelerator idle " << 100.0 * r.accelerator_idle_fraction
         << "%, missing " << r.missing << ", duplicates " << r.duplicates
         << ", rejected " << r.rejected_batches << ", skipped "
         << r.skipped_files;
  print_skips(r, log);
  if (r.time_to_first_batch_s > 0.0)
    info() << std::fixed << std::setprecision(2) << "  first batch after "
           << r.time_to_first_batch_s << " s, then "
           << r.steady_throughput_sps << " samples/s";
  {
    auto line = info();
    line << std::fixed << std::setprecision(2) << "  trainer utilisation "
         << 100.0 * r.trainer_utilisation << "%; CPU utilisation";
    for (auto& h : r.hosts)
      line << (&h == &r.hosts.front() ? " " : ", ") << h.host << " "
           << 100.0 * h.cpu_utilisation << "%";
    line << " (every core counted)";
    if (std::isfinite(r.cost_usd))
      line << "; cost $" << std::setprecision(4) << r.cost_usd << " ($"
           << r.cost_per_1000_steps_usd << " per 1,000 steps, $"
           << r.cost_per_1000_samples_usd << " per 1,000 samples"
           << (r.unpriced_hosts.empty()
                 ? ""
                 : "; no price for " + r.unpriced_hosts.front()
                     + (r.unpriced_hosts.size() > 1 ? " and others" : ""))
           << ")";
  }
  if (r.world > 1) {
    for (auto& t : r.trainers)
      info() << std::fixed << std::setprecision(2) << "  trainer rank "
             << t.rank << " (" << t.node << ", " << t.device
             << "): " << t.steps << " steps, " << t.samples
             << " samples, compute " << t.compute_ms_per_step
             << " ms/step, idle " << 100.0 * t.idle_fraction
             << "%, collective wait " << 100.0 * t.collective_fraction << "%";
    info() << std::fixed << std::setprecision(2) << "  slowest: "
           << r.slowest_trainer << "; exposed data wait "
           << r.exposed_data_wait_ms_per_step << " ms/step";
  }
  if (r.samples_dropped + r.samples_padded > 0)
    info() << "  pipeline.last-batch = "
           << to_string(cfg.pipeline.source.last_batch) << ": "
           << r.samples_dropped << " sample(s) dropped, " << r.samples_padded
           << " repeated to fill last batches";
  for (auto& w : r.workers)
    info() << std::fixed << std::setprecision(2) << "  " << w.name << ": "
           << w.batches << " batches, busy " << 100.0 * w.busy_fraction << "%"
           << (w.lost ? " (lost; as the head last saw it)" : "");
  if (r.decoded_files > 0)
    info() << std::fixed << "  decode: " << r.decoded_files << " files, "
           << std::setprecision(3) << r.decode_ms_per_file << " ms per file, "
           << std::setprecision(1) << 100.0 * r.decoded_pixel_share
           << "% of their pixels decoded";
  if (!r.stages.empty()) {
    auto line = info();
    line << std::fixed << std::setprecision(1) << "  stages, us per sample:";
    for (size_t i = 0; i < r.stages.size(); ++i)
      line << (i ? "," : "") << " " << r.stages[i].stage << " "
           << 1e3 * r.stages[i].ms_per_sample;
  }
  for (auto& name : r.lost_workers)
    log.warning("  " + name + ": lost during the run");
  if (r.batches_released > 0)
    info() << "  " << r.batches_released
           << " batch(es) re-leased from lost workers";
  info() << "  router: window " << r.window << " (ceiling " << r.window_max
         << ", " << r.window_changes << " change(s)"
         << (r.window_last_change.empty() ? ""
                                          : "; last: " + r.window_last_change)
         << "), hedged " << r.batches_hedged << ", copies dropped "
         << r.dropped_copies;
  if (r.copy_mismatches > 0)
    log.warning("  " + std::to_string(r.copy_mismatches)
                + " second cop(ies) of a batch were not the bits trained "
                  "on: the chain is not deterministic (a stage drawing from "
                  "a generator Stoker does not seed?)");
  info() << "  peak RSS " << detail::peak_rss_bytes() / 1000000 << " MB";
  if (!cfg.node.report_path.empty()) {
    if (auto err = write_report(r, cfg.node.report_path)) {
      log.error("stoker-node: " + describe(err));
      return 1;
    }
    log.info("report written to " + cfg.node.report_path);
  }
  if (r.status == "stopped")
    info() << "run stopped early (" << r.stopped_by << "): " << r.missing
           << " sample(s) not trained";
  if (judged.verdict == run_verdict::failed)
    log.error("stoker-node: " + judged.reason);
  return judged.exit_code();
}

} // namespace stoker
