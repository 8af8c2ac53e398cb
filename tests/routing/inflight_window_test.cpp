#include <boost/test/unit_test.hpp>

#include "routing/inflight_window.hpp"

using namespace stoker;

namespace {

constexpr uint64_t ms = 1'000'000;

window_limits limits(uint32_t initial, uint32_t min, uint64_t max_batches) {
  window_limits l;
  l.initial = initial;
  l.min = min;
  l.batch_bytes = 1000;
  l.max_bytes = max_batches * 1000;
  l.idle_target = 0.02;
  l.period = 4;
  return l;
}

// One period of acks after the warm-up ack, each with `wait` and `step`.
void period(stoker::inflight_window& w, uint64_t wait, uint64_t step,
            uint64_t queued) {
  for (int i = 0; i < 4; ++i)
    w.on_ack(wait, step, queued);
}

void period_with_backlog(stoker::inflight_window& w, uint64_t wait,
                         uint64_t step, uint64_t backlog) {
  for (int i = 0; i < 4; ++i)
    w.on_ack(wait, step, 0, backlog);
}

} // namespace

BOOST_AUTO_TEST_SUITE(inflight_window)

BOOST_AUTO_TEST_CASE(widens_while_the_trainer_waits_for_data) {
  stoker::inflight_window w{limits(4, 2, 100)};
  w.on_ack(500 * ms, 50 * ms, 0); // the first wait is the warm-up: ignored
  BOOST_TEST(w.size() == 4u);
  period(w, 10 * ms, 50 * ms, 0); // idle 17% > 2%
  BOOST_TEST(w.size() == 5u);
  period(w, 10 * ms, 50 * ms, 0);
  BOOST_TEST(w.size() == 6u);
  BOOST_TEST(w.changes() == 2u);
  BOOST_TEST(w.last_change().find("widened 5 -> 6: trainer idle 16.7%")
               == 0u,
             w.last_change());
}

BOOST_AUTO_TEST_CASE(a_wait_with_batches_queued_does_not_widen) {
  stoker::inflight_window w{limits(4, 2, 100)};
  w.on_ack(0, 50 * ms, 0, 0);
  period_with_backlog(w, 10 * ms, 50 * ms, 1); // idle 17%, never ran dry
  BOOST_TEST(w.size() == 4u);
}

BOOST_AUTO_TEST_CASE(does_not_widen_while_every_worker_holds_work) {
  // 4 live workers: 8 items leased and not made is one in the making and
  // one queued each, so the trainer waits for the workers, not for leases.
  stoker::inflight_window w{limits(4, 2, 100)};
  w.on_ack(0, 50 * ms, 8, 0, 4);
  for (int i = 0; i < 4; ++i)
    w.on_ack(10 * ms, 50 * ms, 8, 0, 4); // idle 17%, ran dry
  BOOST_TEST(w.size() == 4u);
  BOOST_TEST(w.held_workers_full() == 1u);
  for (int i = 0; i < 4; ++i)
    w.on_ack(10 * ms, 50 * ms, 7, 0, 4); // a worker has room again
  BOOST_TEST(w.size() == 5u);
  BOOST_TEST(w.held_workers_full() == 1u);
}

BOOST_AUTO_TEST_CASE(stays_put_when_idle_is_under_the_target) {
  stoker::inflight_window w{limits(4, 2, 100)};
  w.on_ack(0, 50 * ms, 0);
  period(w, ms / 2, 50 * ms, 3); // idle ~1%: under target, above a quarter
  period(w, ms / 2, 50 * ms, 5); // queues grow, but the trainer did wait
  BOOST_TEST(w.size() == 4u);
  BOOST_TEST(w.changes() == 0u);
}

BOOST_AUTO_TEST_CASE(narrows_when_the_trainer_never_waits_and_queues_grow) {
  stoker::inflight_window w{limits(6, 2, 100)};
  w.on_ack(0, 50 * ms, 1);
  period(w, 0, 50 * ms, 2);
  BOOST_TEST(w.size() == 5u);
  period(w, 0, 50 * ms, 2); // queues flat: nothing to gain by narrowing
  BOOST_TEST(w.size() == 5u);
  for (uint64_t q = 3; q < 20; ++q)
    period(w, 0, 50 * ms, q);
  BOOST_TEST(w.size() == 2u); // never below the trainer's prefetch
  BOOST_TEST(w.last_change().find("narrowed 3 -> 2") == 0u, w.last_change());
}

BOOST_AUTO_TEST_CASE(narrows_when_batches_wait_in_front_of_the_trainer) {
  stoker::inflight_window w{limits(10, 2, 100)};
  w.on_ack(0, 50 * ms, 0, 0);
  for (int i = 0; i < 4; ++i)
    w.on_ack(0, 50 * ms, 0, 5); // never waited, 5 batches queued up
  BOOST_TEST(w.size() == 9u);
  BOOST_TEST(w.last_change().find("5 or more batches waited") != std::string::npos,
             w.last_change());
  // One ack with a single batch in front: double buffering, not excess.
  for (int i = 0; i < 4; ++i)
    w.on_ack(0, 50 * ms, 0, i == 2 ? 1 : 5);
  BOOST_TEST(w.size() == 9u);
}

BOOST_AUTO_TEST_CASE(a_group_rank_holds_while_another_rank_waits_for_data) {
  // Rank ahead of its group: it never waits for data and batches queue in
  // front of it (it waits at the all-reduce instead). Another rank's idle
  // above the target holds the window; under it, the window narrows.
  stoker::inflight_window w{limits(10, 2, 100)};
  w.on_ack(0, 50 * ms, 0, 0);
  w.set_group_idle(0.05);
  for (int i = 0; i < 4; ++i)
    w.on_ack(0, 50 * ms, 0, 5);
  BOOST_TEST(w.size() == 10u);
  BOOST_TEST(w.held_group_waited() == 1u);
  BOOST_TEST(w.last_idle() == 0.0);
  w.set_group_idle(0.01);
  for (int i = 0; i < 4; ++i)
    w.on_ack(0, 50 * ms, 0, 5);
  BOOST_TEST(w.size() == 9u);
  BOOST_TEST(w.held_group_waited() == 1u);
}

BOOST_AUTO_TEST_CASE(reports_its_idle_over_the_last_period) {
  stoker::inflight_window w{limits(4, 2, 100)};
  w.on_ack(0, 50 * ms, 0);
  period(w, 10 * ms, 40 * ms, 0);
  BOOST_TEST(w.last_idle() == 0.2, boost::test_tools::tolerance(1e-9));
}

BOOST_AUTO_TEST_CASE(never_passes_the_byte_budget) {
  stoker::inflight_window w{limits(4, 1, 7)};
  BOOST_TEST(w.max() == 7u);
  w.on_ack(0, 0, 0);
  for (int i = 0; i < 20; ++i)
    period(w, 90 * ms, 10 * ms, 0); // starving throughout
  BOOST_TEST(w.size() == 7u);
  BOOST_TEST(w.last_change().find("at router.max-inflight-bytes")
               != std::string::npos,
             w.last_change());
  stoker::inflight_window big_start{limits(50, 1, 7)};
  BOOST_TEST(big_start.size() == 7u); // the initial window is clamped too
}

BOOST_AUTO_TEST_CASE(the_floor_wins_over_a_tiny_budget) {
  stoker::inflight_window w{limits(1, 3, 1)}; // budget of one batch, prefetch 3
  BOOST_TEST(w.max() == 3u);
  BOOST_TEST(w.size() == 3u);
}

BOOST_AUTO_TEST_SUITE_END()
