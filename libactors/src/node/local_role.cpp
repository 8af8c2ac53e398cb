#include "node/local_role.hpp"

#include <ctime>
#include <iomanip>
#include <iostream>
#include <thread>

#include <caf/scoped_actor.hpp>

#include "stoker/actors.hpp"
#include "stoker/errors.hpp"
#include "console/node_consoles.hpp"
#include "core/peak_rss.hpp"
#include "data/epoch_source.hpp"
#include "kernels/cuda_devices.hpp"
#include "routing/router_actor.hpp"
#include "routing/source_actor.hpp"
#include "train/trainer_actor.hpp"
#include "worker/worker_actor.hpp"

namespace stoker {

namespace {

// A local run has no registry: the console is told its actors and its one
// node up front.
console_target local_console_target(const run_config& cfg,
                                    const router_actor& router,
                                    const trainer_actor& trainer,
                                    const std::vector<worker_actor>& workers) {
  console_target target;
  target.router = router;
  target.members.nodes = {cfg.node_name};
  target.members.workers = workers;
  target.members.trainers = {trainer};
  target.nodes.push_back(node_row{
    cfg.node_name, "local", cfg.node_host, std::thread::hardware_concurrency(),
    cfg.workers, to_string(cfg.trainer.device),
    static_cast<int64_t>(std::time(nullptr)), "joined"});
  return target;
}

} // namespace

caf::expected<run_report> run_local(caf::actor_system& sys,
                                    const run_config& cfg,
                                    const registry& reg) {
  epoch_source plan{cfg.source};
  auto source = spawn_source(sys, cfg.source);
  auto router = spawn_router(sys, source, cfg.router, plan.total_samples(),
                             batch_wire_bytes(cfg));
  auto trainer = spawn_trainer(sys, cfg, reg, router);
  caf::scoped_actor self{sys};
  auto stop = [&](auto&&... actors) {
    (self->send_exit(actors, caf::exit_reason::user_shutdown), ...);
  };
  if (!trainer) {
    stop(router, source);
    return std::move(trainer.error());
  }
  worker_setup common;
  common.image = cfg.synthetic;
  common.data = cfg.data;
  common.blur = cfg.blur;
  common.wire = cfg.transport;
  common.slowdown = cfg.slowdown;
  common.report_interval = cfg.router.report_interval;
  if (auto err = open_worker_data(common, reg)) {
    stop(*trainer, router, source);
    return err;
  }
  std::vector<worker_actor> workers;
  for (uint32_t i = 0; i < cfg.workers; ++i) {
    auto setup = common;
    setup.name = "worker-" + std::to_string(i);
    auto name = setup.name;
    workers.push_back(spawn_worker(sys, std::move(setup), router));
    self->send(router, join_atom::value, workers.back(), name,
               cfg.node_host);
  }
  auto consoles = node_consoles::open(sys, cfg.console,
                                      local_console_target(cfg, router,
                                                           *trainer, workers),
                                      "local");
  caf::expected<run_report> result{caf::error{}};
  if (!consoles)
    result = std::move(consoles.error());
  else
    self->request(router, caf::infinite, run_atom::value)
      .receive(
        [&](router_summary& summary) {
          result = collect_report(self, summary, *trainer, workers);
        },
        [&](caf::error& err) { result = std::move(err); });
  consoles = node_consoles{}; // before the actors they ask
  for (auto& w : workers)
    stop(w);
  stop(*trainer, router, source);
  return result;
}

caf::expected<run_report>
collect_report(caf::scoped_actor& self, const router_summary& summary,
               const trainer_actor& trainer,
               const std::vector<worker_actor>& workers) {
  caf::error failure;
  trainer_stats tstats;
  std::vector<worker_stats> wstats;
  self->request(trainer, caf::infinite, stats_atom::value)
    .receive([&](trainer_stats& s) { tstats = std::move(s); },
             [&](caf::error& err) { failure = std::move(err); });
  // A worker the router lost (dead, or hung: it would never answer) has no
  // stats to give; the report names it under lost_workers.
  for (auto& w : workers)
    self->request(w, std::chrono::seconds(2), stats_atom::value)
      .receive([&](worker_stats& s) { wstats.push_back(std::move(s)); },
               [&](caf::error&) {});
  if (failure)
    return failure;
  return make_report(summary, tstats, wstats);
}

namespace {

// The pipeline in one line: the source and the transforms.
std::string pipeline_line(const run_config& cfg) {
  auto& d = cfg.data;
  auto& o = d.output;
  std::string shape = std::to_string(o.height) + "x" + std::to_string(o.width)
                      + "x" + std::to_string(o.channels);
  if (d.transforms.empty())
    return "synthetic " + shape + ", " + std::to_string(cfg.blur.repeat)
           + "x GaussianBlur(" + std::to_string(cfg.blur.kernel_size) + ")";
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

} // namespace

void print_banner(const run_config& cfg) {
  std::cout << "stoker-node: role " << cfg.role << ", node " << cfg.node_name
            << ", config " << cfg.config_source << "\n  dataset "
            << cfg.source.dataset_size << " samples x " << cfg.source.epochs
            << " epoch(s), batch " << cfg.source.batch_size << ": "
            << pipeline_line(cfg) << "\n  "
            << (cfg.role == "head" ? std::string{"workers on the nodes"}
                                   : std::to_string(cfg.workers)
                                       + " CPU worker(s)")
            << ", router "
            << to_string(cfg.router.policy) << " (window " << cfg.router.window
            << "), trainer " << cfg.trainer.model_entry.text << " on "
            << to_string(cfg.trainer.device);
  if (cfg.router.placement != blur_placement::cpu)
    std::cout << ", blur placement " << to_string(cfg.router.placement);
  auto cuda = probe_cuda_devices();
  std::cout << "\n  CUDA runtime: " << cuda.count << " device(s)"
            << (cuda.detail.empty() ? "" : ": " + cuda.detail) << std::endl;
}

int finish_run(const caf::expected<run_report>& report,
               const run_config& cfg) {
  if (!report) {
    std::cerr << "stoker-node: run failed: " << describe(report.error())
              << std::endl;
    return 1;
  }
  auto& r = *report;
  std::cout << std::fixed << std::setprecision(2) << "run: "
            << r.samples_delivered << " samples in " << r.wall_s << " s ("
            << r.throughput_sps << " samples/s), " << r.steps << " steps on "
            << r.trainer_device
            << (r.trainer_simulated ? " [simulated accelerator]" : "")
            << ", accelerator idle "
            << 100.0 * r.accelerator_idle_fraction << "%, missing "
            << r.missing << ", duplicates " << r.duplicates << ", rejected "
            << r.rejected_batches << std::endl;
  for (auto& w : r.workers)
    std::cout << "  " << w.name << ": " << w.batches << " batches, busy "
              << 100.0 * w.busy_fraction << "%" << std::endl;
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
  if (!cfg.report_path.empty()) {
    if (auto err = write_report(r, cfg.report_path)) {
      std::cerr << "stoker-node: " << describe(err) << std::endl;
      return 1;
    }
    std::cout << "report written to " << cfg.report_path << std::endl;
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

int local_role_main(caf::actor_system& sys, const run_config& cfg,
                    const registry& reg) {
  print_banner(cfg);
  return finish_run(run_local(sys, cfg, reg), cfg);
}

} // namespace stoker
