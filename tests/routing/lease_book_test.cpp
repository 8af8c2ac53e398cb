#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <vector>

#include "routing/lease_book.hpp"
#include "routing/routing_table.hpp"

using namespace stoker;

namespace {

constexpr uint64_t ms = 1'000'000;

// Items with batch ids first..first+n-1, 4 samples each.
std::vector<work_item> items(uint64_t first, uint64_t n) {
  std::vector<work_item> out;
  for (uint64_t i = first; i < first + n; ++i) {
    work_item item;
    item.batch_id = i;
    item.sample_ids = {4 * i, 4 * i + 1, 4 * i + 2, 4 * i + 3};
    out.push_back(std::move(item));
  }
  return out;
}

routing_table table_of(size_t workers) {
  routing_table t{routing_policy::least_loaded};
  for (size_t w = 0; w < workers; ++w)
    t.add_worker("w" + std::to_string(w));
  return t;
}

std::vector<uint64_t> ids_of(const std::vector<lease_order>& orders) {
  std::vector<uint64_t> out;
  for (auto& o : orders)
    out.push_back(o.item.batch_id);
  return out;
}

using ids = std::vector<uint64_t>;

// Items of a group of `world` ranks as the source hands them out: global
// steps of one batch per rank, rank-major within a step.
std::vector<work_item> group_items(uint64_t first, uint64_t n,
                                   uint32_t world) {
  auto out = items(first, n);
  for (auto& item : out) {
    item.slot.rank = static_cast<uint32_t>(item.batch_id % world);
    item.slot.seq = item.batch_id / world;
  }
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(lease_book)

BOOST_AUTO_TEST_CASE(leases_in_order_up_to_the_window_and_asks_for_more) {
  stoker::lease_book book;
  auto table = table_of(2);
  auto first = book.lease(table, 4, 0);
  BOOST_TEST(first.orders.empty());
  BOOST_TEST(first.needs_items); // nothing pulled from the source yet
  book.add_pending(items(0, 6));
  auto leased = book.lease(table, 4, 0);
  BOOST_TEST(ids_of(leased.orders) == (ids{0, 1, 2, 3}));
  BOOST_TEST(!leased.needs_items); // the window is full
  BOOST_TEST(book.in_flight() == 4u);
  BOOST_TEST(book.pending() == 2u);
  // Least-loaded spreads them over both workers.
  BOOST_TEST(book.leased_to(0) == 2u);
  BOOST_TEST(book.leased_to(1) == 2u);
  BOOST_TEST(book.counters().leased == 4u);
}

BOOST_AUTO_TEST_CASE(an_ack_ends_the_lease_and_a_second_one_is_ignored) {
  stoker::lease_book book;
  auto table = table_of(1);
  book.add_pending(items(0, 2));
  book.lease(table, 2, 10 * ms);
  auto took = book.ack(1, 35 * ms);
  BOOST_REQUIRE(took);
  BOOST_TEST(*took == 25 * ms);
  BOOST_TEST(!book.ack(1, 40 * ms)); // a second copy's answer
  BOOST_TEST(!book.ack(7, 40 * ms)); // never leased
  BOOST_TEST(book.in_flight() == 1u);
  BOOST_TEST(book.counters().acked == 1u);
}

BOOST_AUTO_TEST_CASE(done_only_once_the_source_is_done_and_every_item_acked) {
  stoker::lease_book book;
  auto table = table_of(1);
  book.add_pending(items(0, 2));
  book.lease(table, 8, 0);
  BOOST_TEST(!book.done());
  book.ack(0, 0);
  book.ack(1, 0);
  BOOST_TEST(!book.done()); // the source may have more
  auto more = book.lease(table, 8, 0);
  BOOST_TEST(more.needs_items);
  book.add_pending({}); // it has none
  BOOST_TEST(book.source_done());
  BOOST_TEST(!book.lease(table, 8, 0).needs_items);
  BOOST_TEST(book.done());
}

BOOST_AUTO_TEST_CASE(a_lost_workers_batches_go_to_another_even_those_it_sent) {
  stoker::lease_book book;
  auto table = table_of(2);
  book.add_pending(items(0, 4));
  book.lease(table, 4, 0);
  BOOST_REQUIRE(book.leased_to(0) == 2u);
  // Worker 0 made and sent its batches, then died before the trainer
  // acknowledged them: they are still leased, so they go to worker 1.
  size_t held = 0;
  auto relayed = book.lose_worker(0, table, 5 * ms, &held);
  BOOST_TEST(held == 2u);
  BOOST_TEST(relayed.size() == 2u);
  for (auto& o : relayed)
    BOOST_TEST(o.worker == 1u);
  BOOST_TEST(!table.workers()[0].alive);
  BOOST_TEST(book.leased_to(1) == 4u);
  BOOST_TEST(book.in_flight() == 4u); // nothing lost
  BOOST_TEST(book.counters().released == 2u);
  // The dead worker's copy reaches the trainer first: the lease ends; the
  // re-leased copy's answer is then a duplicate and ignored.
  auto id = relayed.front().item.batch_id;
  BOOST_TEST(static_cast<bool>(book.ack(id, 6 * ms)));
  BOOST_TEST(!book.ack(id, 9 * ms));
  // Losing it twice changes nothing.
  BOOST_TEST(book.lose_worker(0, table, 10 * ms).empty());
}

BOOST_AUTO_TEST_CASE(with_no_live_worker_items_wait_as_orphans_for_one) {
  stoker::lease_book book;
  auto table = table_of(1);
  book.add_pending(items(0, 3));
  book.lease(table, 3, 0);
  auto relayed = book.lose_worker(0, table, ms);
  BOOST_TEST(relayed.empty()); // nobody to take them
  BOOST_TEST(book.orphans() == 3u);
  BOOST_TEST(book.in_flight() == 3u); // still leased: the window counts them
  BOOST_TEST(!book.drained());
  BOOST_TEST(book.lease(table, 8, ms).orders.empty());
  BOOST_TEST(book.relay_orphans(table, ms).empty()); // still nobody
  // One orphan's first copy arrives after all: it waits no more.
  BOOST_TEST(static_cast<bool>(book.ack(1, 2 * ms)));
  BOOST_TEST(book.orphans() == 2u);
  // A worker joins: the orphans go to it, in batch order.
  table.add_worker("late", "", 3 * ms);
  auto taken = book.relay_orphans(table, 3 * ms);
  BOOST_TEST(ids_of(taken) == (ids{0, 2}));
  for (auto& o : taken)
    BOOST_TEST(o.worker == 1u);
  BOOST_TEST(book.orphans() == 0u);
  BOOST_TEST(book.counters().released == 2u);
}

BOOST_AUTO_TEST_CASE(hedging_leases_a_straggler_once_to_another_worker) {
  stoker::lease_book book;
  auto table = table_of(2);
  book.add_pending(items(0, 8));
  book.lease(table, 8, 0);
  BOOST_TEST(book.hedge(table, 100 * ms, 3.0).empty()); // no history yet
  for (uint64_t id = 0; id < 8; ++id)
    book.ack(id, 10 * ms); // eight batches of 10 ms
  book.add_pending(items(8, 2));
  book.lease(table, 8, 20 * ms);
  BOOST_TEST(book.hedge(table, 45 * ms, 3.0).empty()); // 25 ms: not late
  auto hedged = book.hedge(table, 60 * ms, 3.0);       // 40 ms > 3 x 10
  auto late = ids_of(hedged);
  std::sort(late.begin(), late.end());
  BOOST_TEST(late == (ids{8, 9}));
  BOOST_TEST(book.counters().hedged == 2u);
  BOOST_TEST(book.hedge(table, 90 * ms, 3.0).empty()); // once per batch
  BOOST_TEST(book.hedge(table, 90 * ms, 0.0).empty()); // off
  // Either copy ends the lease; the other's answer is ignored.
  BOOST_TEST(static_cast<bool>(book.ack(8, 95 * ms)));
  BOOST_TEST(!book.ack(8, 96 * ms));
}

BOOST_AUTO_TEST_CASE(a_hedged_copy_goes_to_a_worker_other_than_the_first) {
  stoker::lease_book book;
  auto table = table_of(2);
  book.add_pending(items(0, 8));
  book.lease(table, 8, 0);
  for (uint64_t id = 0; id < 8; ++id)
    book.ack(id, 10 * ms);
  book.add_pending(items(8, 1));
  auto first = book.lease(table, 1, 20 * ms);
  BOOST_REQUIRE(first.orders.size() == 1u);
  auto hedged = book.hedge(table, 100 * ms, 2.0);
  BOOST_REQUIRE(hedged.size() == 1u);
  BOOST_TEST(hedged[0].worker != first.orders[0].worker);
}

BOOST_AUTO_TEST_CASE(a_trainer_without_checkpoints_lost_changes_nothing) {
  stoker::lease_book book;
  auto table = table_of(1);
  book.trainer_joined(false, 0, {});
  book.add_pending(items(0, 3));
  book.lease(table, 2, 0);
  BOOST_TEST(book.lose_trainer(ms) == 0u); // the caller fails the run
  BOOST_TEST(!book.trainer_lost_at());
  BOOST_TEST(book.in_flight() == 2u);
  BOOST_TEST(book.pending() == 1u);
}

BOOST_AUTO_TEST_CASE(a_trainer_with_checkpoints_gets_back_all_it_did_not_save) {
  stoker::lease_book book;
  auto table = table_of(2);
  book.trainer_joined(true, 0, {});
  book.add_pending(items(0, 8));
  book.lease(table, 6, 0);
  book.ack(0, ms);
  book.ack(1, ms);
  book.saved(); // its checkpoint holds 0 and 1
  book.ack(2, 2 * ms);
  BOOST_TEST(book.unsaved() == 1u);
  book.lose_worker(1, table, 2 * ms); // some leases move meanwhile
  // The trainer dies: 2 (acked, unsaved) and 3..5 (leased) come back to
  // the front of the queue, in batch order, before 6 and 7.
  BOOST_TEST(book.lose_trainer(3 * ms) == 4u);
  BOOST_TEST(book.trainer_lost_at().value_or(0) == 3 * ms);
  BOOST_TEST(book.in_flight() == 0u);
  BOOST_TEST(book.unsaved() == 0u);
  BOOST_TEST(book.pending() == 6u);
  BOOST_TEST(book.front_pending()->batch_id == 2u);
  BOOST_TEST(!book.done());
  // Nothing moves until a trainer is back.
  BOOST_TEST(book.lease(table, 8, 4 * ms).orders.empty());
  book.trainer_joined(true, 2, {}); // it resumed from the checkpoint
  auto leased = book.lease(table, 8, 5 * ms);
  BOOST_TEST(ids_of(leased.orders) == (ids{2, 3, 4, 5, 6, 7}));
}

BOOST_AUTO_TEST_CASE(a_resumed_trainers_batches_are_never_leased_again) {
  stoker::lease_book book;
  auto table = table_of(1);
  // Restarted with --resume: it trained on 0..4 and 7 before.
  book.trainer_joined(true, 5, {7});
  book.add_pending(items(0, 10));
  auto leased = book.lease(table, 10, 0);
  BOOST_TEST(ids_of(leased.orders) == (ids{5, 6, 8, 9}));
  BOOST_TEST(book.counters().resumed == 6u);
  BOOST_TEST(book.counters().leased == 4u);
}

BOOST_AUTO_TEST_CASE(leases_marked_for_the_trainers_gpu_are_counted) {
  stoker::lease_book book;
  auto table = table_of(1);
  book.add_pending(items(0, 4));
  bool every_other = false;
  auto leased = book.lease(table, 4, 0, [&] {
    every_other = !every_other;
    return every_other;
  });
  BOOST_REQUIRE(leased.orders.size() == 4u);
  BOOST_TEST(leased.orders[0].item.blur_on_trainer);
  BOOST_TEST(!leased.orders[1].item.blur_on_trainer);
  BOOST_TEST(book.counters().gpu_blur == 2u);
  // A re-leased item keeps its mark.
  table.add_worker("w1");
  auto relayed = book.lose_worker(0, table, ms);
  BOOST_REQUIRE(relayed.size() == 4u);
  BOOST_TEST(relayed[0].item.blur_on_trainer);
}

BOOST_AUTO_TEST_CASE(each_rank_keeps_its_own_window) {
  stoker::lease_book book;
  auto table = table_of(4);
  book.add_pending(group_items(0, 12, 2));
  // Rank 0 may have 2 in flight, rank 1 four.
  auto leased = book.lease(table, {rank_budget{2, 0}, rank_budget{4, 0}}, 0);
  BOOST_TEST(book.in_flight(0) == 2u);
  BOOST_TEST(book.in_flight(1) == 4u);
  for (auto& o : leased.orders) // each rank's items in its own order
    BOOST_TEST((o.item.slot.rank == 0 ? o.item.slot.seq < 2
                                      : o.item.slot.seq < 4));
  // An ack frees a slot of its rank only.
  book.ack(0, ms); // rank 0's first
  auto more = book.lease(table, {rank_budget{2, 0}, rank_budget{4, 0}}, ms);
  BOOST_TEST(ids_of(more.orders) == (ids{4}));
}

BOOST_AUTO_TEST_CASE(serves_the_rank_closest_to_starving_first) {
  stoker::lease_book book;
  auto table = table_of(2);
  book.add_pending(group_items(0, 12, 2));
  // Both ranks step every 100 ms; rank 1 holds three batches, rank 0 one:
  // rank 0 runs dry first, so it gets the next leases.
  book.lease(table, {rank_budget{1, 100 * ms}, rank_budget{3, 100 * ms}}, 0);
  BOOST_TEST(book.in_flight(0) == 1u);
  BOOST_TEST(book.in_flight(1) == 3u);
  auto next = book.lease(table,
                         {rank_budget{4, 100 * ms}, rank_budget{4, 100 * ms}},
                         0);
  BOOST_REQUIRE(next.orders.size() == 4u);
  // Rank 0 (1 buffered) twice until it is level with rank 1 (3 buffered),
  // then turn about, the older item first.
  BOOST_TEST(next.orders[0].item.slot.rank == 0u);
  BOOST_TEST(next.orders[1].item.slot.rank == 0u);
  BOOST_TEST(next.orders[2].item.slot.rank == 0u); // 3 vs 3: id 6 < id 7
  BOOST_TEST(next.orders[3].item.slot.rank == 1u);
}

BOOST_AUTO_TEST_CASE(a_rank_whose_batches_last_longer_is_less_urgent) {
  stoker::lease_book book;
  auto table = table_of(2);
  book.add_pending(group_items(0, 12, 2));
  book.lease(table, {rank_budget{2, 0}, rank_budget{2, 0}}, 0);
  // Two buffered each; rank 1's step takes 4x rank 0's: rank 0 goes first
  // until its buffer lasts as long.
  auto next = book.lease(table,
                         {rank_budget{6, 50 * ms}, rank_budget{3, 200 * ms}},
                         0);
  BOOST_REQUIRE(!next.orders.empty());
  BOOST_TEST(next.orders[0].item.slot.rank == 0u);
  BOOST_TEST(book.in_flight(0) == 6u);
  BOOST_TEST(book.in_flight(1) == 3u);
}

BOOST_AUTO_TEST_CASE(items_go_to_workers_near_their_trainer) {
  stoker::lease_book book;
  routing_table table{routing_policy::least_loaded};
  table.add_worker("a/0", "host-a");
  table.add_worker("b/0", "host-b");
  table.set_trainer_hosts({"host-a", "host-b"});
  book.set_trainer_host(0, "host-a");
  book.set_trainer_host(1, "host-b");
  book.add_pending(group_items(0, 2, 2));
  // No rates yet: every worker's delay ties, and locality decides.
  auto leased = book.lease(table, {rank_budget{1, 0}, rank_budget{1, 0}}, 0);
  BOOST_REQUIRE(leased.orders.size() == 2u);
  for (auto& o : leased.orders)
    BOOST_TEST(o.worker == o.item.slot.rank);
}

BOOST_AUTO_TEST_CASE(a_lost_trainer_gets_its_items_back_per_rank_in_order) {
  stoker::lease_book book;
  auto table = table_of(2);
  book.trainer_joined(true, 0, {});
  book.add_pending(group_items(0, 4, 1));
  book.lease(table, 3, 0);
  BOOST_TEST(book.lose_trainer(ms) == 3u);
  BOOST_TEST(book.pending() == 4u);
  BOOST_TEST(book.front_pending()->batch_id == 0u);
  book.trainer_joined(true, 0, {});
  BOOST_TEST(ids_of(book.lease(table, 8, 2 * ms).orders)
             == (ids{0, 1, 2, 3}));
}

BOOST_AUTO_TEST_CASE(a_group_goes_back_to_what_its_checkpoint_holds) {
  stoker::lease_book book;
  auto table = table_of(2);
  book.group_joined(true, {0, 0});
  book.add_pending(group_items(0, 8, 2)); // steps 0-3 of ranks 0 and 1
  book.lease(table, {rank_budget{4, 0}, rank_budget{4, 0}}, 0);
  for (uint64_t id = 0; id < 6; ++id) // steps 0-2 acked on both ranks
    book.ack(id, ms);
  // Rank 0's checkpoint holds each rank's steps below 2; the acks of step
  // 2 came before it said so, and stay.
  book.saved(std::vector<uint64_t>{2, 2});
  BOOST_TEST(book.unsaved() == 2u);
  // A rank is lost: step 2 (acked, not saved) and step 3 (leased) wait.
  BOOST_TEST(book.lose_trainer(2 * ms) == 4u);
  BOOST_TEST(book.lease(table, {rank_budget{8, 0}, rank_budget{8, 0}},
                        3 * ms)
               .orders.empty()); // until the group is back
  // Back from the checkpoint: each rank trained below seq 2.
  book.group_joined(true, {2, 2});
  auto again = book.lease(table, {rank_budget{8, 0}, rank_budget{8, 0}},
                          4 * ms);
  auto leased = ids_of(again.orders);
  std::sort(leased.begin(), leased.end());
  BOOST_TEST(leased == (ids{4, 5, 6, 7}));
}

BOOST_AUTO_TEST_CASE(a_resumed_group_skips_what_each_rank_trained) {
  stoker::lease_book book;
  auto table = table_of(2);
  book.group_joined(true, {3, 1}); // rank 0 did seq 0-2, rank 1 seq 0
  book.add_pending(group_items(0, 8, 2));
  auto leased = ids_of(
    book.lease(table, {rank_budget{8, 0}, rank_budget{8, 0}}, 0).orders);
  std::sort(leased.begin(), leased.end());
  BOOST_TEST(leased == (ids{3, 5, 6, 7})); // rank 0: seq 3; rank 1: 1-3
  BOOST_TEST(book.counters().resumed == 4u);
}

BOOST_AUTO_TEST_CASE(ten_thousand_workers_a_tenth_lost_every_batch_acked_once) {
  stoker::lease_book book;
  routing_table table{routing_policy::least_loaded, 300'000'000, 5};
  constexpr size_t n = 10'000;
  for (size_t w = 0; w < n; ++w)
    table.add_worker("w" + std::to_string(w));
  constexpr uint64_t batches = 30'000;
  book.add_pending(items(0, batches));
  book.add_pending({});
  auto first = book.lease(table, static_cast<uint32_t>(batches), 0);
  BOOST_REQUIRE_EQUAL(first.orders.size(), batches);
  uint64_t most = 0;
  for (size_t w = 0; w < n; ++w)
    most = std::max<uint64_t>(most, book.leased_to(w));
  BOOST_TEST(most <= 5u); // 3 each on average: nobody swamped
  // Every tenth worker dies holding its batches: each goes to a live one.
  for (size_t w = 0; w < n; w += 10) {
    size_t held = 0;
    for (auto& o : book.lose_worker(w, table, ms, &held))
      BOOST_REQUIRE_MESSAGE(table.workers()[o.worker].alive,
                            "batch " << o.item.batch_id << " relayed to lost "
                                     << o.worker);
  }
  BOOST_TEST(book.in_flight() == batches); // nothing lost
  BOOST_TEST(book.orphans() == 0u);
  for (size_t w = 0; w < n; w += 10)
    BOOST_TEST_REQUIRE(book.leased_to(w) == 0u);
  for (uint64_t id = 0; id < batches; ++id)
    BOOST_REQUIRE(book.ack(id, 2 * ms).has_value());
  BOOST_TEST(book.done());
  BOOST_TEST(book.counters().acked == batches);
}

BOOST_AUTO_TEST_SUITE_END()
