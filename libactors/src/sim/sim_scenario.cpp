#include <cmath>
#include <algorithm>
#include <sstream>

#include "sim/cluster_sim.hpp"
#include "sim/sim_random.hpp"

// A scenario's workers and its checks (cluster_sim.cpp runs it).

namespace stoker {

std::vector<sim_worker> sim_workers_of(const sim_scenario& s) {
  if (!s.worker_list.empty())
    return s.worker_list;
  std::vector<sim_worker> out;
  detail::sim_random rng{s.seed ^ 0xc2b2ae3d27d4eb4fULL};
  auto per_host = std::max<uint32_t>(s.workers_per_host, 1);
  for (uint32_t i = 0; i < s.workers; ++i) {
    // Log-uniform: as many workers in [1, 2) x slowest as in [4, 8).
    double f = s.speed_spread > 1.0
                 ? std::pow(s.speed_spread, rng.uniform() - 1.0)
                 : 1.0;
    out.push_back(sim_worker{s.worker_rate_sps * f,
                             "cpu-" + std::to_string(i / per_host)});
  }
  return out;
}

std::string check_scenario(const sim_scenario& s) {
  std::ostringstream err;
  auto workers = sim_workers_of(s);
  if (workers.empty())
    err << "workers = 0: expected at least one worker";
  for (size_t i = 0; i < workers.size() && err.tellp() == 0; ++i)
    if (!(workers[i].rate_sps > 0.0) || !std::isfinite(workers[i].rate_sps))
      err << "worker " << i << "'s rate = " << workers[i].rate_sps
          << ": expected a positive number of samples/s";
  if (err.tellp() != 0)
    return err.str();
  if (s.trainers == 0)
    err << "trainers = 0: expected at least one";
  else if (s.batch_size == 0)
    err << "batch_size = 0: expected at least one sample a batch";
  else if (s.batches == 0)
    err << "batches = 0: expected at least one";
  else if (!(s.step_ms >= 0.0) || !(s.allreduce_ms >= 0.0))
    err << "step_ms = " << s.step_ms << ", allreduce_ms = " << s.allreduce_ms
        << ": expected >= 0";
  else if (!(s.speed_spread >= 1.0))
    err << "speed_spread = " << s.speed_spread << ": expected >= 1";
  else if (!(s.straggler_prob >= 0.0 && s.straggler_prob <= 1.0))
    err << "straggler_prob = " << s.straggler_prob << ": expected 0..1";
  else if (!(s.straggler_alpha >= 1.0))
    err << "straggler_alpha = " << s.straggler_alpha << ": expected >= 1";
  else if (!(s.latency_us >= 0.0))
    err << "latency_us = " << s.latency_us << ": expected >= 0";
  else if (!(s.bandwidth_gbps > 0.0))
    err << "bandwidth_gbps = " << s.bandwidth_gbps << ": expected > 0";
  else if (s.failures >= workers.size())
    err << "failures = " << s.failures << ": expected fewer than the "
        << workers.size() << " workers";
  else if (s.static_split && s.static_prefetch == 0)
    err << "static_prefetch = 0: expected at least one";
  return err.str();
}

} // namespace stoker
