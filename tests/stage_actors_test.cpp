#include <boost/test/unit_test.hpp>

#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>

#include "stoker/actors.hpp"
#include "stoker/blur.hpp"
#include "stoker/errors.hpp"
#include "stoker/node_config.hpp"
#include "stoker/synthetic_mapper.hpp"

using namespace stoker;

namespace {

struct fixture {
  node_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  synthetic_spec data;
  blur_params blur;

  fixture() {
    data.height = 16;
    data.width = 12;
  }
};

work_item item_of(std::vector<uint64_t> ids) {
  work_item item;
  item.batch_id = 3;
  item.sample_ids = std::move(ids);
  return item;
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(stage_actors, fixture)

BOOST_AUTO_TEST_CASE(source_actor_hands_out_items_until_exhausted) {
  auto src = spawn_source(sys, source_spec{10, 4, 1, false, 0});
  std::vector<uint64_t> ids;
  for (;;) {
    std::vector<work_item> items;
    self->request(src, caf::infinite, next_atom::value, uint32_t{2})
      .receive([&](std::vector<work_item>& xs) { items = std::move(xs); },
               [&](caf::error& err) { BOOST_FAIL(to_string(err)); });
    if (items.empty())
      break;
    BOOST_TEST(items.size() <= 2u);
    for (auto& item : items)
      ids.insert(ids.end(), item.sample_ids.begin(), item.sample_ids.end());
  }
  BOOST_TEST(ids == (std::vector<uint64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  self->send_exit(src, caf::exit_reason::user_shutdown);
}

BOOST_AUTO_TEST_CASE(mapper_actor_replies_with_the_mapped_batch) {
  auto mapper = spawn_mapper(sys, data);
  auto item = item_of({4, 9});
  self->request(mapper, caf::infinite, item)
    .receive(
      [&](image_batch& batch) {
        BOOST_TEST(batch.data == map_synthetic(data, item).data);
        BOOST_TEST(batch.batch_id == 3u);
      },
      [&](caf::error& err) { BOOST_FAIL(to_string(err)); });
  self->send_exit(mapper, caf::exit_reason::user_shutdown);
}

BOOST_AUTO_TEST_CASE(transform_actor_replies_with_the_blurred_batch) {
  auto transform = spawn_blur_transform(sys, blur);
  auto raw = map_synthetic(data, item_of({1}));
  auto expected = raw;
  apply_blur_stage(blur, expected);
  self->request(transform, caf::infinite, raw)
    .receive(
      [&](image_batch& batch) {
        BOOST_TEST((batch.order == layout::chw));
        BOOST_TEST(batch.data == expected.data);
      },
      [&](caf::error& err) { BOOST_FAIL(to_string(err)); });
  self->send_exit(transform, caf::exit_reason::user_shutdown);
}

BOOST_AUTO_TEST_CASE(transform_actor_answers_a_bad_batch_with_an_error) {
  auto transform = spawn_blur_transform(sys, blur);
  auto raw = map_synthetic(data, item_of({1}));
  raw.order = layout::chw;
  bool failed = false;
  self->request(transform, caf::infinite, raw)
    .receive([&](image_batch&) {},
             [&](caf::error& err) {
               failed = true;
               BOOST_TEST(describe(err).find("must be float32 HWC")
                          != std::string::npos);
             });
  BOOST_TEST(failed);
  self->send_exit(transform, caf::exit_reason::user_shutdown);
}

BOOST_AUTO_TEST_SUITE_END()
