#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cmath>
#include <memory>
#include <thread>
#include <vector>

#include <torch/torch.h>

#include "stoker/errors.hpp"
#include "stoker/registry.hpp"
#include "data/synthetic_mapper.hpp"
#include "train/collective.hpp"
#include "train/step_engine.hpp"

#include "support/tiny_vit.hpp"

using namespace stoker;

namespace {

// A tiny ViT (no dropout, no batch statistics: the mean loss over a batch
// is exactly the mean of its parts) trained by plain SGD with momentum.
trainer_spec tiny_spec() {
  trainer_spec spec;
  spec.lr = 0.05;
  spec.momentum = 0.9;
  spec.model = stoker_test::tiny_vit();
  return spec;
}

image_batch batch_of(std::vector<uint64_t> ids) {
  synthetic_spec data;
  data.height = data.width = 32;
  data.num_classes = 10;
  work_item item;
  item.sample_ids = std::move(ids);
  auto batch = map_synthetic(data, item);
  batch.order = layout::chw;
  return batch;
}

std::vector<uint64_t> ids_from(uint64_t first, uint64_t n) {
  std::vector<uint64_t> out;
  for (uint64_t i = 0; i < n; ++i)
    out.push_back(first + i);
  return out;
}

std::unique_ptr<step_engine> engine_with_seed(uint64_t seed) {
  torch::manual_seed(seed);
  trainer_local_spec local;
  local.device = device_kind::cpu;
  auto engine = make_torch_engine(tiny_spec(), local, builtin_registry());
  BOOST_REQUIRE(engine);
  return std::move(*engine);
}

// The loss of the model on a fixed probe batch: a function of its
// parameters only (equal parameters, equal loss; after a few steps any
// difference shows).
double probe_loss(step_engine& engine) {
  auto probe = batch_of(ids_from(1000, 16));
  auto res = engine.evaluate(probe);
  BOOST_REQUIRE(res);
  return res->loss_sum;
}

struct group_outcome {
  std::vector<double> probe;                    // per rank
  std::vector<std::vector<double>> step_losses; // per rank, per step
  std::vector<uint64_t> collective_ns;          // per rank, summed
};

// Trains `steps[k][r]` (the ids rank r trains on in step k) on a group of
// steps[0].size() ranks, each in its own thread, each engine from its own
// seed (rank 0's model reaches every rank when it joins).
group_outcome train_group(const std::vector<std::vector<std::vector<uint64_t>>>&
                            steps) {
  auto world = static_cast<uint32_t>(steps.front().size());
  auto store = collective_store::start("127.0.0.1", 0);
  BOOST_REQUIRE(store);
  std::vector<std::unique_ptr<step_engine>> engines;
  for (uint32_t r = 0; r < world; ++r)
    engines.push_back(engine_with_seed(100 + r));
  group_outcome out;
  out.probe.resize(world);
  out.step_losses.resize(world);
  out.collective_ns.resize(world);
  std::vector<std::string> errors(world);
  std::vector<std::thread> threads;
  for (uint32_t r = 0; r < world; ++r)
    threads.emplace_back([&, r] {
      collective_options o;
      o.rank = r;
      o.world = world;
      o.store_port = (*store)->port();
      o.timeout = std::chrono::seconds(30);
      auto group = collective_group::join(o);
      if (!group) {
        errors[r] = describe(group.error());
        return;
      }
      std::shared_ptr<collective_group> shared = std::move(*group);
      if (auto err = engines[r]->join_group(shared)) {
        errors[r] = describe(err);
        return;
      }
      for (auto& step : steps) {
        auto res = engines[r]->step(batch_of(step[r]));
        if (!res) {
          errors[r] = describe(res.error());
          return;
        }
        out.step_losses[r].push_back(res->loss);
        out.collective_ns[r] += res->collective_ns;
      }
    });
  for (auto& t : threads)
    t.join();
  for (auto& e : errors)
    BOOST_REQUIRE_MESSAGE(e.empty(), e);
  for (uint32_t r = 0; r < world; ++r)
    out.probe[r] = probe_loss(*engines[r]);
  return out;
}

// The same steps on one trainer with each step's ranks' samples together.
std::pair<double, std::vector<double>>
train_alone(const std::vector<std::vector<std::vector<uint64_t>>>& steps) {
  auto engine = engine_with_seed(100); // rank 0's model
  std::vector<double> losses;
  for (auto& step : steps) {
    std::vector<uint64_t> all;
    for (auto& part : step)
      all.insert(all.end(), part.begin(), part.end());
    auto res = engine->step(batch_of(all));
    BOOST_REQUIRE(res);
    losses.push_back(res->loss);
  }
  return {probe_loss(*engine), losses};
}

bool close(double a, double b, double rel = 1e-5) {
  return std::abs(a - b) <= rel * std::max(std::abs(a), std::abs(b));
}

} // namespace

BOOST_AUTO_TEST_SUITE(collective)

BOOST_AUTO_TEST_CASE(two_ranks_of_batch_b_train_as_one_rank_of_batch_2b) {
  // Three SGD steps: ranks 0 and 1 take 8 samples each, the lone trainer
  // the same 16 at once.
  std::vector<std::vector<std::vector<uint64_t>>> steps;
  for (uint64_t k = 0; k < 3; ++k)
    steps.push_back({ids_from(16 * k, 8), ids_from(16 * k + 8, 8)});
  auto group = train_group(steps);
  auto [alone, alone_losses] = train_alone(steps);
  for (double probe : group.probe)
    BOOST_TEST(close(probe, alone), probe << " vs " << alone);
  for (size_t k = 0; k < steps.size(); ++k)
    for (auto& losses : group.step_losses)
      BOOST_TEST(close(losses[k], alone_losses[k]),
                 "step " << k << ": " << losses[k] << " vs "
                         << alone_losses[k]);
  // The models moved: the check above would pass for nothing otherwise.
  auto untrained = engine_with_seed(100);
  BOOST_TEST(!close(probe_loss(*untrained), alone, 1e-3));
}

BOOST_AUTO_TEST_CASE(partial_tails_of_unequal_size_weigh_by_their_samples) {
  // A full step, then a partial last step of 5 samples split 3 + 2 (as
  // pipeline.last-batch = partial splits it), then one where rank 1 has
  // none at all: it still takes part, with no weight.
  std::vector<std::vector<std::vector<uint64_t>>> steps{
    {ids_from(0, 8), ids_from(8, 8)},
    {ids_from(16, 3), ids_from(19, 2)},
    {ids_from(21, 1), {}}};
  auto group = train_group(steps);
  auto [alone, alone_losses] = train_alone(steps);
  for (double probe : group.probe)
    BOOST_TEST(close(probe, alone), probe << " vs " << alone);
  BOOST_TEST(close(group.step_losses[1][2], alone_losses[2]));
}

BOOST_AUTO_TEST_CASE(a_rank_that_never_comes_fails_the_join_within_the_timeout) {
  auto store = collective_store::start("127.0.0.1", 0);
  BOOST_REQUIRE(store);
  collective_options o;
  o.rank = 0;
  o.world = 2;
  o.store_port = (*store)->port();
  o.timeout = std::chrono::seconds(2);
  auto t0 = std::chrono::steady_clock::now();
  auto group = collective_group::join(o);
  auto took = std::chrono::steady_clock::now() - t0;
  BOOST_REQUIRE(!group);
  BOOST_TEST(describe(group.error()).find("rank 0 of 2") != std::string::npos,
             describe(group.error()));
  BOOST_TEST((took < std::chrono::seconds(20)));
}

BOOST_AUTO_TEST_CASE(nccl_without_nccl_in_the_build_is_refused_by_name) {
  auto err = check_backend(collective_backend::nccl);
  BOOST_TEST(describe(err).find("trainer.backend = \"nccl\"")
             != std::string::npos);
  BOOST_TEST(!check_backend(collective_backend::gloo));
}

BOOST_AUTO_TEST_SUITE_END()
