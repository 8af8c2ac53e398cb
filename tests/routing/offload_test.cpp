#include <boost/test/unit_test.hpp>

#include "routing/offload.hpp"

using namespace stoker;

namespace {

// A judged period: `acks` acks whose trainer waited `idle` of the time,
// the least busy worker at `busy`.
offload_signals period(double idle, double busy, uint32_t acks = 20,
                       bool gpu = true) {
  offload_signals s;
  s.trainer_gpu = gpu;
  s.acks = acks;
  s.wait_ns = static_cast<uint64_t>(idle * 1e9);
  s.step_ns = static_cast<uint64_t>((1.0 - idle) * 1e9);
  s.min_worker_busy = busy;
  return s;
}

bool contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos)
    return true;
  BOOST_TEST_MESSAGE("'" << text << "' does not mention '" << part << "'");
  return false;
}

} // namespace

BOOST_AUTO_TEST_SUITE(offload)

BOOST_AUTO_TEST_CASE(parses_placement_names_and_rejects_others) {
  BOOST_TEST((parse_enum<blur_placement>("cpu") == blur_placement::cpu));
  BOOST_TEST((parse_enum<blur_placement>("gpu") == blur_placement::gpu));
  BOOST_TEST((parse_enum<blur_placement>("auto") == blur_placement::automatic));
  BOOST_TEST(!parse_enum<blur_placement>("cuda").has_value());
  BOOST_TEST(to_string(blur_placement::automatic) == "auto");
}

BOOST_AUTO_TEST_CASE(fixed_placements_ignore_what_the_router_sees) {
  offload_controller cpu{blur_placement::cpu};
  offload_controller gpu{blur_placement::gpu};
  for (auto s : {period(0.5, 1.0), period(0.0, 0.1)}) {
    BOOST_TEST(!cpu.decide(s).has_value());
    BOOST_TEST(!gpu.decide(s).has_value());
  }
  BOOST_TEST(cpu.share() == 0.0);
  BOOST_TEST(gpu.share() == 1.0);
  for (int i = 0; i < 5; ++i) {
    BOOST_TEST(!cpu.next_on_trainer());
    BOOST_TEST(gpu.next_on_trainer());
  }
}

BOOST_AUTO_TEST_CASE(moves_blur_to_an_idle_gpu_while_every_worker_is_saturated) {
  offload_controller c{blur_placement::automatic};
  auto change = c.decide(period(0.30, 0.97));
  BOOST_REQUIRE(change.has_value());
  BOOST_TEST(c.share() == 0.125);
  BOOST_TEST(contains(*change, "0.0% -> 12.5%"));
  BOOST_TEST(contains(*change, "trainer idle 30.0%"));
  BOOST_TEST(contains(*change, "every worker is saturated"));
  for (int i = 0; i < 20; ++i)
    c.decide(period(0.30, 0.97));
  BOOST_TEST(c.share() == 1.0); // never past all of them
  BOOST_TEST(c.changes() == 8u);
}

BOOST_AUTO_TEST_CASE(holds_while_a_worker_has_room) {
  offload_controller c{blur_placement::automatic};
  // The trainer idles, but one worker is busy only 60% of the time: the
  // CPU side is not the bottleneck, more GPU work would not help.
  BOOST_TEST(!c.decide(period(0.30, 0.60)).has_value());
  BOOST_TEST(c.share() == 0.0);
  BOOST_TEST(contains(c.last_reason(), "workers have room"));
  BOOST_TEST(contains(c.last_reason(), "least busy worker 60.0%"));
}

BOOST_AUTO_TEST_CASE(gives_work_back_when_the_gpu_is_busy) {
  offload_controller c{blur_placement::automatic};
  c.decide(period(0.30, 0.97));
  c.decide(period(0.30, 0.97));
  BOOST_TEST(c.share() == 0.25);
  auto change = c.decide(period(0.002, 0.97));
  BOOST_REQUIRE(change.has_value());
  BOOST_TEST(c.share() == 0.125);
  BOOST_TEST(contains(*change, "the GPU is busy"));
  // Between the thresholds it holds.
  BOOST_TEST(!c.decide(period(0.03, 0.97)).has_value());
  BOOST_TEST(c.share() == 0.125);
  BOOST_TEST(c.last_change() == *change);
}

BOOST_AUTO_TEST_CASE(a_period_with_too_few_acks_is_not_judged) {
  offload_controller c{blur_placement::automatic};
  BOOST_TEST(!c.decide(period(0.9, 1.0, 3)).has_value());
  BOOST_TEST(c.share() == 0.0);
  BOOST_TEST(contains(c.last_reason(), "too few acks"));
}

BOOST_AUTO_TEST_CASE(a_trainer_without_cuda_gets_nothing_and_the_reason_says_so) {
  offload_controller c{blur_placement::automatic};
  c.decide(period(0.30, 0.97));
  BOOST_TEST(c.share() > 0.0);
  auto change = c.decide(period(0.30, 0.97, 20, false));
  BOOST_REQUIRE(change.has_value());
  BOOST_TEST(c.share() == 0.0);
  BOOST_TEST(contains(c.last_reason(), "no CUDA blur stage"));
}

BOOST_AUTO_TEST_CASE(spreads_the_share_evenly_over_the_leases) {
  offload_controller c{blur_placement::automatic};
  c.decide(period(0.30, 0.97));
  c.decide(period(0.30, 0.97)); // 25%
  int on_gpu = 0;
  for (int i = 0; i < 400; ++i) {
    bool gpu = c.next_on_trainer();
    on_gpu += gpu;
    if (i % 4 == 3)
      BOOST_TEST(on_gpu == (i + 1) / 4); // one in every four, in step
  }
  BOOST_TEST(on_gpu == 100);
}

BOOST_AUTO_TEST_SUITE_END()
