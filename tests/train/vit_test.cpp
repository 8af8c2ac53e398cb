#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cmath>

#include "stoker/errors.hpp"
#include "stoker/registry.hpp"
#include "data/synthetic_mapper.hpp"
#include "train/step_engine.hpp"
#include "train/vit.hpp"

#include "support/tiny_vit.hpp"

using namespace stoker;

namespace {

vit_spec tiny() {
  return stoker_test::tiny_vit();
}

int64_t parameter_count(torch::nn::Module& m) {
  int64_t n = 0;
  for (auto& p : m.parameters())
    n += p.numel();
  return n;
}

} // namespace

BOOST_AUTO_TEST_SUITE(vit)

BOOST_AUTO_TEST_CASE(maps_images_to_class_logits) {
  stoker::vit model{tiny()};
  auto out = model->forward(torch::randn({5, 3, 32, 32}));
  BOOST_TEST(out.sizes() == (std::vector<int64_t>{5, 10}));
}

BOOST_AUTO_TEST_CASE(default_sizes_match_timm_vit_base_patch16_224) {
  // timm's vit_base_patch16_224 has 86,567,656 parameters.
  stoker::vit model{vit_spec{}};
  BOOST_TEST(parameter_count(*model) == 86567656);
}

BOOST_AUTO_TEST_CASE(sgd_steps_lower_the_loss_on_a_repeated_batch) {
  torch::manual_seed(0);
  trainer_spec spec;
  trainer_local_spec local;
  local.device = device_kind::cpu;
  spec.lr = 0.01;
  spec.model = tiny();
  auto engine = make_torch_engine(spec, local, builtin_registry());
  BOOST_REQUIRE(engine);
  BOOST_TEST(!(*engine)->simulated());
  BOOST_TEST((*engine)->device() == "cpu");
  synthetic_spec data;
  data.height = data.width = 32;
  data.num_classes = 10;
  work_item item;
  item.sample_ids = {0, 1, 2, 3, 4, 5, 6, 7};
  auto batch = map_synthetic(data, item);
  batch.order = layout::chw; // noise either way; the model sees CHW
  double first = 0, last = 0;
  for (int i = 0; i < 30; ++i) {
    auto res = (*engine)->step(batch);
    BOOST_REQUIRE(res);
    (i == 0 ? first : last) = res->loss;
  }
  BOOST_TEST(std::isfinite(first));
  BOOST_TEST(last < 0.5 * first);
}

BOOST_AUTO_TEST_CASE(a_restored_engine_takes_the_same_next_step) {
  // Two engines from different seeds; the second takes the first's state
  // (model and optimizer momentum): their next steps must agree exactly.
  trainer_spec spec;
  trainer_local_spec local;
  local.device = device_kind::cpu;
  spec.lr = 0.01;
  spec.model = tiny();
  synthetic_spec data;
  data.height = data.width = 32;
  data.num_classes = 10;
  work_item item;
  item.sample_ids = {0, 1, 2, 3};
  auto batch = map_synthetic(data, item);
  batch.order = layout::chw;
  torch::manual_seed(1);
  auto a = make_torch_engine(spec, local, builtin_registry());
  torch::manual_seed(2);
  auto b = make_torch_engine(spec, local, builtin_registry());
  BOOST_REQUIRE(a && b);
  for (int i = 0; i < 3; ++i)
    BOOST_REQUIRE((*a)->step(batch)); // momentum buffers are non-zero now
  auto state = (*a)->save_state();
  BOOST_REQUIRE(state);
  BOOST_REQUIRE(!(*b)->load_state(*state));
  auto next_a = (*a)->step(batch);
  auto next_b = (*b)->step(batch);
  BOOST_REQUIRE(next_a && next_b);
  BOOST_TEST(next_a->loss == next_b->loss);
  // A model state that does not fit is refused by name.
  auto err = (*b)->load_state("garbage");
  BOOST_TEST(describe(err).find("holds no model") != std::string::npos,
             describe(err));
  auto sim = make_sim_engine(0);
  err = sim->load_state(*state);
  BOOST_TEST(describe(err).find("trainer.device = \"sim\"")
               != std::string::npos,
             describe(err));
}

BOOST_AUTO_TEST_CASE(cuda_device_without_gpu_is_a_clear_error) {
  if (torch::cuda::is_available()) {
    BOOST_TEST_MESSAGE("a CUDA device is visible: nothing to check");
    return;
  }
  trainer_spec spec;
  trainer_local_spec local;
  local.device = device_kind::cuda;
  spec.model = tiny();
  auto engine = make_torch_engine(spec, local, builtin_registry());
  BOOST_REQUIRE(!engine);
  BOOST_TEST(describe(engine.error()).find("trainer.device = \"cuda\"")
             != std::string::npos);
}

BOOST_AUTO_TEST_CASE(sim_engine_takes_its_step_time_and_says_so) {
  auto engine = make_sim_engine(20);
  BOOST_TEST(engine->simulated());
  image_batch batch;
  batch.sample_ids = {7};
  batch.labels = {1};
  auto t0 = std::chrono::steady_clock::now();
  auto res = engine->step(batch);
  auto ms = std::chrono::duration<double, std::milli>(
              std::chrono::steady_clock::now() - t0)
              .count();
  BOOST_REQUIRE(res);
  BOOST_TEST(ms >= 19.0);
  BOOST_TEST(std::isnan(res->loss));
}

BOOST_AUTO_TEST_SUITE_END()
