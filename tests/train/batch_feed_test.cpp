#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <thread>

#include "stoker/errors.hpp"
#include "train/batch_feed.hpp"

using namespace stoker;
using namespace std::chrono_literals;

namespace {

image_batch batch_of(uint64_t epoch, uint64_t id,
                     std::vector<uint64_t> samples) {
  image_batch b;
  b.epoch = epoch;
  b.batch_id = id;
  b.sample_ids = std::move(samples);
  b.labels.assign(b.sample_ids.size(), 0);
  b.data.assign(b.sample_ids.size() * 4, 'x');
  b.slot.seq = id;
  return b;
}

run_identity run_of(uint64_t n, uint32_t epochs) {
  run_identity r;
  r.dataset_size = n;
  r.epochs = epochs;
  r.batch_size = 2;
  return r;
}

} // namespace

BOOST_AUTO_TEST_SUITE(batch_feed)

BOOST_AUTO_TEST_CASE(a_step_ends_when_the_loop_asks_for_the_next) {
  stoker::batch_feed feed{run_of(4, 1), 4, 1, nullptr};
  std::atomic<int> notices{0};
  feed.set_notifier([&] { ++notices; });
  auto b = batch_of(0, 0, {0, 1});
  const char* filled = b.data.data();
  BOOST_TEST(!feed.hand_over(b, nullptr)); // handed: the step goes on
  BOOST_TEST(b.data.empty());              // the buffer went to the loop
  BOOST_TEST(b.sample_ids.size() == 2u);   // the trainer records them
  auto e = feed.next(5s);
  BOOST_REQUIRE(e);
  BOOST_TEST((e->kind == feed_event::kind_type::batch));
  BOOST_TEST(e->batch.data.data() == filled); // moved, not copied
  std::this_thread::sleep_for(20ms);          // the loop's step
  auto before = feed.ended();
  BOOST_REQUIRE(before);
  BOOST_TEST(!*before); // not ended while the loop holds it
  BOOST_TEST(notices.load() == 0);
  BOOST_TEST(!feed.next(10ms)); // nothing else: a timeout, no event
  feed.release();
  BOOST_TEST(notices.load() == 1);
  auto after = feed.ended();
  BOOST_REQUIRE(after);
  BOOST_REQUIRE(*after);
  BOOST_TEST((*after)->step_ns >= 20'000'000u); // take to release
  BOOST_TEST((*after)->wait_ns == 0u); // the first batch's wait: start-up
  auto none = feed.ended();
  BOOST_REQUIRE(none);
  BOOST_TEST(!*none); // each end is given once
  feed.release();     // nothing held: nothing ends
  BOOST_TEST(notices.load() == 1);
}

BOOST_AUTO_TEST_CASE(the_next_batch_waits_ready_and_a_third_waits_for_a_step) {
  stoker::batch_feed feed{run_of(6, 1), 6, 1, nullptr};
  auto a = batch_of(0, 0, {0, 1});
  auto b = batch_of(0, 1, {2, 3});
  BOOST_TEST(!feed.hand_over(a, nullptr));
  BOOST_TEST(!feed.hand_over(b, nullptr)); // one ahead of the loop
  BOOST_REQUIRE(feed.next(5s)); // the loop holds a
  std::atomic<bool> returned{false};
  std::thread trainer([&] {
    auto c = batch_of(0, 2, {4, 5});
    BOOST_CHECK(!feed.hand_over(c, nullptr));
    returned = true;
  });
  std::this_thread::sleep_for(50ms);
  BOOST_TEST(!returned.load()); // two are out: a held, b waiting
  std::this_thread::sleep_for(30ms); // the loop's wait for b is not this
  feed.release(); // a's step ended
  trainer.join();
  BOOST_TEST(returned.load());
  auto next = feed.next(0ms); // b was there: no wait
  BOOST_REQUIRE(next);
  BOOST_TEST(next->batch.batch_id == 1u);
  feed.release();
  auto first = feed.ended();
  auto second = feed.ended();
  BOOST_REQUIRE(first);
  BOOST_REQUIRE(*first);
  BOOST_REQUIRE(second);
  BOOST_REQUIRE(*second);
  BOOST_TEST((*first)->step_ns >= 80'000'000u);
  BOOST_TEST((*second)->wait_ns < 50'000'000u); // ready when asked
}

BOOST_AUTO_TEST_CASE(events_come_in_the_trainers_order) {
  stoker::batch_feed feed{run_of(4, 1), 4, 1, nullptr};
  std::thread trainer([&] {
    auto b = batch_of(0, 0, {0, 1, 2, 3});
    BOOST_CHECK(!feed.hand_over(b, nullptr));
    feed.end_phase(0, split::train);
    feed.finish(caf::none);
  });
  auto first = feed.next(5s);
  BOOST_REQUIRE(first);
  BOOST_TEST((first->kind == feed_event::kind_type::batch));
  feed.release();
  auto second = feed.next(5s);
  BOOST_REQUIRE(second);
  BOOST_TEST((second->kind == feed_event::kind_type::phase_end));
  BOOST_TEST(second->epoch == 0u);
  auto third = feed.next(5s);
  BOOST_REQUIRE(third);
  BOOST_TEST((third->kind == feed_event::kind_type::finished));
  BOOST_TEST(!third->error);
  trainer.join();
}

BOOST_AUTO_TEST_CASE(the_cursor_counts_what_the_loop_took_once) {
  stoker::batch_feed feed{run_of(6, 1), 6, 1, nullptr};
  std::thread trainer([&] {
    auto a = batch_of(0, 0, {4, 5});
    BOOST_CHECK(!feed.hand_over(a, nullptr));
    auto b = batch_of(0, 2, {1, 2, 4}); // pad: 4 repeats the epoch's start
    b.slot.padded = 1;
    BOOST_CHECK(!feed.hand_over(b, nullptr));
  });
  BOOST_REQUIRE(feed.next(5s));
  auto taken = feed.cursor(); // held, not released: counted (saved after
  BOOST_TEST(taken.step == 1u); // the step it is for)
  BOOST_TEST(taken.delivered == 2u);
  feed.release();
  BOOST_REQUIRE(feed.next(5s));
  feed.release();
  trainer.join();
  auto c = feed.cursor();
  BOOST_TEST(c.step == 2u);
  BOOST_TEST(c.delivered == 4u); // 4, 5, 1, 2: the padded 4 not again
  BOOST_TEST(c.duplicates == 0u);
  BOOST_TEST(c.done_below == 1u); // batch 0; batch 2 above the watermark
  BOOST_TEST(c.done_ids == std::vector<uint64_t>{2});
  BOOST_TEST(c.next_seq == 3u);
  // A test batch evaluated is not leased again, and is no step.
  std::thread evaluator([&] {
    auto t = batch_of(0, 3, {0, 3});
    t.part = split::test;
    BOOST_CHECK(!feed.hand_over(t, nullptr));
  });
  BOOST_REQUIRE(feed.next(5s));
  feed.release();
  evaluator.join();
  auto after_test = feed.cursor();
  BOOST_TEST(after_test.step == 2u);
  BOOST_TEST(after_test.delivered == 4u);
  BOOST_TEST(after_test.done_ids == (std::vector<uint64_t>{2, 3}));
  // A feed resumed from it starts where it stopped.
  stoker::batch_feed again{run_of(6, 1), 6, 1, &c};
  BOOST_TEST(again.cursor().delivered == 4u);
  BOOST_TEST(again.steps() == 2u);
}

BOOST_AUTO_TEST_CASE(closing_lets_the_waiting_trainer_go_with_the_reason) {
  stoker::batch_feed feed{run_of(6, 1), 6, 1, nullptr};
  std::atomic<int> notices{0};
  feed.set_notifier([&] { ++notices; });
  auto a = batch_of(0, 0, {0, 1});
  auto b = batch_of(0, 1, {2, 3});
  BOOST_REQUIRE(!feed.hand_over(a, nullptr));
  BOOST_REQUIRE(!feed.hand_over(b, nullptr));
  caf::error seen;
  std::thread trainer([&] {
    auto c = batch_of(0, 2, {4, 5});
    seen = feed.hand_over(c, nullptr); // waits: two are out
  });
  BOOST_REQUIRE(feed.next(5s)); // taken, the loop then raises
  feed.close(make_error(errc::trainer_failure,
                        "the training loop raised ZeroDivisionError"));
  trainer.join();
  BOOST_REQUIRE(seen);
  BOOST_TEST(describe(seen).find("ZeroDivisionError") != std::string::npos,
             describe(seen));
  BOOST_TEST(notices.load() == 1); // the trainer is told
  auto ended = feed.ended();       // and learns why there
  BOOST_REQUIRE(!ended);
  BOOST_TEST((ended.error() == seen));
  BOOST_TEST(!feed.next(10ms)); // the queued batch was dropped
  auto later = batch_of(0, 3, {0, 1});
  BOOST_TEST((feed.hand_over(later, nullptr) == seen)); // refused at once
}

BOOST_AUTO_TEST_SUITE_END()
