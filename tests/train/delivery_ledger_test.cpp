#include <boost/test/unit_test.hpp>

#include "train/delivery_ledger.hpp"

using namespace stoker;

BOOST_AUTO_TEST_SUITE(delivery_ledger)

BOOST_AUTO_TEST_CASE(counts_unique_duplicate_missing_and_unexpected) {
  stoker::delivery_ledger ledger{4, 2};
  BOOST_TEST(ledger.missing() == 8u);
  BOOST_TEST(ledger.record(0, 1));
  BOOST_TEST(!ledger.record(0, 1)); // duplicate
  BOOST_TEST(ledger.record(1, 1));  // same id, other epoch: fine
  BOOST_TEST(!ledger.record(0, 4)); // id out of range
  BOOST_TEST(!ledger.record(2, 0)); // epoch out of range
  BOOST_TEST(ledger.delivered() == 5u);
  BOOST_TEST(ledger.unique() == 2u);
  BOOST_TEST(ledger.duplicates() == 1u);
  BOOST_TEST(ledger.unexpected() == 2u);
  BOOST_TEST(ledger.missing() == 6u);
}

BOOST_AUTO_TEST_SUITE_END()
