#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <thread>

#include "worker/worker_pulse.hpp"

using namespace stoker;
using namespace std::chrono_literals;

BOOST_AUTO_TEST_SUITE(worker_pulse)

BOOST_AUTO_TEST_CASE(pulses_while_busy_and_is_silent_while_idle) {
  std::atomic<int> heard{0};
  std::atomic<uint64_t> processed{0};
  std::atomic<bool> periodic{true};
  stoker::worker_pulse pulse{10ms, [&](const worker_report& r) {
                               processed = r.processed;
                               if (r.samples != 0 || r.in_flight != 1)
                                 periodic = false;
                               ++heard;
                             }};
  std::this_thread::sleep_for(60ms);
  BOOST_TEST(heard == 0); // idle: the actor reports itself
  worker_report now;
  now.processed = 7;
  now.samples = 64; // not sent: nothing finished yet
  pulse.busy(now);
  std::this_thread::sleep_for(100ms);
  BOOST_TEST(heard >= 3);
  BOOST_TEST(processed == 7u);
  BOOST_TEST(periodic); // samples 0, in flight 1
  pulse.idle();
  std::this_thread::sleep_for(20ms); // one in flight may still land
  auto after = heard.load();
  std::this_thread::sleep_for(60ms);
  BOOST_TEST(heard == after);
  BOOST_TEST(pulse.sent() == static_cast<uint64_t>(after));
}

BOOST_AUTO_TEST_CASE(stops_within_an_interval_when_destroyed) {
  auto t0 = std::chrono::steady_clock::now();
  {
    stoker::worker_pulse pulse{50ms, [](const worker_report&) {}};
    pulse.busy(worker_report{});
  }
  BOOST_TEST((std::chrono::steady_clock::now() - t0 < 200ms));
}

BOOST_AUTO_TEST_SUITE_END()
