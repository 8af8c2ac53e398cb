#include <boost/test/unit_test.hpp>

#include <caf/actor_system.hpp>
#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>
#include <caf/make_message.hpp>

#include "stoker/messages.hpp"
#include "data/synthetic_mapper.hpp"
#include "node/node_config.hpp"
#include "transport/batch_check.hpp"

using namespace stoker;

namespace {

struct fixture {
  node_config cfg;
  caf::actor_system sys{cfg};

  template <class T>
  T round_trip(T x) {
    std::vector<char> buf;
    caf::binary_serializer sink{sys, buf};
    auto err = sink(x);
    BOOST_REQUIRE(!err);
    T y;
    caf::binary_deserializer source{sys, buf};
    err = source(y);
    BOOST_REQUIRE(!err);
    return y;
  }
};

image_batch sample_batch() {
  synthetic_spec data;
  data.height = 8;
  data.width = 6;
  work_item item;
  item.epoch = 3;
  item.batch_id = 77;
  item.sample_ids = {4, 5, 6};
  auto batch = map_synthetic(data, item);
  stamp_checksums(batch);
  batch.producer = "worker-1";
  return batch;
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(messages, fixture)

BOOST_AUTO_TEST_CASE(work_item_round_trips_through_the_binary_serializer) {
  work_item item;
  item.epoch = 2;
  item.batch_id = 1234567890123ull;
  item.sample_ids = {1, 2, 3, 1ull << 40};
  auto copy = round_trip(item);
  BOOST_TEST(copy.epoch == item.epoch);
  BOOST_TEST(copy.batch_id == item.batch_id);
  BOOST_TEST(copy.sample_ids == item.sample_ids);
}

BOOST_AUTO_TEST_CASE(image_batch_round_trips_bit_for_bit) {
  auto batch = sample_batch();
  auto copy = round_trip(batch);
  BOOST_TEST(copy.sample_ids == batch.sample_ids);
  BOOST_TEST(copy.labels == batch.labels);
  BOOST_TEST((copy.type == batch.type && copy.order == batch.order));
  BOOST_TEST(copy.height == 8u);
  BOOST_TEST(copy.width == 6u);
  BOOST_TEST(copy.channels == 3u);
  BOOST_TEST(copy.data == batch.data);
  BOOST_TEST(copy.checksums == batch.checksums);
  BOOST_TEST(copy.producer == "worker-1");
  BOOST_TEST(!check_batch(copy, {8, 6, 3, 1000, layout::hwc}));
}

BOOST_AUTO_TEST_CASE(a_serialized_batch_is_never_taken_as_verified) {
  // The flag that spares the trainer's checksum pass must not survive a
  // trip through another process: a peer cannot set it.
  auto batch = sample_batch();
  batch.verified_here = true;
  BOOST_TEST(!round_trip(batch).verified_here);
}

BOOST_AUTO_TEST_CASE(a_whole_message_round_trips) {
  auto batch = sample_batch();
  auto msg = caf::make_message(batch);
  std::vector<char> buf;
  caf::binary_serializer sink{sys, buf};
  BOOST_REQUIRE(!sink(msg));
  caf::message copy;
  caf::binary_deserializer source{sys, buf};
  BOOST_REQUIRE(!source(copy));
  BOOST_REQUIRE(copy.match_elements<image_batch>());
  BOOST_TEST(copy.get_as<image_batch>(0).data == batch.data);
}

BOOST_AUTO_TEST_CASE(worker_report_round_trips) {
  worker_report r;
  r.batch_id = 9;
  r.samples = 64;
  r.busy_ns = 123456789;
  r.mailbox_depth = 3;
  r.stages = {{"python(aug:wide)", 64, 5'000'000}};
  auto copy = round_trip(r);
  BOOST_TEST(copy.batch_id == 9u);
  BOOST_TEST(copy.samples == 64u);
  BOOST_TEST(copy.busy_ns == 123456789u);
  BOOST_TEST(copy.mailbox_depth == 3u);
  BOOST_REQUIRE_EQUAL(copy.stages.size(), 1u);
  BOOST_TEST(copy.stages[0].stage == "python(aug:wide)");
  BOOST_TEST(copy.stages[0].ns == 5'000'000u);
}

BOOST_AUTO_TEST_SUITE_END()
