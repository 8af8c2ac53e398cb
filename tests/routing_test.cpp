#include <boost/test/unit_test.hpp>

#include "stoker/routing.hpp"

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
  BOOST_TEST((parse_routing_policy("least-loaded")
              == routing_policy::least_loaded));
  BOOST_TEST((parse_routing_policy("round-robin")
              == routing_policy::round_robin));
  BOOST_TEST(!parse_routing_policy("random").has_value());
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

BOOST_AUTO_TEST_CASE(picks_nothing_without_workers) {
  routing_table t{routing_policy::least_loaded};
  BOOST_TEST(!t.pick(64).has_value());
}

BOOST_AUTO_TEST_SUITE_END()
