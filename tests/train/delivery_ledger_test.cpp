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

BOOST_AUTO_TEST_CASE(a_skipped_sample_is_handled_but_not_delivered) {
  stoker::delivery_ledger ledger{4, 1};
  BOOST_TEST(ledger.record(0, 0));
  BOOST_TEST(ledger.record_skipped(0, 1));
  BOOST_TEST(!ledger.record(0, 1)); // skipped, then trained: a duplicate
  BOOST_TEST(ledger.delivered() == 2u);
  BOOST_TEST(ledger.skipped() == 1u);
  BOOST_TEST(ledger.unique() == 2u);
  BOOST_TEST(ledger.missing() == 2u);
  // A checkpoint keeps the bits and the delivered count: the skipped
  // sample is told from them, not counted as delivered.
  stoker::delivery_ledger again{4, 1};
  again.restore(ledger.pack(), ledger.delivered(), ledger.duplicates());
  BOOST_TEST(again.skipped() == 1u);
  BOOST_TEST(again.unique() == 2u);
  BOOST_TEST(again.unexpected() == 0u);
  BOOST_TEST(again.record(0, 2));
  BOOST_TEST(again.delivered() == 3u);
}

BOOST_AUTO_TEST_SUITE_END()
