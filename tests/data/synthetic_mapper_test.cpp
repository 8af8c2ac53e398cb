#include <boost/test/unit_test.hpp>

#include <cstring>
#include <utility>
#include <vector>
#include <thread>

#include "data/synthetic_mapper.hpp"
#include "kernels/blur.hpp"
#include "transport/batch_check.hpp"

using namespace stoker;

namespace {

work_item item_of(uint64_t epoch, std::vector<uint64_t> ids) {
  work_item item;
  item.epoch = epoch;
  item.sample_ids = std::move(ids);
  return item;
}

// What a worker makes of `item`: mapper, then the blur stage.
image_batch make_on_worker(const work_item& item) {
  synthetic_spec data;
  data.seed = 9;
  blur_params blur;
  blur.seed = 9;
  auto batch = map_synthetic(data, item);
  apply_blur_stage(blur, batch);
  return batch;
}

} // namespace

BOOST_AUTO_TEST_SUITE(synthetic_mapper)

BOOST_AUTO_TEST_CASE(labels_are_id_modulo_classes) {
  synthetic_spec data;
  data.height = data.width = 2;
  auto batch = map_synthetic(data, item_of(0, {0, 999, 1000, 123456}));
  BOOST_TEST(batch.labels == (std::vector<int64_t>{0, 999, 0, 456}));
  BOOST_TEST(batch.data.size() == 4u * 2 * 2 * 3 * sizeof(float));
  BOOST_TEST((batch.order == layout::hwc));
}

BOOST_AUTO_TEST_CASE(a_sample_is_identical_whichever_worker_makes_it) {
  // Sample 42 of epoch 1 made by two "workers": different threads, in
  // batches of different composition and position.
  image_batch a, b;
  std::thread t1{[&] { a = make_on_worker(item_of(1, {42, 7, 8})); }};
  std::thread t2{[&] { b = make_on_worker(item_of(1, {3, 42})); }};
  t1.join();
  t2.join();
  stamp_checksums(a);
  stamp_checksums(b);
  BOOST_TEST(std::memcmp(a.image(0), b.image(1), a.image_bytes()) == 0);
  BOOST_TEST(a.checksums[0] == b.checksums[1]);
  BOOST_TEST(a.checksums[0] != a.checksums[1]); // other samples differ
}

BOOST_AUTO_TEST_CASE(a_new_epoch_draws_a_new_image) {
  auto e0 = make_on_worker(item_of(0, {5}));
  auto e1 = make_on_worker(item_of(1, {5}));
  BOOST_TEST(std::memcmp(e0.image(0), e1.image(0), e0.image_bytes()) != 0);
}

BOOST_AUTO_TEST_CASE(planes_made_directly_are_the_hwc_image_reordered) {
  // Every shape the blur tests use, every channel count: the same bits as
  // making the HWC image and reordering it (ToTensor), chunk edges
  // included (1,024 pixels a chunk).
  const std::pair<uint32_t, uint32_t> shapes[] = {
    {1, 1}, {5, 7}, {37, 53}, {2, 300}, {300, 2}, {17, 16}, {224, 224}};
  for (auto [h, w] : shapes)
    for (uint32_t c = 1; c <= 4; ++c) {
      synthetic_spec spec;
      spec.seed = 77;
      spec.height = h;
      spec.width = w;
      spec.channels = c;
      std::vector<float> hwc(size_t{h} * w * c), want(hwc.size()),
        got(hwc.size());
      make_synthetic_image(spec, 3, 12345, hwc.data());
      hwc_to_chw(hwc.data(), want.data(), h, w, c);
      make_synthetic_planes(spec, 3, 12345, got.data());
      BOOST_TEST(std::memcmp(want.data(), got.data(),
                             want.size() * sizeof(float))
                   == 0,
                 h << "x" << w << "x" << c);
    }
}

BOOST_AUTO_TEST_SUITE_END()
