#include <boost/test/unit_test.hpp>

#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>

#include "node/node_config.hpp"
#include "routing/source_actor.hpp"

using namespace stoker;

namespace {

struct fixture {
  node_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
};

} // namespace

BOOST_FIXTURE_TEST_SUITE(source_actor, fixture)

BOOST_AUTO_TEST_CASE(source_actor_hands_out_items_until_exhausted) {
  source_spec spec;
  spec.dataset_size = 10;
  spec.batch_size = 4;
  spec.shuffle = false;
  auto src = spawn_source(sys, spec);
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

BOOST_AUTO_TEST_SUITE_END()
