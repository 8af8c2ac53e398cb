// stoker-bench-routing: how many routing decisions per second the router's
// routing_table makes as a cluster grows, N = 10, 100, 1,000 and 10,000
// workers, for least-loaded and power-of-two, with every worker measured
// ("warm": rates 1:10 apart) and with none measured yet ("cold": a join
// storm). One decision = pick + lease + the ack of an older lease, as the
// router does per batch. Every configuration runs ROUNDS times in a
// different order each round, each for at least 0.3 s; medians and the
// spread are printed. Run through tools/bench-routing; not part of CI.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <string>
#include <vector>

#include "routing/routing_table.hpp"

namespace {

using clock_type = std::chrono::steady_clock;

struct config {
  size_t workers;
  stoker::routing_policy policy;
  bool warm;
};

// Decisions per second for one configuration.
double decisions_per_second(const config& c) {
  stoker::routing_table table{c.policy, 300'000'000, 42};
  uint64_t now = 1'000'000;
  for (size_t i = 0; i < c.workers; ++i)
    table.add_worker("w" + std::to_string(i), "h" + std::to_string(i % 16),
                     now);
  if (c.warm)
    for (size_t i = 0; i < c.workers; ++i) { // rates 100..1000 samples/s
      table.on_lease(i, 64);
      table.on_done(i, 64, 64'000'000'000ull / (100 + (i * 37) % 901), 0, now);
    }
  std::deque<size_t> leased; // oldest first
  size_t in_flight = std::max<size_t>(8, c.workers / 4);
  uint64_t decisions = 0;
  auto t0 = clock_type::now();
  double elapsed = 0;
  while (elapsed < 0.3) {
    for (int k = 0; k < 256; ++k) {
      now += 10'000; // 10 us a decision on the router's clock
      auto w = table.pick(64, now);
      if (!w)
        std::abort();
      table.on_lease(*w, 64);
      leased.push_back(*w);
      if (leased.size() > in_flight) {
        auto done = leased.front();
        leased.pop_front();
        table.on_done(done, 64, 50'000'000, 0, now);
      }
      ++decisions;
    }
    elapsed = std::chrono::duration<double>(clock_type::now() - t0).count();
  }
  return static_cast<double>(decisions) / elapsed;
}

} // namespace

int main(int argc, char** argv) {
  int rounds = argc > 1 ? std::atoi(argv[1]) : 3;
  if (rounds <= 0) {
    std::fprintf(stderr, "usage: stoker-bench-routing [ROUNDS>0]\n");
    return 2;
  }
  std::vector<config> configs;
  for (size_t n : {10, 100, 1000, 10000})
    for (auto p : {stoker::routing_policy::least_loaded,
                   stoker::routing_policy::power_of_two})
      for (bool warm : {true, false})
        configs.push_back({n, p, warm});
  std::vector<std::vector<double>> rates(configs.size());
  std::vector<size_t> order(configs.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  for (int r = 0; r < rounds; ++r) {
    std::rotate(order.begin(), order.begin() + 3, order.end());
    if (r % 2 == 1)
      std::reverse(order.begin(), order.end());
    for (auto i : order)
      rates[i].push_back(decisions_per_second(configs[i]));
    std::fprintf(stderr, "bench-routing: round %d of %d done\n", r + 1, rounds);
  }
  std::printf("routing decisions per second (pick + lease + ack), median of "
              "%d round(s) [min-max]\n\n",
              rounds);
  std::printf("%8s  %-14s %-5s %14s  %s\n", "workers", "policy", "rates",
              "decisions/s", "spread");
  for (size_t i = 0; i < configs.size(); ++i) {
    auto v = rates[i];
    std::sort(v.begin(), v.end());
    double median = v.size() % 2 ? v[v.size() / 2]
                                 : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
    std::printf("%8zu  %-14s %-5s %14.0f  %.0f-%.0f\n", configs[i].workers,
                stoker::to_string(configs[i].policy).c_str(),
                configs[i].warm ? "warm" : "cold", median, v.front(),
                v.back());
  }
  std::printf("\ntarget: >= 100000/s for least-loaded at 1,000 workers\n");
  return 0;
}
