#include <boost/test/unit_test.hpp>

#include "stoker/errors.hpp"
#include "node/prepare_run.hpp"

using namespace stoker;

namespace {

// A resolved pipeline of `batch` images of h x w x c.
pipeline_options pipeline_of(uint32_t batch, uint32_t h, uint32_t w,
                             uint32_t c) {
  pipeline_options p;
  p.source.batch_size = batch;
  p.data.output.height = h;
  p.data.output.width = w;
  p.data.output.channels = c;
  return p;
}

bool has(const caf::error& err, const std::string& part) {
  return describe(err).find(part) != std::string::npos;
}

constexpr uint64_t gib = uint64_t{1} << 30;

} // namespace

BOOST_AUTO_TEST_SUITE(prepare_run)

BOOST_AUTO_TEST_CASE(a_batch_over_the_in_flight_budget_is_refused_by_its_numbers) {
  auto p = pipeline_of(32, 16384, 16384, 4); // 128 GiB as float32
  auto err = check_batch_fits(p, 64 * gib);
  BOOST_TEST(is(err, errc::invalid_config));
  BOOST_TEST(has(err, "a batch of 32 images of 16384x16384x4"), describe(err));
  BOOST_TEST(has(err, "128.0 GiB on the wire (float32), more than "
                      "router.max-inflight-bytes = 1073741824 (1.0 GiB)"),
             describe(err));
  // On the wire as float16 it is half that: still over.
  p.transport.wire = dtype::float16;
  BOOST_TEST(has(check_batch_fits(p, 64 * gib), "64.0 GiB on the wire "
                                                "(float16)"));
}

BOOST_AUTO_TEST_CASE(a_batch_larger_than_the_machine_is_refused_at_join_too) {
  auto p = pipeline_of(4, 16384, 16384, 1); // 4 GiB as float32
  p.router.max_inflight_bytes = 16 * gib;
  BOOST_TEST(!check_batch_fits(p, 24 * gib));
  auto err = check_batch_fits(p, 2 * gib); // a smaller worker machine
  BOOST_TEST(has(err, "4.0 GiB as float32, more than this machine's memory "
                      "(2.0 GiB)"),
             describe(err));
  BOOST_TEST(!check_batch_fits(p, 0)); // unknown memory: not refused
}

BOOST_AUTO_TEST_CASE(the_articles_batch_fits_the_defaults) {
  auto p = pipeline_of(64, 224, 224, 3); // 38.5 MB
  BOOST_TEST(!check_batch_fits(p, 24 * gib));
}

BOOST_AUTO_TEST_SUITE_END()
