#include <boost/test/unit_test.hpp>

#include "train/copy_check.hpp"

using namespace stoker;

namespace {

image_batch batch_of(uint64_t id, const std::string& producer) {
  image_batch b;
  b.batch_id = id;
  b.sample_ids = {10, 11, 12};
  b.labels = {1, 0, 7};
  b.checksums = {0xa1, 0xb2, 0xc3};
  b.producer = producer;
  return b;
}

} // namespace

BOOST_AUTO_TEST_SUITE(copy_check)

BOOST_AUTO_TEST_CASE(a_copy_with_the_same_bits_is_the_same) {
  stoker::copy_check check;
  check.taken(batch_of(4, "w-a/0"));
  auto same = check.same(batch_of(4, "w-b/0"));
  BOOST_REQUIRE(same.has_value());
  BOOST_TEST(*same);
}

BOOST_AUTO_TEST_CASE(a_copy_whose_image_label_or_ids_differ_is_not) {
  stoker::copy_check check;
  check.taken(batch_of(4, "w-a/0"));
  auto image = batch_of(4, "w-b/0");
  image.checksums[2] ^= 1; // one image's bits
  auto label = batch_of(4, "w-b/0");
  label.labels[0] = 2;
  auto ids = batch_of(4, "w-b/0");
  std::swap(ids.sample_ids[0], ids.sample_ids[1]);
  for (auto* copy : {&image, &label, &ids}) {
    std::string first;
    auto same = check.same(*copy, &first);
    BOOST_REQUIRE(same.has_value());
    BOOST_TEST(!*same);
    BOOST_TEST(first == "w-a/0");
  }
}

BOOST_AUTO_TEST_CASE(only_the_most_recent_batches_are_kept) {
  stoker::copy_check check{2};
  for (uint64_t id : {1, 2, 3})
    check.taken(batch_of(id, "w-a/0"));
  BOOST_TEST(!check.same(batch_of(1, "w-b/0")).has_value());
  BOOST_TEST(check.same(batch_of(2, "w-b/0")).value_or(false));
  BOOST_TEST(check.same(batch_of(3, "w-b/0")).value_or(false));
  BOOST_TEST(!check.same(batch_of(9, "w-b/0")).has_value()); // never taken
}

BOOST_AUTO_TEST_SUITE_END()
