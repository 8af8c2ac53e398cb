#include "observe/job_metrics.hpp"

#include <algorithm>
#include <map>
#include <sstream>

#include "core/json_text.hpp"
#include "core/run_report.hpp"
#include "observe/metrics_text.hpp"

namespace stoker {

namespace {

double seconds(uint64_t ns) {
  return static_cast<double>(ns) * 1e-9;
}

// A trainer's label: NODE/RANK (a local run's node is "local").
std::string trainer_label(const std::string& node, uint32_t rank) {
  return (node.empty() ? std::string{"local"} : node) + "/"
         + std::to_string(rank);
}

// The node a worker runs on: the part of "NODE/i" before the slash; a
// local run's workers ("worker-i") are on its one node.
std::string worker_node(const job_view& job, const std::string& worker) {
  auto slash = worker.rfind('/');
  if (slash != std::string::npos)
    return worker.substr(0, slash);
  return job.nodes.size() == 1 ? job.nodes.front().name : "local";
}

} // namespace

namespace {

// The families known before any view of the job: the release, whether
// the view is ready, and the nodes.
void identity(metrics_text& m, std::string_view version, bool ready,
              const std::vector<node_row>& nodes) {
  m.family("stoker_build_info", metric_kind::gauge,
           "always 1; the Stoker release serving these metrics");
  m.sample({{"version", std::string{version}}}, 1);
  m.family("stoker_job_view_ready", metric_kind::gauge,
           "1 once the router answered a look at the job; 0: only the "
           "families known without one are served");
  m.sample({}, ready ? 1 : 0);
  m.family("stoker_node_up", metric_kind::gauge,
           "1 while a node of the cluster is joined, 0 once it left");
  for (auto& n : nodes)
    m.sample({{"node", n.name}, {"role", to_string(n.role)}},
             n.state == "left" ? 0 : 1);
}

} // namespace

std::string render_pending_metrics(std::string_view version,
                                   const std::vector<node_row>& nodes,
                                   const std::string& why) {
  metrics_text m;
  identity(m, version, false, nodes);
  std::string text = "# " + why + "\n";
  for (auto& c : text)
    if (c == '\n' && &c != &text.back())
      c = ' ';
  return text + m.text();
}

std::string render_metrics(const job_view& job, std::string_view version) {
  metrics_text m;
  auto& r = job.router;
  auto& sum = r.summary;
  identity(m, version, true, job.nodes);
  m.family("stoker_node_heartbeat_age_seconds", metric_kind::gauge,
           "since the router last heard from a node's workers or trainer");
  for (auto& n : job.nodes)
    if (auto ms = node_heard_ms_ago(n, r))
      m.sample({{"node", n.name}}, static_cast<double>(*ms) * 1e-3);

  // The run as a whole.
  uint64_t delivered = 0;
  uint64_t dropped = 0;
  uint64_t rejected = 0;
  uint64_t skipped = 0;
  for (auto& t : job.trainers) {
    delivered += t.samples_delivered;
    dropped += t.dropped_copies;
    rejected += t.rejected_batches;
    skipped += t.skipped_samples;
  }
  struct scalar {
    const char* name;
    metric_kind kind;
    const char* help;
    double value;
  };
  auto count = [](uint64_t n) { return static_cast<double>(n); };
  const scalar run_wide[] = {
    {"stoker_samples_expected", metric_kind::gauge,
     "training samples the run delivers, each once",
     count(sum.samples_expected)},
    {"stoker_samples_delivered_total", metric_kind::counter,
     "training samples the trainers took in (the report's "
     "samples_delivered)",
     count(delivered)},
    {"stoker_samples_skipped_total", metric_kind::counter,
     "samples whose file could not be read or decoded: neither trained on "
     "nor missing (the report's skipped_files and skipped_sources)",
     count(skipped)},
    {"stoker_run_seconds", metric_kind::gauge,
     "wall time since the run began", seconds(sum.wall_ns)},
    {"stoker_batches_leased_total", metric_kind::counter,
     "work items the router leased to workers", count(sum.batches_leased)},
    {"stoker_batches_acked_total", metric_kind::counter,
     "batches the trainers acknowledged", count(sum.batches_acked)},
    {"stoker_batches_released_total", metric_kind::counter,
     "leases given to another worker because theirs was lost",
     count(sum.batches_released)},
    {"stoker_batches_hedged_total", metric_kind::counter,
     "stragglers leased a second time (router.hedge-factor)",
     count(sum.batches_hedged)},
    {"stoker_dropped_copies_total", metric_kind::counter,
     "second copies of a batch the trainers dropped by batch id",
     count(dropped)},
    {"stoker_rejected_batches_total", metric_kind::counter,
     "batches the trainers refused (shape, checksum)", count(rejected)},
    {"stoker_workers_lost_total", metric_kind::counter,
     "workers that died or went silent", count(sum.lost_workers.size())},
  };
  for (auto& x : run_wide) {
    m.family(x.name, x.kind, x.help);
    m.sample(x.value);
  }

  // Trainers: their own counts.
  std::vector<std::pair<std::string, const trainer_stats*>> trainers;
  for (auto& t : job.trainers)
    trainers.emplace_back(trainer_label(t.node, t.rank), &t);
  auto per_trainer = [&](const char* name, metric_kind kind,
                         const char* help, auto value) {
    m.family(name, kind, help);
    for (auto& [label, t] : trainers)
      m.sample({{"trainer", label}}, value(*t));
  };
  per_trainer("stoker_trainer_steps_total", metric_kind::counter,
              "training steps", [](auto& t) { return double(t.steps); });
  per_trainer("stoker_trainer_batches_total", metric_kind::counter,
              "batches that arrived at the trainer (second copies too)",
              [](auto& t) { return double(t.batches_received); });
  per_trainer("stoker_trainer_received_bytes_total", metric_kind::counter,
              "image bytes of those batches as they travelled (the batch "
              "stream, or CAF messages)",
              [](auto& t) { return double(t.bytes_received); });
  per_trainer("stoker_trainer_samples_total", metric_kind::counter,
              "training samples the trainer took in",
              [](auto& t) { return double(t.samples_delivered); });
  per_trainer("stoker_trainer_data_wait_seconds_total", metric_kind::counter,
              "time the accelerator sat idle waiting for data",
              [](auto& t) { return seconds(t.wait_ns); });
  per_trainer("stoker_trainer_step_seconds_total", metric_kind::counter,
              "time in training steps",
              [](auto& t) { return seconds(t.step_ns); });
  per_trainer("stoker_trainer_collective_seconds_total", metric_kind::counter,
              "time in the group's gradient all-reduce",
              [](auto& t) { return seconds(t.collective_ns); });

  // Trainers as the router sees them.
  m.family("stoker_router_window", metric_kind::gauge,
           "batches the router keeps in flight for a trainer");
  for (auto& t : r.trainers)
    m.sample({{"trainer", trainer_label(t.node, t.rank)}}, t.window);
  m.family("stoker_router_leases_in_flight", metric_kind::gauge,
           "batches leased for a trainer and not yet acknowledged");
  for (auto& t : r.trainers)
    m.sample({{"trainer", trainer_label(t.node, t.rank)}},
             static_cast<double>(t.in_flight));
  m.family("stoker_router_window_changes_total", metric_kind::counter,
           "changes of a trainer's window, by reason (widened: the trainer "
           "waited; narrowed: batches queued while it never waited; set: by "
           "hand)");
  for (auto& t : r.trainers) {
    auto label = trainer_label(t.node, t.rank);
    m.sample({{"trainer", label}, {"reason", "widened"}}, t.window_widened);
    m.sample({{"trainer", label}, {"reason", "narrowed"}}, t.window_narrowed);
    m.sample({{"trainer", label}, {"reason", "set"}}, t.window_set);
  }
  m.family("stoker_router_window_holds_total", metric_kind::counter,
           "decisions that left a trainer's window as it was, by reason "
           "(workers_full: the trainer ran dry but every worker held two "
           "items; group_waited: it never waited, but another rank of its "
           "group did)");
  for (auto& t : r.trainers) {
    auto label = trainer_label(t.node, t.rank);
    m.sample({{"trainer", label}, {"reason", "workers_full"}},
             t.window_held_workers_full);
    m.sample({{"trainer", label}, {"reason", "group_waited"}},
             t.window_held_group_waited);
  }

  m.family("stoker_router_data_wait_per_step_seconds", metric_kind::gauge,
           "how long a trainer waited for data per step, on average over "
           "the router's last period");
  double exposed = 0.0;
  for (auto& t : r.trainers) {
    m.sample({{"trainer", trainer_label(t.node, t.rank)}}, t.wait_ms * 1e-3);
    exposed = std::max(exposed, t.wait_ms * 1e-3);
  }
  m.family("stoker_router_group_exposed_data_wait_seconds", metric_kind::gauge,
           "the data-parallel group's exposed data wait per step: the "
           "longest any rank waited (every step waits for its slowest rank)");
  m.sample(exposed);

  // Workers: the router's view, and their own busy time.
  std::map<std::string, const worker_stats*> own;
  for (auto& w : job.workers)
    own[w.name] = &w;
  auto labels_of = [&](const std::string& name) {
    return metric_labels{{"node", worker_node(job, name)}, {"worker", name}};
  };
  m.family("stoker_worker_up", metric_kind::gauge,
           "1 while the router counts on a worker, 0 once it is lost");
  for (auto& w : r.workers)
    m.sample(labels_of(w.load.name), w.load.alive ? 1 : 0);
  m.family("stoker_worker_mailbox_depth", metric_kind::gauge,
           "messages waiting in a worker's mailbox, as it last reported");
  for (auto& w : r.workers)
    m.sample(labels_of(w.load.name),
             static_cast<double>(w.load.mailbox_depth));
  m.family("stoker_worker_outstanding_leases", metric_kind::gauge,
           "items leased to a worker and not yet made");
  for (auto& w : r.workers)
    m.sample(labels_of(w.load.name),
             static_cast<double>(w.load.outstanding_items));
  m.family("stoker_router_leases_total", metric_kind::counter,
           "leases the router gave a worker");
  for (auto& w : r.workers)
    m.sample(labels_of(w.load.name),
             static_cast<double>(w.load.items_leased));
  m.family("stoker_worker_busy_seconds_total", metric_kind::counter,
           "time a worker spent making batches");
  for (auto& [name, w] : own)
    m.sample(labels_of(name), seconds(w->busy_ns));
  m.family("stoker_worker_batches_total", metric_kind::counter,
           "batches a worker made");
  for (auto& [name, w] : own)
    m.sample(labels_of(name), static_cast<double>(w->batches));

  // The chains' stages, every worker's summed (a lost one's as the router
  // last saw it, so that a counter does not go down), as the report sums.
  std::vector<stage_time> stages;
  auto add = [&](const worker_stats& w) {
    for (auto& t : w.stages)
      add_stage_time(stages, t.stage, t.samples, t.ns);
  };
  for (auto& w : job.workers)
    add(w);
  for (auto& w : r.summary.lost_worker_stats)
    if (own.count(w.name) == 0)
      add(w);
  m.family("stoker_stage_seconds_total", metric_kind::counter,
           "time the workers' threads spent in a stage of the transform "
           "chain (a Python stage's includes the crossing to its process)");
  for (auto& t : stages)
    m.sample({{"stage", t.stage}}, seconds(t.ns));
  m.family("stoker_stage_samples_total", metric_kind::counter,
           "samples a stage of the transform chain ran on");
  for (auto& t : stages)
    m.sample({{"stage", t.stage}}, static_cast<double>(t.samples));
  return m.text();
}

std::string render_state_json(const job_view& job, std::string_view version) {
  std::ostringstream out;
  auto& r = job.router;
  out << "{\"version\": " << json_quoted(version) << ",\n\"report\": ";
  if (job.trainers.empty())
    out << "null";
  else
    out << to_json(make_report(r.summary, job.trainers, job.workers));
  out << ",\n\"paused\": " << (r.paused ? "true" : "false")
      << ",\n\"in_flight\": " << r.in_flight << ",\n\"nodes\": [";
  for (size_t i = 0; i < job.nodes.size(); ++i) {
    auto& n = job.nodes[i];
    auto heard = node_heard_ms_ago(n, r);
    out << (i ? ",\n  " : "\n  ") << "{\"name\": " << json_quoted(n.name)
        << ", \"role\": " << json_quoted(to_string(n.role))
        << ", \"host\": " << json_quoted(n.host)
        << ", \"state\": " << json_quoted(n.state)
        << ", \"cores\": " << n.cores << ", \"workers\": " << n.workers
        << ", \"heard_ms_ago\": "
        << (heard ? std::to_string(*heard) : std::string{"null"}) << "}";
  }
  std::map<std::string, const worker_stats*> own;
  for (auto& w : job.workers)
    own[w.name] = &w;
  out << "],\n\"workers\": [";
  for (size_t i = 0; i < r.workers.size(); ++i) {
    auto& w = r.workers[i].load;
    auto heard_ms_ago = r.workers[i].heard_ms_ago;
    auto found = own.find(w.name);
    out << (i ? ",\n  " : "\n  ") << "{\"name\": " << json_quoted(w.name)
        << ", \"node\": " << json_quoted(worker_node(job, w.name))
        << ", \"alive\": " << (w.alive ? "true" : "false")
        << ", \"draining\": " << (w.draining ? "true" : "false")
        << ", \"mailbox\": " << w.mailbox_depth
        << ", \"outstanding\": " << w.outstanding_items
        << ", \"leases\": " << w.items_leased
        << ", \"items_done\": " << w.items_done
        << ", \"samples_done\": " << w.samples_done
        << ", \"rate_sps\": " << json_number(w.rate_sps)
        << ", \"heard_ms_ago\": " << heard_ms_ago << ", \"busy_ns\": "
        << (found != own.end() ? found->second->busy_ns : 0)
        << ", \"alive_ns\": "
        << (found != own.end() ? found->second->alive_ns : 0) << "}";
  }
  out << "],\n\"trainers\": [";
  for (size_t i = 0; i < r.trainers.size(); ++i) {
    auto& t = r.trainers[i];
    const trainer_stats* mine = nullptr;
    for (auto& s : job.trainers)
      if (s.rank == t.rank)
        mine = &s;
    out << (i ? ",\n  " : "\n  ") << "{\"name\": "
        << json_quoted(trainer_label(t.node, t.rank))
        << ", \"rank\": " << t.rank
        << ", \"present\": " << (t.present ? "true" : "false")
        << ", \"window\": " << t.window
        << ", \"window_last_change\": " << json_quoted(t.window_last_change)
        << ", \"in_flight\": " << t.in_flight
        << ", \"pending\": " << t.pending
        << ", \"heard_ms_ago\": " << t.heard_ms_ago
        << ", \"steps\": " << (mine ? mine->steps : 0)
        << ", \"samples\": " << (mine ? mine->samples_delivered : 0)
        << ", \"wait_ns\": " << (mine ? mine->wait_ns : 0)
        << ", \"step_ns\": " << (mine ? mine->step_ns : 0) << "}";
  }
  out << "],\n\"lost_workers\": [";
  for (size_t i = 0; i < r.summary.lost_workers.size(); ++i)
    out << (i ? ", " : "") << json_quoted(r.summary.lost_workers[i]);
  out << "],\n\"run_seconds\": " << json_number(seconds(r.summary.wall_ns))
      << ",\n\"samples_expected\": " << r.summary.samples_expected << "\n}\n";
  return out.str();
}

} // namespace stoker
