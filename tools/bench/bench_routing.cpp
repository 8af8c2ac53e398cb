// stoker-bench-routing: how many routing decisions per second the router's
// routing_table makes as a cluster grows, N = 10, 100, 1,000 and 10,000
// workers, for least-loaded and power-of-two, with every worker measured
// ("warm": rates 1:10 apart) and with none measured yet ("cold": a join
// storm). One decision = pick + lease + the ack of an older lease, as the
// router does per batch. Past routing_table::exact_up_to workers
// least-loaded compares a sample: the "delay/best" column is the mean of
// the picked worker's expected delay over the exact least one's, for 2,000
// decisions of the same workload (1.00 = as good as a scan). Every configuration runs ROUNDS times in a
// different order each round, each for at least 0.3 s; medians and the
// spread are printed. Run through tools/bench/bench-routing; not part of CI.

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

stoker::routing_table make_table(const config& c, uint64_t now) {
  stoker::routing_table table{c.policy, 300'000'000, 42};
  for (size_t i = 0; i < c.workers; ++i)
    table.add_worker("w" + std::to_string(i), "h" + std::to_string(i % 16),
                     now);
  if (c.warm)
    for (size_t i = 0; i < c.workers; ++i) { // rates 100..1000 samples/s
      table.on_lease(i, 64);
      table.on_done(i, 64, 64'000'000'000ull / (100 + (i * 37) % 901), 0, now);
    }
  return table;
}

// The router's workload: every decision leases, and the oldest lease past
// the in-flight bound finishes.
struct workload {
  stoker::routing_table table;
  std::deque<size_t> leased; // oldest first
  size_t in_flight;
  uint64_t now;

  explicit workload(const config& c)
    : table(make_table(c, 1'000'000)),
      in_flight(std::max<size_t>(8, c.workers / 4)),
      now(1'000'000) {
    // nop
  }

  size_t decide() {
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
    return *w;
  }
};

// Decisions per second for one configuration.
double decisions_per_second(const config& c) {
  workload load{c};
  uint64_t decisions = 0;
  auto t0 = clock_type::now();
  double elapsed = 0;
  while (elapsed < 0.3) {
    for (int k = 0; k < 256; ++k) {
      load.decide();
      ++decisions;
    }
    elapsed = std::chrono::duration<double>(clock_type::now() - t0).count();
  }
  return static_cast<double>(decisions) / elapsed;
}

// Mean over 2,000 decisions of the picked worker's expected delay over the
// least expected delay of any worker (a scan, outside the timed runs).
double delay_over_best(const config& c) {
  workload load{c};
  for (size_t k = 0; k < load.in_flight; ++k) // fill the window first
    load.decide();
  double sum = 0;
  constexpr int decisions = 2000;
  for (int k = 0; k < decisions; ++k) {
    uint64_t at = load.now + 10'000; // the clock decide() picks at
    double best = 0;
    for (size_t i = 0; i < c.workers; ++i) {
      double d = load.table.expected_delay(i, 64, at);
      best = i == 0 ? d : std::min(best, d);
    }
    auto w = load.table.pick(64, at);
    sum += load.table.expected_delay(*w, 64, at) / best;
    load.decide();
  }
  return sum / decisions;
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
  std::printf("%8s  %-14s %-5s %14s  %-20s %s\n", "workers", "policy",
              "rates", "decisions/s", "spread", "delay/best");
  for (size_t i = 0; i < configs.size(); ++i) {
    auto v = rates[i];
    std::sort(v.begin(), v.end());
    double median = v.size() % 2 ? v[v.size() / 2]
                                 : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
    char spread[64];
    std::snprintf(spread, sizeof spread, "%.0f-%.0f", v.front(), v.back());
    std::printf("%8zu  %-14s %-5s %14.0f  %-20s %.3f\n", configs[i].workers,
                stoker::to_string(configs[i].policy).c_str(),
                configs[i].warm ? "warm" : "cold", median, spread,
                delay_over_best(configs[i]));
  }
  std::printf("\ntarget: >= 100000/s for least-loaded at 1,000 workers\n");
  return 0;
}
