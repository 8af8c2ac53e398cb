#include <boost/test/unit_test.hpp>

#include "train/epoch_gate.hpp"

using namespace stoker;

BOOST_AUTO_TEST_SUITE(epoch_gate)

BOOST_AUTO_TEST_CASE(test_batches_wait_for_their_epochs_training) {
  stoker::epoch_gate gate{100, 40};
  BOOST_TEST(gate.ready(0, split::train));
  BOOST_TEST(!gate.ready(0, split::test));
  BOOST_TEST(!gate.ready(1, split::train));
  BOOST_TEST(!gate.finish(0, split::train, 64));
  BOOST_TEST(!gate.ready(0, split::test));
  BOOST_TEST(gate.finish(0, split::train, 36)); // training of epoch 0 done
  BOOST_TEST(gate.ready(0, split::test));
  BOOST_TEST(!gate.ready(1, split::train)); // not before the test split
  BOOST_TEST(gate.finish(0, split::test, 40));
  BOOST_TEST(gate.ready(1, split::train));
  BOOST_TEST(gate.ready(0, split::train)); // a late re-lease runs at once
  BOOST_TEST(!gate.finish(0, split::train, 64)); // and changes nothing
  BOOST_TEST(!gate.ready(1, split::test));
}

BOOST_AUTO_TEST_CASE(a_restart_begins_at_the_epoch_it_was_in) {
  stoker::epoch_gate gate{100, 40, 250}; // two epochs and half of the third
  BOOST_TEST(gate.ready(2, split::train));
  BOOST_TEST(!gate.ready(2, split::test));
  BOOST_TEST(gate.finish(2, split::train, 50));
  BOOST_TEST(gate.ready(2, split::test));
}

BOOST_AUTO_TEST_CASE(without_a_test_split_epochs_follow_each_other) {
  stoker::epoch_gate gate{10, 0};
  BOOST_TEST(gate.finish(0, split::train, 10));
  BOOST_TEST(gate.ready(1, split::train));
  BOOST_TEST(!gate.ready(2, split::train));
}

BOOST_AUTO_TEST_SUITE_END()
