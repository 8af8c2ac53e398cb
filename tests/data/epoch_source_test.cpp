#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <vector>

#include "stoker/errors.hpp"
#include "data/epoch_source.hpp"

using namespace stoker;

namespace {

std::vector<work_item> drain(epoch_source& src) {
  std::vector<work_item> items;
  while (auto item = src.next())
    items.push_back(std::move(*item));
  return items;
}

} // namespace

BOOST_AUTO_TEST_SUITE(epoch_source)

BOOST_AUTO_TEST_CASE(hands_out_every_id_once_per_epoch) {
  source_spec spec{1000, 64, 3, true, 5};
  stoker::epoch_source src{spec};
  auto items = drain(src);
  BOOST_TEST(items.size() == 3 * 16); // ceil(1000 / 64) per epoch
  BOOST_TEST(src.total_batches() == 48u);
  BOOST_TEST(src.total_samples() == 3000u);
  std::vector<std::vector<int>> count(3, std::vector<int>(1000, 0));
  uint64_t expected_id = 0;
  for (auto& item : items) {
    BOOST_TEST(item.batch_id == expected_id++);
    for (auto id : item.sample_ids)
      ++count.at(item.epoch).at(id);
  }
  for (auto& epoch : count)
    for (int c : epoch)
      BOOST_REQUIRE(c == 1);
}

BOOST_AUTO_TEST_CASE(samples_in_shards_come_shard_by_shard_each_once_per_epoch) {
  source_spec spec{300, 25, 2, true, 9};
  spec.shards = {100, 50, 150};
  spec.shuffle_buffer = 40;
  stoker::epoch_source src{spec};
  auto items = drain(src);
  BOOST_REQUIRE(items.size() == 2u * 12);
  std::vector<std::vector<int>> count(2, std::vector<int>(300, 0));
  std::vector<uint64_t> firsts;
  std::vector<uint64_t> order; // epoch 0's
  for (auto& item : items) {
    for (auto id : item.sample_ids) {
      ++count.at(item.epoch).at(id);
      if (item.epoch == 0)
        order.push_back(id);
    }
    if (item.batch_id % 12 == 0)
      firsts.push_back(item.sample_ids.front());
  }
  // Shards hold more than a window: a window reads at most two of them
  // (a whole permutation would read all three in almost every window).
  for (size_t w = 0; w < order.size(); w += 40) {
    std::vector<bool> shard(3, false);
    for (size_t i = w; i < std::min(order.size(), w + 40); ++i)
      shard[order[i] < 100 ? 0 : order[i] < 150 ? 1 : 2] = true;
    BOOST_TEST(shard[0] + shard[1] + shard[2] <= 2, "window at " << w);
  }
  for (auto& epoch : count)
    for (int c : epoch)
      BOOST_REQUIRE(c == 1);
  BOOST_TEST(firsts[0] != firsts[1]); // each epoch its own order
  // Shards that do not add up to the dataset: one permutation instead.
  spec.shards = {100};
  stoker::epoch_source whole{spec};
  std::vector<int> once(300, 0);
  for (auto& item : drain(whole))
    if (item.epoch == 0)
      for (auto id : item.sample_ids)
        ++once.at(id);
  BOOST_TEST(std::count(once.begin(), once.end(), 1) == 300);
}

BOOST_AUTO_TEST_CASE(last_batch_of_an_epoch_holds_the_remainder) {
  stoker::epoch_source src{{10, 4, 1, false, 0}};
  auto items = drain(src);
  BOOST_REQUIRE(items.size() == 3u);
  BOOST_TEST(items[2].sample_ids == (std::vector<uint64_t>{8, 9}));
}

BOOST_AUTO_TEST_CASE(without_shuffle_ids_come_in_order) {
  stoker::epoch_source src{{6, 4, 1, false, 0}};
  auto items = drain(src);
  BOOST_TEST(items[0].sample_ids == (std::vector<uint64_t>{0, 1, 2, 3}));
}

BOOST_AUTO_TEST_CASE(shuffle_differs_per_epoch_and_repeats_per_seed) {
  auto first_batch = [](uint64_t seed, uint32_t epoch) {
    stoker::epoch_source src{{1000, 10, epoch + 1, true, seed}};
    work_item last;
    while (auto item = src.next())
      if (item->epoch == epoch && item->batch_id % 100 == 0)
        last = *item;
    return last.sample_ids;
  };
  BOOST_TEST(first_batch(1, 0) == first_batch(1, 0));
  BOOST_TEST(first_batch(1, 0) != first_batch(1, 1));
  BOOST_TEST(first_batch(1, 0) != first_batch(2, 0));
}

BOOST_AUTO_TEST_CASE(each_epoch_ends_with_the_test_split_in_order) {
  stoker::epoch_source src{{10, 4, 2, true, 7, 5}};
  auto items = drain(src);
  BOOST_REQUIRE(items.size() == 2u * (3 + 2));
  BOOST_TEST(src.batches_per_epoch() == 5u);
  BOOST_TEST(src.total_samples() == 20u); // training samples only
  std::vector<uint64_t> ids;
  for (size_t i = 0; i < items.size(); ++i) {
    BOOST_TEST(items[i].batch_id == i); // unique over the run
    bool test = i % 5 >= 3;
    BOOST_TEST((items[i].part == (test ? split::test : split::train)));
    BOOST_TEST(items[i].epoch == i / 5);
  }
  BOOST_TEST(items[3].sample_ids == (std::vector<uint64_t>{0, 1, 2, 3}));
  BOOST_TEST(items[4].sample_ids == (std::vector<uint64_t>{4}));
}

source_spec spec_of(uint64_t n, uint32_t batch, uint32_t epochs,
                    last_batch_policy tail, uint64_t eval = 0) {
  source_spec spec;
  spec.dataset_size = n;
  spec.batch_size = batch;
  spec.epochs = epochs;
  spec.seed = 11;
  spec.eval_size = eval;
  spec.last_batch = tail;
  return spec;
}

// Per rank: how many training batches each epoch gave it.
std::vector<std::vector<int>> batches_per_rank(const std::vector<work_item>& items,
                                               uint32_t world,
                                               uint32_t epochs) {
  std::vector<std::vector<int>> out(world, std::vector<int>(epochs, 0));
  for (auto& item : items)
    if (item.part == split::train)
      ++out.at(item.slot.rank).at(item.epoch);
  return out;
}

BOOST_AUTO_TEST_CASE(global_steps_give_each_rank_one_batch_in_rank_order) {
  stoker::epoch_source src{spec_of(48, 4, 2, last_batch_policy::partial), 3};
  auto items = drain(src);
  BOOST_REQUIRE(items.size() == 2u * 12);
  std::vector<std::vector<int>> seen(2, std::vector<int>(48, 0));
  std::vector<uint64_t> next_seq(3, 0);
  for (size_t i = 0; i < items.size(); ++i) {
    auto& item = items[i];
    BOOST_TEST(item.batch_id == i);
    BOOST_TEST(item.slot.rank == i % 3);
    // Each rank's batches come in its own sequence, epoch after epoch.
    BOOST_TEST(item.slot.seq == next_seq[item.slot.rank]++);
    BOOST_TEST(item.slot.phase_end == (i % 12 >= 9));
    BOOST_TEST(item.sample_ids.size() == 4u);
    for (auto id : item.sample_ids)
      ++seen.at(item.epoch).at(id);
  }
  for (auto& epoch : seen)
    for (int c : epoch)
      BOOST_REQUIRE(c == 1);
}

BOOST_AUTO_TEST_CASE(partial_tail_is_split_evenly_so_every_rank_steps_alike) {
  // 50 = 2 full steps of 2 x 10, then 10 left: 5 each.
  stoker::epoch_source src{spec_of(50, 10, 1, last_batch_policy::partial), 2};
  auto items = drain(src);
  BOOST_REQUIRE(items.size() == 6u);
  BOOST_TEST(items[4].sample_ids.size() == 5u);
  BOOST_TEST(items[5].sample_ids.size() == 5u);
  BOOST_TEST(batches_per_rank(items, 2, 1)[0][0] == 3);
  BOOST_TEST(batches_per_rank(items, 2, 1)[1][0] == 3);
  BOOST_TEST(src.total_samples() == 50u);
  // 41 = 2 steps, then 1 left: rank 0 gets it, rank 1 an empty batch that
  // still keeps the step (its all-reduce adds nothing).
  stoker::epoch_source odd{spec_of(41, 10, 1, last_batch_policy::partial), 2};
  auto tail = drain(odd);
  BOOST_REQUIRE(tail.size() == 6u);
  BOOST_TEST(tail[4].sample_ids.size() == 1u);
  BOOST_TEST(tail[5].sample_ids.empty());
  BOOST_TEST(tail[5].slot.phase_end);
}

BOOST_AUTO_TEST_CASE(drop_leaves_out_the_remainder_and_counts_it) {
  stoker::epoch_source src{spec_of(50, 10, 2, last_batch_policy::drop), 2};
  auto items = drain(src);
  BOOST_REQUIRE(items.size() == 2u * 4);
  for (auto& item : items)
    BOOST_TEST(item.sample_ids.size() == 10u);
  BOOST_TEST(src.plan().dropped_per_epoch() == 10u);
  BOOST_TEST(src.total_samples() == 80u);
  BOOST_TEST(!src.plan().check());
}

BOOST_AUTO_TEST_CASE(drop_without_a_whole_step_is_refused_by_name) {
  stoker::epoch_plan plan{spec_of(15, 10, 1, last_batch_policy::drop), 2};
  auto err = plan.check();
  BOOST_REQUIRE(err);
  BOOST_TEST(describe(err).find("pipeline.last-batch = \"drop\"")
             != std::string::npos);
  BOOST_TEST(describe(err).find("dataset-size = 15") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(pad_fills_the_last_step_from_the_epoch_start_flagged) {
  stoker::epoch_source src{spec_of(50, 10, 1, last_batch_policy::pad), 2};
  auto items = drain(src);
  BOOST_REQUIRE(items.size() == 6u);
  for (auto& item : items)
    BOOST_TEST(item.sample_ids.size() == 10u);
  BOOST_TEST(items[4].slot.padded == 0u); // positions 40..49
  BOOST_TEST(items[5].slot.padded == 10u); // 50..59: the first ten again
  BOOST_TEST(items[5].sample_ids
             == std::vector<uint64_t>(items[0].sample_ids.begin(),
                                      items[0].sample_ids.end()));
  BOOST_TEST(src.plan().padded_per_epoch() == 10u);
  BOOST_TEST(src.total_samples() == 50u); // padding counts once
}

BOOST_AUTO_TEST_CASE(test_batches_follow_the_steps_and_are_rank_zeros) {
  stoker::epoch_source src{spec_of(40, 10, 2, last_batch_policy::partial, 15),
                           2};
  auto items = drain(src);
  BOOST_REQUIRE(items.size() == 2u * (4 + 2));
  for (size_t i = 0; i < items.size(); ++i) {
    bool test = i % 6 >= 4;
    BOOST_TEST((items[i].part == (test ? split::test : split::train)));
    if (test)
      BOOST_TEST(items[i].slot.rank == 0u);
  }
  // Rank 0: two steps, two test batches per epoch; rank 1: two steps.
  BOOST_TEST(items[4].slot.seq == 2u);
  BOOST_TEST(items[5].slot.seq == 3u);
  BOOST_TEST(items[5].slot.phase_end);
  BOOST_TEST(items[6].slot.seq == 4u); // epoch 2, rank 0's first step
  BOOST_TEST(items[7].slot.seq == 2u); // epoch 2, rank 1's first step
}

BOOST_AUTO_TEST_SUITE_END()
