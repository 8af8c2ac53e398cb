#include <boost/test/unit_test.hpp>

#include <caf/actor_system.hpp>

#include "stoker/errors.hpp"
#include "stoker/registry.hpp"
#include "node/local_role.hpp"
#include "node/node_config.hpp"

using namespace stoker;

namespace {

// Small images keep these end-to-end runs fast; the pipeline is the same.
const std::vector<std::string> small = {
  "--trainer.device=sim", "--trainer.sim-step-ms=1",
  "--trainer.log-every=1000", "--pipeline.height=32", "--pipeline.width=32",
  "--pipeline.dataset-size=1000", "--pipeline.batch-size=24",
  "--worker.count=3"};

caf::expected<run_report> run(std::vector<std::string> extra) {
  auto args = small;
  args.insert(args.end(), extra.begin(), extra.end());
  node_config cfg;
  auto loaded = cfg.load(args, builtin_registry());
  BOOST_REQUIRE(loaded);
  BOOST_REQUIRE(loaded->has_value());
  caf::actor_system sys{cfg};
  return run_local(sys, **loaded, builtin_registry());
}

void require_exactly_once(const run_report& r, uint64_t samples) {
  BOOST_TEST(r.samples_delivered == samples);
  BOOST_TEST(r.missing == 0u);
  BOOST_TEST(r.duplicates == 0u);
  BOOST_TEST(r.rejected_batches == 0u);
  BOOST_TEST(r.exactly_once());
}

} // namespace

BOOST_AUTO_TEST_SUITE(local_run)

BOOST_AUTO_TEST_CASE(least_loaded_run_delivers_every_sample_exactly_once) {
  auto r = run({"--router.policy=least-loaded", "--pipeline.epochs=2"});
  BOOST_REQUIRE(r);
  require_exactly_once(*r, 2000);
  BOOST_TEST(r->steps == 2u * 42); // ceil(1000 / 24) per epoch
  BOOST_TEST(r->policy == "least-loaded");
  BOOST_TEST(r->trainer_simulated);
  BOOST_REQUIRE(r->workers.size() == 3u);
  uint64_t batches = 0;
  for (auto& w : r->workers)
    batches += w.batches;
  BOOST_TEST(batches == 84u);
  BOOST_TEST(r->batches_leased == 84u); // nothing leased twice
  BOOST_TEST(r->batches_acked == 84u);
}

BOOST_AUTO_TEST_CASE(steady_state_batches_take_no_fresh_memory) {
  // The article's 38.5 MB batches: a fresh buffer each would cost ~9,400
  // page faults (4 KiB pages); pooled, the steady state takes almost none,
  // whatever malloc's settings (GLIBC_TUNABLES is not needed for speed).
  for (auto wire : {"float32", "float16"}) {
    auto r = run({"--pipeline.height=224", "--pipeline.width=224",
                  "--pipeline.batch-size=64", "--pipeline.dataset-size=5120",
                  "--pipeline.blur-repeat=1", "--worker.count=2",
                  std::string{"--transport.dtype="} + wire});
    BOOST_REQUIRE(r);
    require_exactly_once(*r, 5120);
    BOOST_TEST_CONTEXT(wire) {
      BOOST_TEST(r->trainer_minor_faults_per_batch < 64.0);
      for (auto& w : r->workers)
        if (w.batches > 16) // enough past the warm-up to count
          BOOST_TEST(w.minor_faults_per_batch < 64.0,
                     w.name << ": " << w.minor_faults_per_batch);
    }
  }
}

BOOST_AUTO_TEST_CASE(round_robin_run_spreads_batches_evenly) {
  auto r = run({"--router.policy=round-robin"});
  BOOST_REQUIRE(r);
  require_exactly_once(*r, 1000);
  for (auto& w : r->workers)
    BOOST_TEST(w.batches == 14u); // 42 batches over 3 workers
}

BOOST_AUTO_TEST_CASE(a_window_of_one_still_completes) {
  auto r = run({"--router.window=1", "--trainer.prefetch=1"});
  BOOST_REQUIRE(r);
  require_exactly_once(*r, 1000);
}

BOOST_AUTO_TEST_CASE(unshuffled_multi_epoch_run_is_exactly_once) {
  auto r = run({"--pipeline.shuffle=false", "--pipeline.epochs=3",
                "--pipeline.dataset-size=50", "--pipeline.batch-size=7"});
  BOOST_REQUIRE(r);
  require_exactly_once(*r, 150);
  BOOST_TEST(r->steps == 24u); // 8 batches per epoch, the last of 1 sample
}

BOOST_AUTO_TEST_CASE(float16_transport_is_exactly_once_and_checked) {
  for (auto wire : {"float16", "bfloat16"}) {
    auto r = run({std::string{"--transport.dtype="} + wire});
    BOOST_REQUIRE(r);
    require_exactly_once(*r, 1000);
  }
}

BOOST_AUTO_TEST_CASE(a_real_vit_trains_on_cpu) {
  auto r = run({"--trainer.device=cpu", "--pipeline.dataset-size=64",
                "--pipeline.batch-size=16", "--pipeline.blur-repeat=1",
                "--model.patch-size=8", "--model.width=32",
                "--model.depth=1", "--model.heads=2", "--model.mlp-dim=64",
                "--trainer.threads=1"});
  BOOST_REQUIRE(r);
  require_exactly_once(*r, 64);
  BOOST_TEST(r->trainer_device == "cpu");
  BOOST_TEST(!r->trainer_simulated);
}

BOOST_AUTO_TEST_SUITE_END()
