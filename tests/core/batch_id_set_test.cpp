#include <boost/test/unit_test.hpp>

#include "core/batch_id_set.hpp"

using namespace stoker;

BOOST_AUTO_TEST_SUITE(batch_id_set)

BOOST_AUTO_TEST_CASE(knows_every_id_it_took_and_refuses_it_twice) {
  stoker::batch_id_set ids;
  for (uint64_t id : {3, 0, 1, 7, 2})
    BOOST_TEST(ids.insert(id));
  for (uint64_t id : {0, 1, 2, 3, 7})
    BOOST_TEST(ids.contains(id), id);
  for (uint64_t id : {4, 5, 6, 8, 1000})
    BOOST_TEST(!ids.contains(id), id);
  BOOST_TEST(!ids.insert(2));
  BOOST_TEST(!ids.insert(7));
}

BOOST_AUTO_TEST_CASE(memory_stays_at_the_ids_out_of_order) {
  stoker::batch_id_set ids;
  // A long run, each id arriving up to three places late.
  for (uint64_t base = 0; base < 100000; base += 4)
    for (uint64_t id : {base + 3, base + 1, base, base + 2})
      ids.insert(id);
  BOOST_TEST(ids.sparse_size() == 0u);
  BOOST_TEST(ids.contains(99999));
  BOOST_TEST(!ids.contains(100000));
}

BOOST_AUTO_TEST_SUITE_END()
