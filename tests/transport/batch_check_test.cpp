#include <boost/test/unit_test.hpp>

#include "stoker/errors.hpp"
#include "data/synthetic_mapper.hpp"
#include "transport/batch_check.hpp"

using namespace stoker;

namespace {

image_batch good_batch() {
  synthetic_spec data;
  data.height = 4;
  data.width = 5;
  work_item item;
  item.batch_id = 12;
  item.sample_ids = {10, 11};
  auto batch = map_synthetic(data, item);
  batch.order = layout::chw; // as after the blur stage
  stamp_checksums(batch);
  batch.producer = "w";
  return batch;
}

const batch_expectation expect{4, 5, 3, 1000, layout::chw, dtype::float32,
                               100, 2};

std::string problem(const image_batch& b) {
  auto err = check_batch(b, expect);
  BOOST_REQUIRE(err);
  BOOST_TEST(is(err, errc::bad_batch));
  return describe(err);
}

} // namespace

BOOST_AUTO_TEST_SUITE(batch_check)

BOOST_AUTO_TEST_CASE(accepts_a_well_formed_batch) {
  BOOST_TEST(!check_batch(good_batch(), expect));
}

BOOST_AUTO_TEST_CASE(names_a_flipped_byte_by_its_sample) {
  auto b = good_batch();
  b.data[b.image_bytes() + 3] ^= 1; // second image
  auto msg = problem(b);
  BOOST_TEST(msg.find("sample 11: checksum mismatch") != std::string::npos);
  BOOST_TEST(msg.find("batch 12") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(rereads_a_batch_verified_here_only_when_asked) {
  auto b = good_batch();
  b.data[3] ^= 1;
  b.verified_here = true; // as if checksummed as written, in this process
  BOOST_TEST(!check_batch(b, expect));
  auto strict = expect;
  strict.recheck_verified = true; // trainer.recheck-images
  auto err = check_batch(b, strict);
  BOOST_TEST(describe(err).find("sample 10: checksum mismatch")
             != std::string::npos);
  b.labels[1] = 3; // every other check runs all the same
  BOOST_TEST(problem(b).find("sample 11 has label 3") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(names_a_wrong_label) {
  auto b = good_batch();
  b.labels[0] = 3;
  BOOST_TEST(problem(b).find("sample 10 has label 3, expected 10")
             != std::string::npos);
}

BOOST_AUTO_TEST_CASE(names_a_wrong_shape_and_layout) {
  auto b = good_batch();
  b.width = 6;
  BOOST_TEST(problem(b).find("image shape 4x6x3, expected 4x5x3")
             != std::string::npos);
  b = good_batch();
  b.order = layout::hwc;
  BOOST_TEST(problem(b).find("layout HWC, expected CHW") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(names_ids_and_epochs_outside_the_run) {
  auto b = good_batch();
  b.sample_ids[1] = 100;
  b.labels[1] = 100;
  BOOST_TEST(problem(b).find("sample id 100, expected below the dataset "
                             "size 100")
             != std::string::npos);
  b = good_batch();
  b.epoch = 2;
  BOOST_TEST(problem(b).find("epoch 2, expected below 2") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(names_a_truncated_buffer) {
  auto b = good_batch();
  b.data.resize(b.data.size() - 4);
  BOOST_TEST(problem(b).find("buffer of 476 bytes, expected 480")
             != std::string::npos);
}

BOOST_AUTO_TEST_CASE(real_labels_need_only_be_classes_and_test_ids_the_split) {
  auto data = expect;
  data.labels_from_ids = false;
  data.num_classes = 10;
  data.eval_size = 20;
  auto b = good_batch();
  b.labels = {7, 0}; // from the dataset, not id % classes
  BOOST_TEST(!check_batch(b, data));
  b.labels = {7, 10};
  auto err = check_batch(b, data);
  BOOST_REQUIRE(err);
  BOOST_TEST(describe(err).find("has label 10, expected 0 to 9")
             != std::string::npos);
  b.labels = {7, 0};
  b.part = split::test; // ids 10, 11 are below the test split's 20
  BOOST_TEST(!check_batch(b, data));
  b.sample_ids = {10, 25};
  err = check_batch(b, data);
  BOOST_REQUIRE(err);
  BOOST_TEST(describe(err).find("below the test split's size 20")
             != std::string::npos);
}

BOOST_AUTO_TEST_CASE(skipped_samples_are_checked_and_may_fill_a_batch) {
  auto b = good_batch();
  b.sample_ids.clear();
  b.labels.clear();
  b.checksums.clear();
  b.data.clear();
  b.skipped_ids = {3, 4};
  b.skipped_names = {"a.png", "b.png"};
  BOOST_TEST(!check_batch(b, expect)); // only unreadable files: no images
  b.skipped_ids = {3, 400};
  BOOST_TEST(problem(b).find("skipped sample id 400") != std::string::npos);
  b.skipped_ids = {3};
  BOOST_TEST(problem(b).find("2 skipped file names for 1") != std::string::npos);
  auto test = good_batch();
  test.part = split::test;
  BOOST_TEST(problem(test).find("this run does not evaluate")
             != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
