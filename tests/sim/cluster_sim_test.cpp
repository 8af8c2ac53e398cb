#include <boost/test/unit_test.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <numeric>
#include <sstream>
#include <string>

#include "sim/cluster_sim.hpp"

using namespace stoker;

namespace {

// Small enough for milliseconds, with every source of randomness on.
sim_scenario small_scenario() {
  sim_scenario s;
  s.workers = 12;
  s.workers_per_host = 4;
  s.worker_rate_sps = 800.0;
  s.speed_spread = 10.0;
  s.trainers = 2;
  s.step_ms = 8.0;
  s.allreduce_ms = 0.5;
  s.batches = 600;
  s.straggler_prob = 0.02;
  s.failures = 2;
  s.router.hedge_factor = 3.0;
  s.router.heartbeat_timeout = std::chrono::milliseconds{500};
  s.seed = 7;
  return s;
}

// The figures a run gives, as text (the golden file's lines).
std::string describe(const std::string& name, const sim_result& r) {
  char line[512];
  std::snprintf(line, sizeof line,
                "%s completed=%d sim_s=%.6f samples=%llu idle_mean=%.6f "
                "idle_max=%.6f l2a_p50_ms=%.3f l2a_p99_ms=%.3f leases=%llu "
                "released=%llu hedged=%llu copies_dropped=%llu lost=%u "
                "missing=%llu duplicates=%llu window=%u events=%llu\n",
                name.c_str(), r.completed ? 1 : 0, r.sim_seconds,
                static_cast<unsigned long long>(r.samples_trained),
                r.idle_mean, r.idle_max, r.lease_to_ack_p50_ms,
                r.lease_to_ack_p99_ms,
                static_cast<unsigned long long>(r.leases),
                static_cast<unsigned long long>(r.released),
                static_cast<unsigned long long>(r.hedged),
                static_cast<unsigned long long>(r.copies_dropped),
                r.workers_lost, static_cast<unsigned long long>(r.missing),
                static_cast<unsigned long long>(r.duplicates),
                r.final_window, static_cast<unsigned long long>(r.events));
  return line;
}

std::string all_policies(const sim_scenario& base) {
  std::string out;
  for (auto p : {routing_policy::least_loaded, routing_policy::power_of_two,
                 routing_policy::round_robin}) {
    auto s = base;
    s.policy = p;
    out += describe(to_string(p), simulate_cluster(s));
  }
  auto s = base;
  s.static_split = true;
  out += describe("static", simulate_cluster(s));
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(cluster_sim)

BOOST_AUTO_TEST_CASE(one_worker_feeding_a_fast_trainer_runs_at_the_workers_rate) {
  sim_scenario s;
  s.worker_list = {sim_worker{400.0, "cpu-0"}};
  s.step_ms = 0.1;
  s.batches = 500;
  s.latency_us = 0.0;
  s.bandwidth_gbps = 1e6; // transfers take no time
  auto r = simulate_cluster(s);
  BOOST_REQUIRE(r.completed);
  // 8,000 samples at 400/s: 20 s, plus the last step.
  BOOST_TEST(r.throughput_sps == 400.0, boost::test_tools::tolerance(0.005));
  BOOST_TEST(r.missing == 0u);
  BOOST_TEST(r.duplicates == 0u);
}

BOOST_AUTO_TEST_CASE(a_slow_trainer_is_the_limit_and_never_waits_once_fed) {
  sim_scenario s;
  s.workers = 8;
  s.worker_rate_sps = 1000.0; // 8,000 samples/s of workers
  s.step_ms = 10.0;           // the trainer takes 1,600 samples/s
  s.batches = 400;
  auto r = simulate_cluster(s);
  BOOST_REQUIRE(r.completed);
  BOOST_TEST(r.throughput_sps == 1600.0, boost::test_tools::tolerance(0.01));
  BOOST_TEST(r.idle_mean < 0.01);
}

BOOST_AUTO_TEST_CASE(least_loaded_gets_near_the_sum_where_round_robin_waits_for_the_slow) {
  // Rates 1:3 (as tools/bench/bench-router's pair): least-loaded near 400, the
  // window fills at the slow worker under round-robin (about 2 x 100).
  sim_scenario s;
  s.worker_list = {sim_worker{300.0, "cpu-0"}, sim_worker{100.0, "cpu-1"}};
  s.step_ms = 1.0;
  s.batches = 1000;
  s.policy = routing_policy::least_loaded;
  auto ll = simulate_cluster(s);
  s.policy = routing_policy::round_robin;
  auto rr = simulate_cluster(s);
  BOOST_REQUIRE(ll.completed);
  BOOST_REQUIRE(rr.completed);
  BOOST_TEST(ll.throughput_sps > 0.95 * 400.0, ll.throughput_sps);
  BOOST_TEST(rr.throughput_sps < 1.1 * 200.0, rr.throughput_sps);
  BOOST_TEST(ll.worker_samples[0] > 2 * ll.worker_samples[1]);
}

BOOST_AUTO_TEST_CASE(a_data_parallel_group_keeps_its_window_while_one_rank_waits) {
  // 16 ranks step together, fed by 200 workers of 10-100 samples/s (1.5x
  // what the ranks take). A rank ahead of the others waits at the
  // all-reduce with batches queued; read alone that narrowed its window to
  // 5, and the group ran at 0.68 of what it can take; a window per rank
  // held while another rank waited gave 0.90. The group's one window,
  // on its steps' exposed wait, gives 0.96.
  sim_scenario s;
  s.workers = 200;
  s.worker_rate_sps = 100.0;
  s.speed_spread = 10.0;
  s.trainers = 16;
  s.step_ms = 50.0;
  s.batches = 10000;
  s.policy = routing_policy::least_loaded;
  auto r = simulate_cluster(s);
  BOOST_REQUIRE(r.completed);
  double demand = 16.0 * static_cast<double>(s.batch_size) / 0.050;
  BOOST_TEST(r.throughput_sps > 0.93 * demand, r.throughput_sps);
  BOOST_TEST(r.idle_mean < 0.02, r.idle_mean);
  BOOST_TEST(r.missing == 0u);
  BOOST_TEST(r.duplicates == 0u);
}

// The group targets of docs/scaling.md: ranks at 50 ms a step fed by
// 1,000 workers of 10-100 samples/s (1.9x what 64 ranks take), 1% of
// items straggling (Pareto), 102,400 batches a run.
sim_scenario group_at_scale(uint32_t ranks) {
  sim_scenario s;
  s.workers = 1000;
  s.worker_rate_sps = 100.0;
  s.speed_spread = 10.0;
  s.trainers = ranks;
  s.step_ms = 50.0;
  s.batches = 102400;
  s.straggler_prob = 0.01;
  s.policy = routing_policy::least_loaded;
  return s;
}

double of_demand(const sim_scenario& s, const sim_result& r) {
  return r.throughput_sps
         / (s.trainers * static_cast<double>(s.batch_size) / (s.step_ms * 1e-3));
}

BOOST_AUTO_TEST_CASE(sixty_four_ranks_are_fed_at_95_percent_of_demand) {
  // One window for the group, decided on its steps' waits: each rank
  // alone waits 0.4%, and the group's steps no longer wait 13%.
  auto s = group_at_scale(64);
  auto r = simulate_cluster(s);
  BOOST_REQUIRE(r.completed);
  BOOST_TEST(of_demand(s, r) >= 0.95, of_demand(s, r));
  BOOST_TEST(r.lease_to_ack_p99_ms <= 825.0, r.lease_to_ack_p99_ms);
  BOOST_TEST(r.missing == 0u);
  BOOST_TEST(r.duplicates == 0u);
  s.failures = 20;
  r = simulate_cluster(s);
  BOOST_REQUIRE(r.completed);
  BOOST_TEST(of_demand(s, r) >= 0.95, of_demand(s, r));
  BOOST_TEST(r.workers_lost >= 15u); // a few die after the run's end
  BOOST_TEST(r.missing == 0u);
  BOOST_TEST(r.duplicates == 0u);
}

BOOST_AUTO_TEST_CASE(sixteen_and_four_ranks_are_fed_at_97_percent_of_demand) {
  for (uint32_t ranks : {16u, 4u}) {
    auto s = group_at_scale(ranks);
    auto r = simulate_cluster(s);
    BOOST_REQUIRE(r.completed);
    BOOST_TEST(of_demand(s, r) >= 0.97, ranks << " ranks: " << of_demand(s, r));
  }
}

BOOST_AUTO_TEST_CASE(two_ranks_short_of_workers_wait_alike) {
  // Capacity 0.8x demand, one worker 3x slower than the other 15: each
  // rank waits for data about as long as the other, and the group takes
  // what the workers make.
  sim_scenario s;
  for (int i = 0; i < 15; ++i)
    s.worker_list.push_back(sim_worker{33.39, "cpu-" + std::to_string(i / 8)});
  s.worker_list.push_back(sim_worker{11.13, "cpu-1"});
  s.trainers = 2;
  s.step_ms = 50.0;
  s.batches = 8000;
  s.policy = routing_policy::least_loaded;
  auto r = simulate_cluster(s);
  BOOST_REQUIRE(r.completed);
  BOOST_REQUIRE(r.idle_fraction.size() == 2u);
  auto [lo, hi] = std::minmax(r.idle_fraction[0], r.idle_fraction[1]);
  BOOST_TEST(lo > 0.05); // the workers are short: both ranks wait
  BOOST_TEST(hi / lo <= 1.2, hi << " / " << lo);
  BOOST_TEST(r.throughput_sps >= 0.97 * 512.0, r.throughput_sps);
}

BOOST_AUTO_TEST_CASE(lost_workers_lose_no_batch_but_stall_a_static_split) {
  auto s = small_scenario();
  for (auto p : {routing_policy::least_loaded, routing_policy::power_of_two,
                 routing_policy::round_robin}) {
    s.policy = p;
    auto r = simulate_cluster(s);
    BOOST_TEST_REQUIRE(r.completed, to_string(p) << ": " << r.stalled_why);
    BOOST_TEST(r.workers_lost == 2u); // both found out by their silence
    BOOST_TEST(r.missing == 0u);
    BOOST_TEST(r.duplicates == 0u);
    BOOST_TEST(r.samples_trained == s.batches * s.batch_size);
  }
  s.static_split = true;
  auto r = simulate_cluster(s);
  BOOST_TEST(!r.completed);
  BOOST_TEST(r.stalled_why.find("died") != std::string::npos, r.stalled_why);
  BOOST_TEST(r.duplicates == 0u);
}

BOOST_AUTO_TEST_CASE(a_bad_scenario_is_named) {
  sim_scenario s;
  s.workers = 0;
  BOOST_TEST(check_scenario(s).find("workers = 0") != std::string::npos);
  s = sim_scenario{};
  s.straggler_alpha = 0.5;
  BOOST_TEST(check_scenario(s).find("straggler_alpha = 0.5")
             != std::string::npos);
  s = sim_scenario{};
  s.failures = 16;
  BOOST_TEST(check_scenario(s).find("failures = 16") != std::string::npos);
  auto r = simulate_cluster(s);
  BOOST_TEST(!r.completed);
  BOOST_TEST(r.stalled_why.find("failures = 16") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_fixed_seed_gives_the_golden_figures) {
  // The same scenario and seed give the same figures twice, and the ones
  // tests/sim/cluster_sim_golden.txt holds (written by this test with
  // STOKER_UPDATE_GOLDEN=1 after a deliberate change to the router's
  // classes or the simulator, and reviewed in the diff).
  auto first = all_policies(small_scenario());
  BOOST_TEST(first == all_policies(small_scenario()));
  // The golden file detects any change; what the figures must stay within
  // is asserted here, from the figures themselves, so a regenerated file
  // cannot accept a worse router (one accepted least-loaded's idle 0.361
  // -> 0.405): the ceilings are today's figures, and the policies keep
  // their order.
  std::map<routing_policy, sim_result> by;
  for (auto p : {routing_policy::least_loaded, routing_policy::power_of_two,
                 routing_policy::round_robin}) {
    auto s = small_scenario();
    s.policy = p;
    by[p] = simulate_cluster(s);
    BOOST_TEST_REQUIRE(by[p].completed, to_string(p));
    BOOST_TEST(by[p].missing == 0u);
    BOOST_TEST(by[p].duplicates == 0u);
  }
  auto& ll = by[routing_policy::least_loaded];
  auto& p2 = by[routing_policy::power_of_two];
  auto& rr = by[routing_policy::round_robin];
  BOOST_TEST(ll.idle_mean <= 0.405, ll.idle_mean);
  BOOST_TEST(ll.sim_seconds <= 5.28, ll.sim_seconds);
  BOOST_TEST(p2.idle_mean <= 0.441, p2.idle_mean);
  BOOST_TEST(rr.idle_mean <= 0.678, rr.idle_mean);
  BOOST_TEST(ll.idle_mean < p2.idle_mean);
  BOOST_TEST(p2.idle_mean < rr.idle_mean);
  BOOST_TEST(ll.sim_seconds < p2.sim_seconds);
  auto other = small_scenario();
  other.seed = 8;
  BOOST_TEST(first != all_policies(other));
  std::string path = STOKER_SOURCE_DIR "/tests/sim/cluster_sim_golden.txt";
  if (const char* update = std::getenv("STOKER_UPDATE_GOLDEN");
      update != nullptr && std::string{update} == "1") {
    std::ofstream{path} << first;
    BOOST_TEST_MESSAGE("wrote " << path);
  }
  std::ifstream in{path};
  BOOST_REQUIRE_MESSAGE(in, "cannot read " << path);
  std::stringstream golden;
  golden << in.rdbuf();
  BOOST_TEST(first == golden.str());
}

BOOST_AUTO_TEST_SUITE_END()
