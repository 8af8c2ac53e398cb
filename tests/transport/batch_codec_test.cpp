#include <boost/test/unit_test.hpp>

#include <cmath>

#include "data/synthetic_mapper.hpp"
#include "transport/batch_codec.hpp"

using namespace stoker;

namespace {

image_batch sample() {
  synthetic_spec data;
  data.height = 8;
  data.width = 5;
  work_item item;
  item.sample_ids = {1, 2};
  return map_synthetic(data, item);
}

} // namespace

BOOST_AUTO_TEST_SUITE(batch_codec)

BOOST_AUTO_TEST_CASE(sixteen_bit_transport_halves_the_buffer_and_decodes_close) {
  for (auto wire : {dtype::float16, dtype::bfloat16}) {
    auto original = sample();
    auto batch = original;
    encode_batch(batch, wire);
    BOOST_TEST((batch.type == wire));
    BOOST_TEST(batch.data.size() * 2 == original.data.size());
    decode_batch(batch);
    BOOST_TEST((batch.type == dtype::float32));
    BOOST_REQUIRE(batch.data.size() == original.data.size());
    // float16 keeps 11 significant bits, bfloat16 8 (values here < 6).
    float tolerance = wire == dtype::float16 ? 6.0f / 2048 : 6.0f / 256;
    float worst = 0;
    for (size_t i = 0; i < 2; ++i)
      for (size_t k = 0; k < batch.image_elements(); ++k)
        worst = std::max(worst, std::abs(batch.image(i)[k]
                                         - original.image(i)[k]));
    BOOST_TEST(worst <= tolerance);
    BOOST_TEST(worst > 0.0f); // it did go through 16 bits
  }
}

BOOST_AUTO_TEST_CASE(float32_transport_changes_nothing) {
  auto original = sample();
  auto batch = original;
  encode_batch(batch, dtype::float32);
  decode_batch(batch);
  BOOST_TEST(batch.data == original.data);
}

BOOST_AUTO_TEST_CASE(encoding_twice_is_refused) {
  auto batch = sample();
  encode_batch(batch, dtype::float16);
  BOOST_CHECK_THROW(encode_batch(batch, dtype::bfloat16),
                    std::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()
