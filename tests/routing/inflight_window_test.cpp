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

// An ack as a trainer reports it, field by field.
struct ack : window_ack {
  ack(uint64_t wait, uint64_t step) {
    wait_ns = wait;
    step_ns = step;
  }
  ack& queued(uint64_t n) { queued_items = n; return *this; }
  ack& backlog(uint64_t n) { trainer_backlog = n; return *this; }
  ack& live(uint64_t n) { live_workers = n; return *this; }
  ack& of_rank(uint32_t r) { rank = r; return *this; }
  ack& collective(uint64_t ns) { collective_ns = ns; return *this; }
};

// One period of acks after the warm-up ack, each with `wait` and `step`.
void period(stoker::inflight_window& w, uint64_t wait, uint64_t step,
            uint64_t queued) {
  for (int i = 0; i < 4; ++i)
    w.on_ack(ack(wait, step).queued(queued));
}

void period_with_backlog(stoker::inflight_window& w, uint64_t wait,
                         uint64_t step, uint64_t backlog) {
  for (int i = 0; i < 4; ++i)
    w.on_ack(ack(wait, step).backlog(backlog));
}

} // namespace

BOOST_AUTO_TEST_SUITE(inflight_window)

BOOST_AUTO_TEST_CASE(widens_while_the_trainer_waits_for_data) {
  stoker::inflight_window w{limits(4, 2, 100)};
  w.on_ack(ack(500 * ms, 50 * ms)); // the first wait is the warm-up: ignored
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
  w.on_ack(ack(0, 50 * ms));
  period_with_backlog(w, 10 * ms, 50 * ms, 1); // idle 17%, never ran dry
  BOOST_TEST(w.size() == 4u);
}

BOOST_AUTO_TEST_CASE(does_not_widen_while_every_worker_holds_work) {
  // 4 live workers: 8 items leased and not made is one in the making and
  // one queued each, so the trainer waits for the workers, not for leases.
  stoker::inflight_window w{limits(4, 2, 100)};
  w.on_ack(ack(0, 50 * ms).queued(8).live(4));
  for (int i = 0; i < 4; ++i)
    w.on_ack(ack(10 * ms, 50 * ms).queued(8).live(4)); // idle 17%, ran dry
  BOOST_TEST(w.size() == 4u);
  BOOST_TEST(w.held_workers_full() == 1u);
  for (int i = 0; i < 4; ++i)
    w.on_ack(ack(10 * ms, 50 * ms).queued(7).live(4)); // a worker has room
  BOOST_TEST(w.size() == 5u);
  BOOST_TEST(w.held_workers_full() == 1u);
}

BOOST_AUTO_TEST_CASE(stays_put_when_idle_is_under_the_target) {
  stoker::inflight_window w{limits(4, 2, 100)};
  w.on_ack(ack(0, 50 * ms));
  period(w, ms / 2, 50 * ms, 3); // idle ~1%: under target, above a quarter
  period(w, ms / 2, 50 * ms, 5); // queues grow, but the trainer did wait
  BOOST_TEST(w.size() == 4u);
  BOOST_TEST(w.changes() == 0u);
}

BOOST_AUTO_TEST_CASE(narrows_when_the_trainer_never_waits_and_queues_grow) {
  stoker::inflight_window w{limits(6, 2, 100)};
  w.on_ack(ack(0, 50 * ms).queued(1));
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
  w.on_ack(ack(0, 50 * ms));
  for (int i = 0; i < 4; ++i)
    w.on_ack(ack(0, 50 * ms).backlog(5)); // never waited, 5 queued up
  BOOST_TEST(w.size() == 9u);
  BOOST_TEST(w.last_change().find("5 or more batches waited") != std::string::npos,
             w.last_change());
  // One ack with a single batch in front: double buffering, not excess.
  for (int i = 0; i < 4; ++i)
    w.on_ack(ack(0, 50 * ms).backlog(i == 2 ? 1 : 5));
  BOOST_TEST(w.size() == 9u);
}

// A group of `ranks` (period 4): one decision per 4 x 3 of its steps.
window_limits group_limits(uint32_t initial, uint32_t ranks) {
  auto l = limits(initial, 2, 100);
  l.ranks = ranks;
  return l;
}

// One of the group's steps: rank `dry` waited `wait` for data (and had
// nothing in front of it), the others waited as long at the collective
// above their steady `lead`; every rank but `dry` had `backlog` queued.
void group_step(stoker::inflight_window& w, uint32_t ranks, uint32_t dry,
                uint64_t wait, uint64_t lead, uint64_t backlog) {
  for (uint32_t r = 0; r < ranks; ++r) {
    bool starved = r == dry && wait > 0;
    w.on_ack(ack(starved ? wait : 0, 50 * ms)
               .of_rank(r)
               .collective(starved ? 0 : wait + lead)
               .backlog(starved ? 0 : backlog));
  }
}

BOOST_AUTO_TEST_CASE(a_group_widens_when_one_rank_holds_up_its_steps) {
  // 64 ranks: one runs dry now and then, for 5 ms. Each rank's own idle
  // is tiny; the group's steps waited 5 ms in 4 of 12 (3.2% > 2%).
  constexpr uint32_t ranks = 64;
  stoker::inflight_window w{group_limits(8, ranks)};
  group_step(w, ranks, 0, 0, 0, 3); // warm-up ack (rank 0's) ignored
  for (int s = 0; s < 12; ++s)
    group_step(w, ranks, static_cast<uint32_t>(s * 5 % ranks),
               s % 3 == 0 ? 5 * ms : 0, 0, 3);
  BOOST_TEST(w.last_idle() < 0.001);
  BOOST_TEST(w.last_exposed_idle() > 0.02);
  BOOST_TEST(w.size() == 9u); // one more batch on every rank
  BOOST_TEST(w.last_change().find("group's steps waited") != std::string::npos,
             w.last_change());
}

BOOST_AUTO_TEST_CASE(a_steady_lead_at_the_collective_is_not_a_data_wait) {
  // Rank 1 always finishes its step 20 ms before rank 0 and waits for it:
  // compute, not data. The window narrows as for a lone trainer that
  // never waited with batches in front of it.
  stoker::inflight_window w{group_limits(8, 2)};
  for (int p = 0; p < 3; ++p)
    for (int s = 0; s < 12; ++s) {
      w.on_ack(ack(0, 50 * ms).of_rank(0).backlog(3));
      w.on_ack(ack(0, 30 * ms).of_rank(1).collective(20 * ms).backlog(3));
    }
  BOOST_TEST(w.last_exposed_idle() == 0.0);
  BOOST_TEST(w.size() == 7u); // two quiet periods, then one narrowing
  BOOST_TEST(w.narrowed() == 1u);
}

BOOST_AUTO_TEST_CASE(a_group_narrows_only_after_two_quiet_periods) {
  constexpr uint32_t ranks = 4;
  stoker::inflight_window w{group_limits(10, ranks)};
  group_step(w, ranks, 0, 0, 0, 5); // warm-up ack ignored
  for (int s = 0; s < 12; ++s)
    group_step(w, ranks, 0, 0, 0, 5);
  BOOST_TEST(w.size() == 10u); // one quiet period: a lull, maybe
  BOOST_TEST(w.held_group_waited() == 1u);
  for (int s = 0; s < 12; ++s)
    group_step(w, ranks, 0, 0, 0, 5);
  BOOST_TEST(w.size() == 9u);
  // A period in which the group's steps waited (rank 2 ran dry once for
  // 2 ms: 0.3%, above a quarter of the target) holds it: no narrowing.
  for (int s = 0; s < 12; ++s)
    group_step(w, ranks, 2, s == 4 ? 2 * ms : 0, 0, 5);
  BOOST_TEST(w.size() == 9u);
}

BOOST_AUTO_TEST_CASE(reports_its_idle_over_the_last_period) {
  stoker::inflight_window w{limits(4, 2, 100)};
  w.on_ack(ack(0, 50 * ms));
  period(w, 10 * ms, 40 * ms, 0);
  BOOST_TEST(w.last_idle() == 0.2, boost::test_tools::tolerance(1e-9));
}

BOOST_AUTO_TEST_CASE(never_passes_the_byte_budget) {
  stoker::inflight_window w{limits(4, 1, 7)};
  BOOST_TEST(w.max() == 7u);
  w.on_ack(ack(0, 0));
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
