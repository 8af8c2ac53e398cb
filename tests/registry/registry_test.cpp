#include <boost/test/unit_test.hpp>

#include <caf/actor_system.hpp>

#include "stoker/errors.hpp"
#include "stoker/registry.hpp"
#include "node/local_role.hpp"
#include "node/node_config.hpp"
#include "transforms/transform_chain.hpp"

#include "support/custom_entries.hpp"

using namespace stoker;

namespace {

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::vector<transform_spec> chain_of(std::vector<std::string> texts) {
  std::vector<transform_spec> out;
  for (auto& t : texts)
    out.push_back(*parse_entry(t));
  return out;
}

// noise(AMOUNT): adds AMOUNT * u to every pixel, u drawn once per sample
// from the entry's own generator.
transform_def noise_transform() {
  transform_def def;
  def.name = "noise";
  def.min_args = def.max_args = 1;
  def.apply = [](const entry_spec& t, sample_input& s, const counter_rng& rng) {
    cv::Mat out;
    s.pixels.convertTo(out, CV_32F, 1.0, t.args[0] * rng.uniform(0));
    s.pixels = out;
    return caf::error{};
  };
  def.eval = [](const entry_spec&) { return std::vector<entry_spec>{}; };
  return def;
}

template <class T>
std::string why(const caf::expected<T>& x) {
  return x ? std::string{} : describe(x.error());
}

std::vector<float> values(const cv::Mat& m) {
  cv::Mat dense = m.isContinuous() ? m : m.clone();
  auto* p = dense.ptr<float>();
  return {p, p + dense.total() * dense.channels()};
}

} // namespace

BOOST_AUTO_TEST_SUITE(registry)

BOOST_AUTO_TEST_CASE(the_builtin_registry_holds_every_builtin_entry) {
  auto reg = builtin_registry();
  BOOST_TEST(reg.source_names() == "synthetic, idx, image-folder or tar-shards");
  BOOST_TEST(reg.transform_names()
             == "decode, resize, center-crop, random-resized-crop, "
                "random-crop, horizontal-flip, trivial-augment-wide, "
                "rand-augment, auto-augment, color-jitter, "
                "random-rotation, grayscale, random-erasing, to-tensor, "
                "normalize, gaussian-blur, python, python-pil or "
                "python-batch");
  BOOST_TEST(reg.model_names() == "vit or cnn");
  BOOST_TEST(reg.transform("decode")->takes_files);
  BOOST_TEST(reg.transform("my-jitter") == nullptr);
  BOOST_TEST(stoker::registry{}.source_names() == "(none registered)");
}

BOOST_AUTO_TEST_CASE(add_refuses_taken_and_empty_names_and_missing_functions) {
  auto reg = builtin_registry();
  auto msg = [](caf::error err) {
    BOOST_REQUIRE(err);
    return describe(err);
  };
  auto taken = stoker_test::affine_transform();
  taken.name = "resize";
  BOOST_TEST(has(msg(reg.add(taken)), "transform 'resize' is registered "
                                      "already"));
  auto unnamed = stoker_test::affine_transform();
  unnamed.name.clear();
  BOOST_TEST(has(msg(reg.add(unnamed)), "a transform without a name"));
  auto spaced = stoker_test::affine_transform();
  spaced.name = "my affine(2)";
  BOOST_TEST(has(msg(reg.add(spaced)), "transform name 'my affine(2)': "
                                       "expected letters, digits"));
  auto no_apply = stoker_test::affine_transform();
  no_apply.apply = nullptr;
  BOOST_TEST(has(msg(reg.add(no_apply)), "'affine' has no apply function"));
  auto backwards = stoker_test::affine_transform();
  backwards.min_args = 3;
  BOOST_TEST(has(msg(reg.add(backwards)), "min_args 3 is above max_args 2"));
  auto no_open = stoker_test::id_images_source();
  no_open.open = nullptr;
  BOOST_TEST(has(msg(reg.add(no_open)), "source 'id-images' has no open"));
  auto no_make = stoker_test::check_affine_model();
  no_make.make = nullptr;
  BOOST_TEST(has(msg(reg.add(no_make)), "model 'check-affine' has no make"));
  BOOST_TEST(!reg.add(stoker_test::affine_transform()));
  BOOST_TEST(reg.transform("affine") != nullptr);
}

BOOST_AUTO_TEST_CASE(a_user_transform_is_checked_and_applied_like_a_builtin) {
  auto reg = stoker_test::test_registry();
  auto early = check_chain(chain_of({"affine(2, 1)", "to-tensor"}),
                           {4, 4, 1}, false, reg);
  BOOST_REQUIRE(!early);
  BOOST_TEST(describe(early.error())
             == "pipeline.transforms: \"affine(2, 1)\": affine works on "
                "float pixels; put it after to-tensor");
  auto count = reg.check_transform(*parse_entry("affine(2)"),
                                   "pipeline.transforms");
  BOOST_TEST(has(describe(count), "1 argument(s); usage: affine(SCALE, "
                                  "OFFSET)"));
  auto chain = chain_of({"to-tensor", "affine(2, 1)"});
  auto shape = check_chain(chain, {4, 3, 1}, false, reg);
  BOOST_REQUIRE(shape);
  BOOST_TEST(shape->width == 3u);
  cv::Mat img(4, 3, CV_8UC1, cv::Scalar(51)); // 0.2 after to-tensor
  auto out = apply_chain(chain, sample_input{{}, img}, draw_key{}, reg);
  BOOST_REQUIRE(out);
  for (float v : values(*out))
    BOOST_TEST(std::fabs(v - 1.4f) < 1e-6f);
  BOOST_TEST(eval_chain_of(chain, reg).size() == 2u); // no eval form: kept
}

BOOST_AUTO_TEST_CASE(a_user_transform_draws_from_its_own_slice_of_the_generator) {
  auto reg = builtin_registry();
  BOOST_REQUIRE(!reg.add(noise_transform()));
  cv::Mat img(2, 2, CV_32FC1, cv::Scalar(0));
  auto run = [&](std::vector<std::string> texts, draw_key key) {
    auto out = apply_chain(chain_of(std::move(texts)), sample_input{{}, img},
                           key, reg);
    BOOST_REQUIRE(out);
    return values(*out)[0];
  };
  auto first = run({"noise(1)"}, {1, 2, 3});
  BOOST_TEST(first == run({"noise(1)"}, {1, 2, 3})); // a pure function
  BOOST_TEST(first != run({"noise(1)"}, {1, 2, 4})); // of the sample
  BOOST_TEST(first != run({"noise(1)"}, {1, 3, 3})); // and the epoch
  // Entry 1 draws from another stream than entry 0.
  BOOST_TEST(first != run({"to-tensor", "noise(1)"}, {1, 2, 3}));
  counter_rng own{{1, 2, 3, rng_stage::transforms}};
  BOOST_TEST(first == static_cast<float>(own.uniform(0)));
  BOOST_TEST(eval_chain_of(chain_of({"noise(1)"}), reg).empty());
}

BOOST_AUTO_TEST_CASE(the_join_check_names_the_entry_a_node_lacks) {
  pipeline_options cfg;
  cfg.data.source = *parse_entry("id-images(6, 5)");
  cfg.data.transforms = chain_of({"to-tensor", "affine(2, 1)"});
  cfg.trainer.model_entry = *parse_entry("check-affine(2, 1)");
  // The head records its versions; a node with the same ones joins.
  stamp_versions(cfg, stoker_test::test_registry());
  BOOST_TEST(cfg.data.transforms[1].version == "1");
  BOOST_TEST(!check_pipeline_names(stoker_test::test_registry(), cfg));
  auto plain = builtin_registry();
  BOOST_TEST(describe(check_pipeline_names(plain, cfg))
             == "the head's pipeline uses source 'id-images' "
                "(pipeline.source) but this node's registry has no such "
                "source (it has synthetic, idx, image-folder or tar-shards); expected "
                "the same build, with the same registrations, on every node");
  BOOST_REQUIRE(!plain.add(stoker_test::id_images_source()));
  BOOST_TEST(has(describe(check_pipeline_names(plain, cfg)),
                 "uses transform 'affine' (pipeline.transforms)"));
  BOOST_REQUIRE(!plain.add(stoker_test::affine_transform()));
  BOOST_TEST(has(describe(check_pipeline_names(plain, cfg)),
                 "uses model 'check-affine' (trainer.model)"));
  // The same name from another implementation: refused by its version.
  auto other = builtin_registry();
  auto affine_v2 = stoker_test::affine_transform();
  affine_v2.version = "2";
  for (auto err : {other.add(stoker_test::id_images_source()),
                   other.add(affine_v2),
                   other.add(stoker_test::check_affine_model())})
    BOOST_REQUIRE(!err);
  BOOST_TEST(describe(check_pipeline_names(other, cfg))
             == "the head's pipeline uses transform 'affine' version \"1\" "
                "(pipeline.transforms) but this node's is version \"2\"; "
                "expected the same build on every node");
}

BOOST_AUTO_TEST_CASE(a_local_run_trains_the_user_model_on_the_user_source) {
  auto reg = stoker_test::test_registry();
  node_config cfg;
  auto loaded = cfg.load({"--pipeline.source=id-images(5, 4)",
                          "--pipeline.dataset-size=96",
                          "--pipeline.batch-size=16",
                          "--pipeline.transforms=[\"to-tensor\", "
                          "\"affine(0.5, -1)\"]",
                          "--trainer.model=check-affine(0.5, -1)",
                          "--trainer.device=cpu", "--trainer.threads=1",
                          "--trainer.log-every=1000", "--worker.count=2"},
                         reg);
  BOOST_REQUIRE_MESSAGE(loaded, why(loaded));
  BOOST_REQUIRE(loaded->has_value());
  BOOST_TEST((*loaded)->pipeline.data.output.height == 5u);
  BOOST_TEST((*loaded)->pipeline.trainer.model.num_classes == 4u);
  caf::actor_system sys{cfg};
  auto report = run_local(sys, **loaded, reg);
  BOOST_REQUIRE_MESSAGE(report, why(report));
  BOOST_TEST(report->exactly_once());
  BOOST_TEST(report->samples_delivered == 96u);
  BOOST_TEST(!report->trainer_simulated);
  // The same config against Stoker's own entries names what is missing.
  node_config plain;
  auto refused = plain.load({"--pipeline.source=synthetic",
                             "--pipeline.transforms=[\"to-tensor\", "
                             "\"affine(0.5, -1)\"]"},
                            builtin_registry());
  BOOST_REQUIRE(!refused);
  BOOST_TEST(has(describe(refused.error()),
                 "pipeline.transforms: \"affine(0.5, -1)\": unknown "
                 "transform 'affine'; expected decode, resize"));
}

BOOST_AUTO_TEST_SUITE_END()
