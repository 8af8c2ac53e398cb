#include <boost/test/unit_test.hpp>

#include <vector>

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

BOOST_AUTO_TEST_SUITE_END()
