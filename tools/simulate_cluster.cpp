// stoker-simulate-cluster: a cluster of any size on one core. A
// discrete-event simulation (libactors/src/sim/cluster_sim.hpp) drives the
// router's own routing_table, inflight_window and lease_book with workers
// of drawn speeds and stragglers, trainers, links and failures, and prints
// per policy: throughput, accelerator idle per trainer, lease-to-ack
// p50/p99, losses, exactly-once (missing, duplicates) and the simulator's
// own events per second. Run through tools/simulate-cluster; --help lists
// the flags.

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "sim/cluster_sim.hpp"

namespace {

using stoker::sim_scenario;

struct flag {
  const char* help;
  std::function<bool(const std::string&)> set; // false: bad value
};

bool to_double(const std::string& text, double& out) {
  char* end = nullptr;
  out = std::strtod(text.c_str(), &end);
  return !text.empty() && end != nullptr && *end == '\0';
}

template <class T>
bool to_unsigned(const std::string& text, T& out) {
  char* end = nullptr;
  auto v = std::strtoull(text.c_str(), &end, 10);
  if (text.empty() || text[0] == '-' || end == nullptr || *end != '\0')
    return false;
  out = static_cast<T>(v);
  return static_cast<unsigned long long>(out) == v;
}

// "RATE[@HOST],..." into workers (host "cpu-I" when not given).
bool to_workers(const std::string& text, std::vector<stoker::sim_worker>& out) {
  out.clear();
  size_t at = 0;
  while (at <= text.size()) {
    auto comma = text.find(',', at);
    auto item = text.substr(at, comma == std::string::npos ? std::string::npos
                                                           : comma - at);
    auto sign = item.find('@');
    stoker::sim_worker w;
    if (!to_double(item.substr(0, sign), w.rate_sps) || !(w.rate_sps > 0))
      return false;
    w.host = sign == std::string::npos ? "cpu-" + std::to_string(out.size())
                                       : item.substr(sign + 1);
    out.push_back(w);
    if (comma == std::string::npos)
      break;
    at = comma + 1;
  }
  return !out.empty();
}

struct options {
  sim_scenario scenario;
  std::vector<std::string> policies{"least-loaded", "power-of-two",
                                    "round-robin", "static"};
  bool deterministic = false; // no wall-clock columns (golden output)
};

std::map<std::string, flag> flags_of(options& o) {
  auto& s = o.scenario;
  auto real = [](double& x) {
    return [&x](const std::string& v) { return to_double(v, x); };
  };
  auto whole = [](auto& x) {
    return [&x](const std::string& v) { return to_unsigned(v, x); };
  };
  return {
    {"workers", {"worker threads (default 16)", whole(s.workers)}},
    {"rate", {"fastest worker's samples/s (default 500)", real(s.worker_rate_sps)}},
    {"spread", {"fastest/slowest, speeds drawn log-uniformly (default 1)",
                real(s.speed_spread)}},
    {"per-host", {"workers per machine (default 8)", whole(s.workers_per_host)}},
    {"worker-rates", {"explicit workers: RATE[@HOST],... (overrides the above)",
                      [&s](const std::string& v) {
                        return to_workers(v, s.worker_list);
                      }}},
    {"trainers", {"trainers, one rank each on machine gpu-R (default 1)",
                  whole(s.trainers)}},
    {"step-ms", {"a trainer's step (default 1)", real(s.step_ms)}},
    {"allreduce-ms", {"the group's all-reduce after each step (default 0)",
                      real(s.allreduce_ms)}},
    {"batches", {"batches over every rank (default 2000)", whole(s.batches)}},
    {"batch-size", {"samples a batch (default 16)", whole(s.batch_size)}},
    {"batch-bytes", {"one batch on the wire (default 16x224x224x3 float32)",
                     whole(s.batch_bytes)}},
    {"straggler-prob", {"chance an item straggles (default 0)",
                        real(s.straggler_prob)}},
    {"straggler-alpha", {"Pareto tail index of a straggler's slowdown "
                         "(default 1.5)", real(s.straggler_alpha)}},
    {"latency-us", {"one-way latency of every message (default 50)",
                    real(s.latency_us)}},
    {"bandwidth-gbps", {"each trainer's ingress, gigabit/s (default 10)",
                        real(s.bandwidth_gbps)}},
    {"failures", {"workers killed at random times (default 0)",
                  whole(s.failures)}},
    {"hedge-factor", {"router.hedge-factor (default 0: off)",
                      real(s.router.hedge_factor)}},
    {"window", {"router.window (default 8)", whole(s.router.window)}},
    {"prefetch", {"trainer.prefetch: the window's floor (default 4)",
                  whole(s.prefetch)}},
    {"seed", {"every random draw (default 1)", whole(s.seed)}},
    {"max-seconds", {"simulated seconds before giving up (default 3600)",
                     real(s.max_sim_seconds)}},
    {"policy", {"all, or one of least-loaded, power-of-two, round-robin, "
                "local-only, static (default all: the four but local-only)",
                [&o](const std::string& v) {
                  if (v == "all")
                    return true;
                  if (v != "static"
                      && !stoker::parse_enum<stoker::routing_policy>(v))
                    return false;
                  o.policies = {v};
                  return true;
                }}},
  };
}

void usage(std::map<std::string, flag>& flags) {
  std::printf("usage: stoker-simulate-cluster [--FLAG=VALUE]... "
              "[--deterministic]\n\n");
  for (auto& [name, f] : flags)
    std::printf("  --%-16s %s\n", name.c_str(), f.help);
  std::printf("  --%-16s %s\n", "deterministic",
              "leave out wall-clock columns (the output is then a function "
              "of the flags)");
}

} // namespace

int main(int argc, char** argv) {
  options o;
  auto flags = flags_of(o);
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      usage(flags);
      return 0;
    }
    if (arg == "--deterministic") {
      o.deterministic = true;
      continue;
    }
    auto eq = arg.find('=');
    auto name = arg.rfind("--", 0) == 0 ? arg.substr(2, eq - 2) : std::string{};
    auto f = flags.find(name);
    if (f == flags.end() || eq == std::string::npos) {
      std::fprintf(stderr,
                   "simulate-cluster: '%s': expected --FLAG=VALUE with a "
                   "flag --help lists\n",
                   arg.c_str());
      return 2;
    }
    auto value = arg.substr(eq + 1);
    if (!f->second.set(value)) {
      std::fprintf(stderr, "simulate-cluster: --%s = '%s': expected %s\n",
                   name.c_str(), value.c_str(), f->second.help);
      return 2;
    }
  }
  auto& s = o.scenario;
  if (auto why = stoker::check_scenario(s); !why.empty()) {
    std::fprintf(stderr, "simulate-cluster: %s\n", why.c_str());
    return 2;
  }
  auto workers = stoker::sim_workers_of(s);
  double capacity = 0.0;
  double slowest = workers.front().rate_sps;
  double fastest = slowest;
  for (auto& w : workers) {
    capacity += w.rate_sps;
    slowest = std::min(slowest, w.rate_sps);
    fastest = std::max(fastest, w.rate_sps);
  }
  double demand = s.step_ms > 0 ? s.trainers * s.batch_size / (s.step_ms * 1e-3)
                                : 0.0;
  std::printf("simulated cluster: %zu workers (%.0f-%.0f samples/s, %.0f in "
              "all), %u trainer(s) at %.3g ms/step (they could take %.0f "
              "samples/s), batch %u, %llu batches, stragglers %.3g "
              "(alpha %.2g), latency %.3g us, %.3g Gbit/s into each trainer, "
              "%u failure(s), seed %llu\n\n",
              workers.size(), slowest, fastest, capacity, s.trainers,
              s.step_ms, demand, s.batch_size,
              static_cast<unsigned long long>(s.batches), s.straggler_prob,
              s.straggler_alpha, s.latency_us, s.bandwidth_gbps, s.failures,
              static_cast<unsigned long long>(s.seed));
  std::printf("%-13s %11s %6s %7s %7s %6s %9s %9s %6s %5s %7s %5s %8s %5s",
              "policy", "samples/s", "of cap", "idle", "idle", "busy", "l2a p50",
              "l2a p99", "relsd", "lost", "missing", "dups", "sim s", "win0");
  if (!o.deterministic)
    std::printf(" %10s %12s", "events", "events/s");
  std::printf("\n%-13s %11s %6s %7s %7s %6s %9s %9s %6s %5s %7s %5s %8s %5s\n",
              "", "", "", "mean", "max", "mean", "ms", "ms", "", "", "", "",
              "", "");
  int status = 0;
  for (auto& name : o.policies) {
    auto run = s;
    run.static_split = name == "static";
    if (!run.static_split)
      run.policy = *stoker::parse_enum<stoker::routing_policy>(name);
    auto t0 = std::chrono::steady_clock::now();
    auto r = stoker::simulate_cluster(run);
    double wall = std::chrono::duration<double>(
                    std::chrono::steady_clock::now() - t0)
                    .count();
    std::printf("%-13s %11.1f %6.3f %6.2f%% %6.2f%% %6.3f %9.2f %9.2f %6llu %5u "
                "%7llu %5llu %8.3f %5u",
                name.c_str(), r.throughput_sps,
                std::min(capacity, demand > 0 ? demand : capacity) > 0
                  ? r.throughput_sps
                      / std::min(capacity, demand > 0 ? demand : capacity)
                  : 0.0,
                100 * r.idle_mean, 100 * r.idle_max, r.busy_mean,
                r.lease_to_ack_p50_ms,
                r.lease_to_ack_p99_ms,
                static_cast<unsigned long long>(r.released), r.workers_lost,
                static_cast<unsigned long long>(r.missing),
                static_cast<unsigned long long>(r.duplicates), r.sim_seconds,
                r.final_window);
    if (!o.deterministic)
      std::printf(" %10llu %12.0f", static_cast<unsigned long long>(r.events),
                  static_cast<double>(r.events) / std::max(wall, 1e-9));
    std::printf("\n");
    if (!r.completed)
      std::printf("  %s did not finish: %s\n", name.c_str(),
                  r.stalled_why.c_str());
    if (r.duplicates != 0 || (r.completed && r.missing != 0))
      status = 1; // exactly-once broken: a bug, not a finding
    std::fflush(stdout);
  }
  std::printf("\n\"of cap\": throughput over the lesser of the workers' "
              "summed rates and what the trainers can take; idle: a "
              "trainer's data wait over wait + step; busy: a trainer's steps over the run (its other time: data waits and waits at the all-reduce for the other ranks); l2a: lease to "
              "acknowledgement; relsd: batches re-leased from lost "
              "workers.\n");
  return status;
}
