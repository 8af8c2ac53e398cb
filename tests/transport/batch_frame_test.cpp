#include <boost/test/unit_test.hpp>

#include <cstring>

#include "stoker/errors.hpp"
#include "data/synthetic_mapper.hpp"
#include "transport/batch_check.hpp"
#include "transport/batch_frame.hpp"

using namespace stoker;

namespace {

image_batch sample() {
  synthetic_spec data;
  data.height = 6;
  data.width = 7;
  work_item item;
  item.epoch = 2;
  item.batch_id = 41;
  item.sample_ids = {5, 9, 13};
  auto batch = map_synthetic(data, item);
  stamp_checksums(batch);
  batch.producer = "worker-a/1";
  return batch;
}

// Encodes `batch`'s head and decodes it again, as a receiver would.
caf::error round_trip(const image_batch& batch, image_batch& out) {
  std::vector<char> head;
  encode_frame_head(batch, head);
  auto prefix = parse_frame_prefix(head.data(), batch.data.size());
  if (!prefix)
    return prefix.error();
  BOOST_TEST(prefix->header_bytes + frame_prefix_bytes == head.size());
  return decode_frame_header(head.data() + frame_prefix_bytes,
                             prefix->header_bytes, prefix->data_bytes, out);
}

} // namespace

BOOST_AUTO_TEST_SUITE(batch_frame)

BOOST_AUTO_TEST_CASE(header_round_trips_every_field_but_the_data) {
  auto batch = sample();
  image_batch out;
  auto err = round_trip(batch, out);
  BOOST_TEST(!err, describe(err));
  BOOST_TEST(out.epoch == batch.epoch);
  BOOST_TEST(out.batch_id == batch.batch_id);
  BOOST_TEST(out.sample_ids == batch.sample_ids);
  BOOST_TEST(out.labels == batch.labels);
  BOOST_TEST(out.checksums == batch.checksums);
  BOOST_TEST(out.producer == batch.producer);
  BOOST_TEST((out.type == batch.type));
  BOOST_TEST((out.order == batch.order));
  BOOST_TEST(out.height == 6u);
  BOOST_TEST(out.width == 7u);
  BOOST_TEST(out.channels == 3u);
  BOOST_TEST(out.data.empty());
  BOOST_TEST((out.part == split::train));
  BOOST_TEST(out.skipped_ids.empty());
}

BOOST_AUTO_TEST_CASE(a_decoded_header_is_never_taken_as_verified) {
  auto batch = sample();
  batch.verified_here = true;
  image_batch out;
  out.verified_here = true; // a recycled batch object
  auto err = round_trip(batch, out);
  BOOST_TEST(!err, describe(err));
  BOOST_TEST(!out.verified_here);
}

BOOST_AUTO_TEST_CASE(header_carries_the_split_and_skipped_files) {
  auto batch = sample();
  batch.part = split::test;
  batch.skipped_ids = {41, 42};
  batch.skipped_names = {"/data/a/41.png", "/data/b/42.png"};
  batch.skipped_sources = {"/data/a/41.png", "/data/b.tar"};
  image_batch out;
  auto err = round_trip(batch, out);
  BOOST_TEST(!err, describe(err));
  BOOST_TEST((out.part == split::test));
  BOOST_TEST(out.skipped_ids == batch.skipped_ids);
  BOOST_TEST(out.skipped_names == batch.skipped_names);
  BOOST_TEST(out.skipped_sources == batch.skipped_sources);
  // Every cut of this longer header is still refused.
  std::vector<char> head;
  encode_frame_head(batch, head);
  auto size = static_cast<uint32_t>(head.size() - frame_prefix_bytes);
  for (uint32_t cut = 0; cut < size; ++cut) {
    image_batch part;
    BOOST_TEST(static_cast<bool>(decode_frame_header(
                 head.data() + frame_prefix_bytes, cut, batch.data.size(),
                 part)),
               "cut at " << cut);
  }
}

BOOST_AUTO_TEST_CASE(prefix_names_another_protocol_and_another_version) {
  std::vector<char> head;
  encode_frame_head(sample(), head);
  auto http = head;
  std::memcpy(http.data(), "GET / HTTP/1.1\r\n\r\n\0\0", frame_prefix_bytes);
  auto err = parse_frame_prefix(http.data(), 1 << 20).error();
  BOOST_TEST(describe(err).find("does not speak Stoker's batch protocol")
             != std::string::npos, describe(err));
  auto future = head;
  future[4] = 9;
  err = parse_frame_prefix(future.data(), 1 << 20).error();
  BOOST_TEST(describe(err).find("version 9") != std::string::npos,
             describe(err));
}

BOOST_AUTO_TEST_CASE(prefix_refuses_frames_over_the_limits) {
  auto batch = sample();
  std::vector<char> head;
  encode_frame_head(batch, head);
  auto err = parse_frame_prefix(head.data(), batch.data.size() - 1).error();
  BOOST_TEST(is(err, errc::bad_batch));
  BOOST_TEST(describe(err).find(std::to_string(batch.data.size()))
             != std::string::npos, describe(err));
  uint32_t huge = max_frame_header_bytes + 1;
  std::memcpy(head.data() + 8, &huge, 4);
  BOOST_TEST(!parse_frame_prefix(head.data(), UINT64_MAX));
}

BOOST_AUTO_TEST_CASE(header_refuses_data_its_shape_does_not_take) {
  auto batch = sample();
  std::vector<char> head;
  encode_frame_head(batch, head);
  image_batch out;
  auto header_bytes = static_cast<uint32_t>(head.size() - frame_prefix_bytes);
  auto err = decode_frame_header(head.data() + frame_prefix_bytes,
                                 header_bytes, batch.data.size() + 4, out);
  BOOST_TEST(describe(err).find("3 images of 6x7x3 float32")
             != std::string::npos, describe(err));
}

BOOST_AUTO_TEST_CASE(every_truncation_and_every_lying_count_is_an_error) {
  auto batch = sample();
  std::vector<char> head;
  encode_frame_head(batch, head);
  const char* header = head.data() + frame_prefix_bytes;
  auto size = static_cast<uint32_t>(head.size() - frame_prefix_bytes);
  for (uint32_t cut = 0; cut < size; ++cut) {
    image_batch out;
    auto err = decode_frame_header(header, cut, batch.data.size(), out);
    BOOST_TEST(static_cast<bool>(err),
               "a header cut at " << cut << " bytes was taken");
  }
  // A sample count far beyond the header's end must not allocate or read.
  auto lying = head;
  uint32_t count = 0x7fffffff;
  std::memcpy(lying.data() + frame_prefix_bytes + 30, &count, 4);
  image_batch out;
  auto err = decode_frame_header(lying.data() + frame_prefix_bytes, size,
                                 batch.data.size(), out);
  BOOST_TEST(static_cast<bool>(err));
}

BOOST_AUTO_TEST_SUITE_END()
