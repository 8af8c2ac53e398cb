#include <boost/test/unit_test.hpp>

#include <deque>

#include <cmath>

#include "routing/routing_table.hpp"

using namespace stoker;

namespace {

// A worker that reported `rate` samples/s for one 64-sample item.
void report_rate(routing_table& t, size_t w, double rate) {
  t.on_lease(w, 64);
  t.on_done(w, 64, static_cast<uint64_t>(64 / rate * 1e9), 0);
}

} // namespace

BOOST_AUTO_TEST_SUITE(routing)

BOOST_AUTO_TEST_CASE(parses_policy_names_and_rejects_others) {
  BOOST_TEST((parse_enum<routing_policy>("least-loaded")
              == routing_policy::least_loaded));
  BOOST_TEST((parse_enum<routing_policy>("round-robin")
              == routing_policy::round_robin));
  BOOST_TEST((parse_enum<routing_policy>("local-only")
              == routing_policy::local_only));
  BOOST_TEST((parse_enum<routing_policy>("power-of-two")
              == routing_policy::power_of_two));
  BOOST_TEST(!parse_enum<routing_policy>("random").has_value());
  for (auto p : {routing_policy::least_loaded, routing_policy::round_robin,
                 routing_policy::local_only, routing_policy::power_of_two})
    BOOST_TEST((parse_enum<routing_policy>(to_string(p)) == p));
  BOOST_TEST(to_string(routing_policy::least_loaded) == "least-loaded");
}

BOOST_AUTO_TEST_CASE(routes_to_worker_with_shortest_expected_delay) {
  routing_table t{routing_policy::least_loaded};
  auto fast = t.add_worker("fast");
  auto slow = t.add_worker("slow");
  report_rate(t, fast, 300.0);
  report_rate(t, slow, 100.0);
  // Both idle: the fast one finishes a new item first.
  BOOST_TEST(*t.pick(64) == fast);
  // Three items queued on the fast one: (192 + 64) / 300 = 0.85 s, while
  // the idle slow one needs 64 / 100 = 0.64 s.
  for (int i = 0; i < 3; ++i)
    t.on_lease(fast, 64);
  BOOST_TEST(*t.pick(64) == slow);
  BOOST_TEST(t.expected_delay(fast, 64) > t.expected_delay(slow, 64));
}

BOOST_AUTO_TEST_CASE(spreads_work_in_proportion_to_rate) {
  routing_table t{routing_policy::least_loaded};
  auto fast = t.add_worker("fast");
  auto slow = t.add_worker("slow");
  report_rate(t, fast, 300.0);
  report_rate(t, slow, 100.0);
  int to_fast = 0;
  for (int i = 0; i < 40; ++i) {
    auto w = *t.pick(64);
    t.on_lease(w, 64);
    to_fast += w == fast ? 1 : 0;
  }
  BOOST_TEST(to_fast == 30); // 3:1, as their rates
}

BOOST_AUTO_TEST_CASE(reported_mailbox_depth_counts_as_queued_work) {
  routing_table t{routing_policy::least_loaded};
  auto a = t.add_worker("a");
  auto b = t.add_worker("b");
  report_rate(t, a, 100.0);
  report_rate(t, b, 100.0);
  // `a` says its mailbox holds 5 items the router has no lease for (e.g.
  // still on the wire when the router restarted its count).
  t.on_lease(a, 64);
  t.on_done(a, 64, static_cast<uint64_t>(0.64e9), 5);
  BOOST_TEST(*t.pick(64) == b);
}

BOOST_AUTO_TEST_CASE(new_worker_is_assumed_as_fast_as_the_best) {
  routing_table t{routing_policy::least_loaded};
  auto old = t.add_worker("old");
  report_rate(t, old, 200.0);
  t.on_lease(old, 64);
  auto fresh = t.add_worker("fresh");
  BOOST_TEST(*t.pick(64) == fresh);
}

BOOST_AUTO_TEST_CASE(ties_go_to_the_worker_with_the_least_work_so_far) {
  routing_table t{routing_policy::least_loaded};
  auto busy = t.add_worker("busy");
  report_rate(t, busy, 200.0);
  report_rate(t, busy, 200.0);
  // A newcomer is assumed as fast as `busy`; both idle: equal delays.
  auto fresh = t.add_worker("fresh");
  BOOST_TEST(t.expected_delay(busy, 64) == t.expected_delay(fresh, 64));
  BOOST_TEST(*t.pick(64) == fresh);
}

BOOST_AUTO_TEST_CASE(rate_is_a_moving_average) {
  routing_table t{routing_policy::least_loaded};
  auto w = t.add_worker("w");
  report_rate(t, w, 100.0);
  report_rate(t, w, 200.0);
  double expected = 0.3 * 200.0 + 0.7 * 100.0;
  BOOST_TEST(t.workers()[w].rate_sps == expected,
             boost::test_tools::tolerance(1e-6));
}

BOOST_AUTO_TEST_CASE(round_robin_cycles_through_workers_whatever_the_load) {
  routing_table t{routing_policy::round_robin};
  for (auto name : {"a", "b", "c"})
    t.add_worker(name);
  report_rate(t, 0, 1.0); // slow and loaded: round-robin does not care
  t.on_lease(0, 640);
  std::vector<size_t> picks;
  for (int i = 0; i < 7; ++i)
    picks.push_back(*t.pick(64));
  BOOST_TEST(picks == (std::vector<size_t>{0, 1, 2, 0, 1, 2, 0}));
}

BOOST_AUTO_TEST_CASE(ties_go_to_a_worker_on_the_trainers_node_first) {
  routing_table t{routing_policy::least_loaded};
  auto remote = t.add_worker("cpu/0", "cpu");
  auto local = t.add_worker("gpu/0", "gpu");
  t.set_trainer_host("gpu");
  BOOST_TEST(t.workers()[local].local);
  BOOST_TEST(!t.workers()[remote].local);
  report_rate(t, remote, 100.0);
  report_rate(t, local, 100.0);
  // Equal delays, equal work so far: locality decides.
  BOOST_TEST(*t.pick(64) == local);
}

BOOST_AUTO_TEST_CASE(local_only_never_leaves_the_trainers_node) {
  routing_table t{routing_policy::local_only};
  auto remote = t.add_worker("cpu/0", "cpu");
  BOOST_TEST(!t.pick(64).has_value()); // no trainer node known: nobody
  t.set_trainer_host("gpu");
  BOOST_TEST(!t.pick(64).has_value()); // the only worker is remote
  auto local = t.add_worker("gpu/0", "gpu");
  report_rate(t, remote, 1000.0);
  report_rate(t, local, 10.0);
  for (int i = 0; i < 5; ++i) {
    auto w = t.pick(64);
    BOOST_REQUIRE(w.has_value());
    BOOST_TEST(*w == local); // however loaded, however slow
    t.on_lease(*w, 64);
  }
}

BOOST_AUTO_TEST_CASE(a_worker_with_a_full_queue_loses_to_an_idle_slower_one) {
  routing_table t{routing_policy::least_loaded};
  auto fast = t.add_worker("fast");
  auto slow = t.add_worker("slow");
  report_rate(t, fast, 400.0);
  report_rate(t, slow, 100.0);
  // Its mailbox holds 8 items: (8 * 64 + 64) / 400 = 1.44 s > 0.64 s.
  t.on_lease(fast, 64);
  t.on_done(fast, 64, static_cast<uint64_t>(0.16e9), 8);
  BOOST_TEST(*t.pick(64) == slow);
}

BOOST_AUTO_TEST_CASE(a_zero_rate_report_does_not_divide_by_zero) {
  routing_table t{routing_policy::least_loaded};
  auto a = t.add_worker("a");
  auto b = t.add_worker("b");
  t.on_lease(a, 64);
  t.on_done(a, 64, 0, 0); // no busy time measured: no rate from it
  report_rate(t, b, 100.0);
  BOOST_TEST(std::isfinite(t.expected_delay(a, 64)));
  BOOST_TEST(t.pick(64).has_value());
}

BOOST_AUTO_TEST_CASE(a_silent_worker_counts_as_slower_the_longer_it_is_stale) {
  constexpr uint64_t ms = 1'000'000;
  routing_table t{routing_policy::least_loaded, 300 * ms};
  auto quiet = t.add_worker("quiet", "", 0);
  auto chatty = t.add_worker("chatty", "", 0);
  for (auto w : {quiet, chatty}) {
    t.on_lease(w, 64);
    t.on_done(w, 64, 640 * ms, 0, 1000 * ms); // 100 samples/s
  }
  // Within the allowance (300 ms, nothing in flight), silence costs
  // nothing.
  t.on_report(chatty, 0, 1200 * ms);
  BOOST_TEST(t.overdue_ns(quiet, 1200 * ms) == 0u);
  BOOST_TEST(t.expected_delay(quiet, 64, 1200 * ms)
             == t.expected_delay(chatty, 64, 1200 * ms));
  // 600 ms overdue: its delay triples and the other worker gets the item.
  t.on_report(chatty, 0, 1900 * ms);
  BOOST_TEST(t.overdue_ns(quiet, 1900 * ms) == 600 * ms);
  BOOST_TEST(t.expected_delay(quiet, 64, 1900 * ms)
               == 3 * t.expected_delay(chatty, 64, 1900 * ms),
             boost::test_tools::tolerance(1e-9));
  BOOST_TEST(*t.pick(64, 1900 * ms) == chatty);
  // A worker busy with an item may be silent for that item's time too.
  t.on_lease(chatty, 64); // 0.64 s of work at its rate
  BOOST_TEST(t.overdue_ns(chatty, 1900 * ms + 900 * ms) == 0u);
  BOOST_TEST(t.overdue_ns(chatty, 1900 * ms + 1000 * ms) == 60 * ms);
}

BOOST_AUTO_TEST_CASE(power_of_two_takes_the_better_of_two_distinct_workers) {
  routing_table t{routing_policy::power_of_two, 300'000'000, 42};
  for (int i = 0; i < 4; ++i)
    report_rate(t, t.add_worker("w" + std::to_string(i)), 100.0);
  // Worker 0 is swamped; with two distinct draws it can win only if both
  // draws were it, which cannot happen.
  for (int i = 0; i < 20; ++i)
    t.on_lease(0, 64);
  std::vector<int> picks(4);
  for (int i = 0; i < 300; ++i) {
    auto w = *t.pick(64);
    ++picks[w];
    t.on_lease(w, 64);
    t.on_done(w, 64, 640'000'000, 0);
  }
  BOOST_TEST(picks[0] == 0);
  for (int w = 1; w < 4; ++w)
    BOOST_TEST(picks[w] > 50, "worker " << w << " got " << picks[w]);
}

BOOST_AUTO_TEST_CASE(every_policy_honours_an_excluded_worker) {
  for (auto p : {routing_policy::least_loaded, routing_policy::round_robin,
                 routing_policy::power_of_two}) {
    routing_table t{p};
    auto a = t.add_worker("a");
    auto b = t.add_worker("b");
    report_rate(t, a, 1000.0);
    report_rate(t, b, 1.0);
    for (int i = 0; i < 10; ++i)
      BOOST_TEST(*t.pick(64, 0, a) == b, to_string(p));
    routing_table lonely{p};
    lonely.add_worker("only");
    BOOST_TEST(!lonely.pick(64, 0, 0).has_value(), to_string(p));
  }
}

BOOST_AUTO_TEST_CASE(drain_takes_a_node_or_one_worker_by_name) {
  routing_table t{routing_policy::least_loaded};
  auto a0 = t.add_worker("a/0");
  auto a1 = t.add_worker("a/1");
  auto ab = t.add_worker("ab/0"); // not of node "a"
  BOOST_TEST(t.set_draining("a", true) == 2u);
  BOOST_TEST(t.workers()[a0].draining);
  BOOST_TEST(t.workers()[a1].draining);
  BOOST_TEST(!t.workers()[ab].draining);
  BOOST_TEST(*t.pick(64) == ab);
  BOOST_TEST(t.set_draining("a/1", false) == 1u);
  BOOST_TEST(!t.workers()[a1].draining);
  BOOST_TEST(t.set_draining("nobody", true) == 0u);
}

BOOST_AUTO_TEST_CASE(picks_nothing_without_workers) {
  routing_table t{routing_policy::least_loaded};
  BOOST_TEST(!t.pick(64).has_value());
}

BOOST_AUTO_TEST_CASE(ten_thousand_workers_share_evenly_and_lost_ones_get_nothing) {
  for (auto p : {routing_policy::least_loaded, routing_policy::power_of_two}) {
    routing_table t{p, 300'000'000, 7};
    constexpr size_t n = 10'000;
    for (size_t i = 0; i < n; ++i)
      t.add_worker("n" + std::to_string(i / 8) + "/" + std::to_string(i % 8));
    // Every tenth worker dies before any work: a join storm with losses.
    for (size_t i = 0; i < n; i += 10)
      t.remove_worker(i);
    for (size_t k = 0; k < 3 * n; ++k) {
      auto w = t.pick(64);
      BOOST_REQUIRE(w.has_value());
      BOOST_REQUIRE_MESSAGE(*w % 10 != 0, "lost worker " << *w << " picked");
      t.on_lease(*w, 64);
    }
    BOOST_TEST(t.outstanding_items() == 3 * n);
    uint64_t most = 0;
    uint64_t fewest = UINT64_MAX;
    for (size_t i = 0; i < n; ++i)
      if (i % 10 != 0) {
        most = std::max(most, t.workers()[i].outstanding_items);
        fewest = std::min(fewest, t.workers()[i].outstanding_items);
      }
    // 30,000 leases over 9,000 live equal workers: 3.33 each. Least-loaded
    // compares 64 random workers past 1,024 (exact would give 4 and 3);
    // power-of-two keeps the busiest within a few of the mean.
    if (p == routing_policy::least_loaded) {
      BOOST_TEST(most <= 5u);
      BOOST_TEST(fewest >= 2u);
    } else {
      BOOST_TEST(most <= 8u, to_string(p));
    }
    // A lost worker's leases leave the total; a finished one leaves too.
    t.remove_worker(1);
    t.on_done(2, 64, 1'000'000, 0);
    uint64_t sum = 0;
    for (auto& w : t.workers())
      sum += w.outstanding_items;
    BOOST_TEST(t.outstanding_items() == sum);
  }
}

BOOST_AUTO_TEST_CASE(a_newcomer_is_assumed_as_fast_as_the_fastest_measured_now) {
  routing_table t{routing_policy::least_loaded};
  auto fast = t.add_worker("fast");
  auto slow = t.add_worker("slow");
  auto fresh = t.add_worker("fresh");
  t.on_lease(fast, 64);
  t.on_done(fast, 64, 64'000'000, 0); // 1,000 samples/s
  t.on_lease(slow, 64);
  t.on_done(slow, 64, 640'000'000, 0); // 100 samples/s
  BOOST_TEST(t.expected_delay(fresh, 64) == 0.064);
  // The fastest slows to ~10 samples/s: the newcomer's estimate follows to
  // the next fastest (slow, 100/s), not the old figure.
  for (int i = 0; i < 40; ++i) {
    t.on_lease(fast, 64);
    t.on_done(fast, 64, 6'400'000'000, 0);
  }
  BOOST_TEST(t.expected_delay(fresh, 64) == 0.64, t.expected_delay(fresh, 64));
}

BOOST_AUTO_TEST_CASE(least_loaded_is_exact_up_to_its_threshold) {
  // 1,024 equal workers: every one gets its lease before any gets two.
  routing_table t{routing_policy::least_loaded};
  for (size_t i = 0; i < routing_table::exact_up_to; ++i)
    t.add_worker("w" + std::to_string(i));
  for (size_t k = 0; k < routing_table::exact_up_to; ++k) {
    auto w = t.pick(64);
    BOOST_REQUIRE(w.has_value());
    BOOST_REQUIRE_EQUAL(t.workers()[*w].outstanding_items, 0u);
    t.on_lease(*w, 64);
  }
}

BOOST_AUTO_TEST_CASE(sampled_least_loaded_still_prefers_the_trainers_machine) {
  // 5,000 equal workers elsewhere and 4 on the trainer's machine: a random
  // sample would rarely see the 4, but they always compete and win ties.
  routing_table t{routing_policy::least_loaded, 300'000'000, 3};
  for (size_t i = 0; i < 5'000; ++i)
    t.add_worker("far" + std::to_string(i), "far");
  for (size_t i = 0; i < 4; ++i)
    t.add_worker("near" + std::to_string(i), "gpu-host");
  t.set_trainer_host("gpu-host");
  for (int k = 0; k < 4; ++k) {
    auto w = t.pick(64, 0, routing_table::none, "gpu-host");
    BOOST_REQUIRE(w.has_value());
    BOOST_TEST(t.workers()[*w].host == "gpu-host");
    t.on_lease(*w, 64);
  }
}

BOOST_AUTO_TEST_CASE(sampled_least_loaded_spreads_work_by_rate_at_ten_thousand) {
  // Rates 100 and 1,000 samples/s, alternating: in steady state the fast
  // half holds most of the queued work, and no worker is swamped.
  routing_table t{routing_policy::least_loaded, 300'000'000, 11};
  constexpr size_t n = 10'000;
  for (size_t i = 0; i < n; ++i) {
    t.add_worker("w" + std::to_string(i));
    t.on_lease(i, 64);
    t.on_done(i, 64, i % 2 == 0 ? 640'000'000 : 64'000'000, 0);
  }
  for (size_t k = 0; k < 4 * n; ++k) {
    auto w = t.pick(64);
    BOOST_REQUIRE(w.has_value());
    t.on_lease(*w, 64);
  }
  uint64_t fast = 0;
  uint64_t most_slow = 0;
  uint64_t most_fast = 0;
  for (size_t i = 0; i < n; ++i) {
    auto items = t.workers()[i].outstanding_items;
    if (i % 2 == 1) {
      fast += items;
      most_fast = std::max(most_fast, items);
    } else {
      most_slow = std::max(most_slow, items);
    }
  }
  // Exact: the fast ten times the slow per worker, 10/11 of the work.
  BOOST_TEST(fast >= 4 * n * 8 / 10, fast);
  BOOST_TEST(most_slow <= 2u);
  BOOST_TEST(most_fast <= 10u);
}

BOOST_AUTO_TEST_CASE(sampled_least_loaded_stays_within_1_15_of_the_best_at_ten_thousand) {
  // tools/bench/bench-routing's workload: 10,000 workers of rates 100..1,000
  // samples/s on 16 machines, a quarter of them holding a lease, every
  // decision leasing and the oldest lease past that finishing. Over 2,000
  // decisions the picked worker's expected delay is on average within
  // 1.15 of the least any worker offers (a scan).
  constexpr size_t n = 10'000;
  uint64_t now = 1'000'000;
  routing_table t{routing_policy::least_loaded, 300'000'000, 42};
  for (size_t i = 0; i < n; ++i)
    t.add_worker("w" + std::to_string(i), "h" + std::to_string(i % 16), now);
  for (size_t i = 0; i < n; ++i) {
    t.on_lease(i, 64);
    t.on_done(i, 64, 64'000'000'000ull / (100 + (i * 37) % 901), 0, now);
  }
  std::deque<size_t> leased;
  auto decide = [&] {
    now += 10'000;
    auto w = t.pick(64, now);
    BOOST_REQUIRE(w.has_value());
    t.on_lease(*w, 64);
    leased.push_back(*w);
    if (leased.size() > n / 4) {
      t.on_done(leased.front(), 64, 50'000'000, 0, now);
      leased.pop_front();
    }
  };
  for (size_t k = 0; k < n / 4; ++k)
    decide();
  double sum = 0;
  constexpr int decisions = 2000;
  for (int k = 0; k < decisions; ++k) {
    uint64_t at = now + 10'000;
    double best = t.expected_delay(0, 64, at);
    for (size_t i = 1; i < n; ++i)
      best = std::min(best, t.expected_delay(i, 64, at));
    auto w = t.pick(64, at);
    BOOST_REQUIRE(w.has_value());
    sum += t.expected_delay(*w, 64, at) / best;
    decide();
  }
  BOOST_TEST(sum / decisions <= 1.15);
  BOOST_TEST_MESSAGE("delay / best at 10,000 workers: " << sum / decisions);
}

BOOST_AUTO_TEST_SUITE_END()
