#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>

#include <unistd.h>

#include "stoker/errors.hpp"
#include "stoker/registry.hpp"
#include "kernels/blur.hpp"
#include "node/node_config.hpp"

using namespace stoker;

namespace {

// Loads `args` (and a config file with `ini`, when given) into a fresh
// node_config.
caf::expected<std::optional<run_config>>
load(std::vector<std::string> args, const std::string& ini = {}) {
  node_config cfg;
  if (!ini.empty()) {
    auto path = "/tmp/stoker-config-test-" + std::to_string(::getpid())
                + ".ini";
    std::ofstream{path} << ini;
    args.push_back("--config-file=" + path);
  }
  return cfg.load(args, builtin_registry());
}

// The message of a config that must be rejected.
std::string rejection(std::vector<std::string> args,
                      const std::string& ini = {}) {
  auto res = load(std::move(args), ini);
  BOOST_REQUIRE(!res);
  BOOST_TEST(is(res.error(), errc::invalid_config));
  return describe(res.error());
}

bool mentions(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos)
    return true;
  BOOST_TEST_MESSAGE("'" << text << "' does not mention '" << part << "'");
  return false;
}

} // namespace

BOOST_AUTO_TEST_SUITE(node_config)

BOOST_AUTO_TEST_CASE(embedded_default_is_valid) {
  auto res = load({});
  BOOST_REQUIRE(res);
  BOOST_REQUIRE(res->has_value());
  auto& cfg = **res;
  BOOST_TEST(cfg.role == "local");
  BOOST_TEST(cfg.source.dataset_size > 0u);
  BOOST_TEST(cfg.blur.repeat == 10u);
  BOOST_TEST(cfg.workers >= 1u);
  BOOST_TEST(mentions(cfg.config_source, "embedded"));
}

BOOST_AUTO_TEST_CASE(command_line_overrides_the_file) {
  auto res = load({"--router.policy=round-robin", "--pipeline.batch-size=7",
                   "--trainer.device=sim"},
                  "[router]\npolicy=\"least-loaded\"\nwindow=3\n");
  BOOST_REQUIRE(res);
  auto& cfg = **res;
  BOOST_TEST((cfg.router.policy == routing_policy::round_robin));
  BOOST_TEST(cfg.router.window == 3u);
  BOOST_TEST(cfg.source.batch_size == 7u);
  BOOST_TEST((cfg.trainer.device == device_kind::sim));
}

BOOST_AUTO_TEST_CASE(console_flag_is_short_for_console_terminal) {
  for (auto args : {std::vector<std::string>{"--console"},
                    std::vector<std::string>{"--console=true"},
                    std::vector<std::string>{"--console.terminal"}}) {
    auto res = load(args);
    BOOST_REQUIRE(res);
    BOOST_TEST((*res)->console.terminal, args.front());
  }
  auto off = load({"--console=false"}, "[console]\nterminal=true\n");
  BOOST_REQUIRE(off);
  BOOST_TEST(!(*off)->console.terminal);
  auto plain = load({});
  BOOST_REQUIRE(plain);
  BOOST_TEST(!(*plain)->console.terminal);
  BOOST_TEST(mentions(rejection({"--console=maybe"}), "--console.terminal=maybe"));
}

BOOST_AUTO_TEST_CASE(cosine_schedule_falls_from_the_rate_to_zero_over_the_run) {
  auto res = load({"--trainer.lr-schedule=cosine", "--trainer.lr=0.1",
                   "--pipeline.dataset-size=100", "--pipeline.batch-size=10",
                   "--pipeline.epochs=3"});
  BOOST_REQUIRE(res);
  auto& t = (*res)->trainer;
  BOOST_TEST(t.total_steps == 30u);
  BOOST_TEST(learning_rate_at(t, 0) == 0.1);
  BOOST_TEST(std::abs(learning_rate_at(t, 15) - 0.05) < 1e-12);
  BOOST_TEST(learning_rate_at(t, 30) < 1e-12);
  BOOST_TEST(learning_rate_at(t, 40) < 1e-12); // past the end: stays at 0
  t.schedule = lr_schedule::constant;
  BOOST_TEST(learning_rate_at(t, 15) == 0.1);
  BOOST_TEST(mentions(rejection({"--trainer.lr-schedule=step"}),
                      "\"constant\" or \"cosine\""));
}

BOOST_AUTO_TEST_CASE(article_workload_defaults_apply_without_a_key) {
  auto res = load({}, "[router]\nwindow=2\n");
  BOOST_REQUIRE(res);
  auto& cfg = **res;
  BOOST_TEST(cfg.source.dataset_size == 64000u);
  BOOST_TEST(cfg.source.batch_size == 64u);
  BOOST_TEST(cfg.trainer.model.width == 768u);
  BOOST_TEST(cfg.trainer.model.depth == 12u);
  BOOST_TEST(cfg.trainer.lr == 0.001);
  BOOST_TEST(cfg.trainer.momentum == 0.9);
}

BOOST_AUTO_TEST_CASE(rejects_unknown_policy_naming_key_and_choices) {
  auto msg = rejection({"--router.policy=random"});
  BOOST_TEST(mentions(msg, "router.policy"));
  BOOST_TEST(mentions(msg, "random"));
  BOOST_TEST(mentions(msg, "least-loaded"));
}

BOOST_AUTO_TEST_CASE(rejects_unknown_transport_dtype) {
  BOOST_TEST(mentions(rejection({"--transport.dtype=int8"}),
                      "transport.dtype = \"int8\": expected \"float32\""));
}

BOOST_AUTO_TEST_CASE(rejects_unknown_placement_and_gpu_placement_of_other_pipelines) {
  auto msg = rejection({"--pipeline.placement=tpu"});
  BOOST_TEST(mentions(msg, "pipeline.placement = \"tpu\": expected \"cpu\", "
                           "\"gpu\" or \"auto\""));
  msg = rejection({"--pipeline.placement=gpu", "--pipeline.source=idx",
                   "--pipeline.data=/nowhere"});
  BOOST_TEST(mentions(msg, "pipeline.placement = \"gpu\""));
  BOOST_TEST(mentions(msg, "article's blur stage only"));
  auto ok = load({"--pipeline.placement=auto"});
  BOOST_REQUIRE(ok);
  BOOST_TEST(((*ok)->router.placement == blur_placement::automatic));
}

BOOST_AUTO_TEST_CASE(blur_impl_and_isa_are_parsed_and_checked_against_the_cpu) {
  BOOST_TEST(mentions(rejection({"--pipeline.blur-impl=fast"}),
                      "pipeline.blur-impl = \"fast\": expected \"auto\", "
                      "\"opencv\" or \"stoker\""));
  BOOST_TEST(mentions(rejection({"--pipeline.blur-isa=sse2"}),
                      "pipeline.blur-isa = \"sse2\": expected"));
  BOOST_TEST(mentions(rejection({"--pipeline.blur-impl=opencv",
                                 "--pipeline.blur-isa=avx2"}),
                      "with pipeline.blur-impl = \"opencv\""));
  auto ok = load({"--pipeline.blur-impl=stoker", "--pipeline.blur-isa=scalar"});
  BOOST_REQUIRE(ok);
  BOOST_TEST(((*ok)->blur.impl == blur_impl::stoker));
  BOOST_TEST(((*ok)->blur.isa == cpu_isa::scalar));
  for (auto isa : {cpu_isa::avx512, cpu_isa::avx2})
    if (!cpu_supports(isa)) // a local run checks this machine's CPU
      BOOST_TEST(mentions(rejection({"--pipeline.blur-isa=" + to_string(isa)}),
                          "this CPU does not run it"));
}

BOOST_AUTO_TEST_CASE(rejects_unknown_device) {
  auto msg = rejection({"--trainer.device=tpu"});
  BOOST_TEST(mentions(msg, "trainer.device"));
  BOOST_TEST(mentions(msg, "\"sim\""));
}

BOOST_AUTO_TEST_CASE(rejects_negative_and_zero_sizes) {
  BOOST_TEST(mentions(rejection({"--pipeline.batch-size=-5"}),
                      "pipeline.batch-size = -5: expected an integer from 1"));
  BOOST_TEST(mentions(rejection({"--router.window=0"}), "router.window = 0"));
  BOOST_TEST(mentions(rejection({}, "[pipeline]\ndataset-size=-1\n"),
                      "pipeline.dataset-size = -1"));
}

BOOST_AUTO_TEST_CASE(rejects_unknown_keys_in_file_and_flags) {
  BOOST_TEST(mentions(rejection({}, "[router]\nwindw=3\n"),
                      "unknown key 'windw' in section [router]"));
  BOOST_TEST(mentions(rejection({}, "[rooter]\nwindow=3\n"),
                      "unknown key 'window' in section [rooter]"));
  BOOST_TEST(mentions(rejection({"--router.windw=3"}), "--router.windw=3"));
}

BOOST_AUTO_TEST_CASE(rejects_wrong_types_naming_what_was_expected) {
  BOOST_TEST(mentions(rejection({}, "[router]\nwindow=\"many\"\n"),
                      "router.window = \"many\": expected an integer"));
  BOOST_TEST(mentions(rejection({}, "[trainer]\nlr=1\n"),
                      "trainer.lr = 1: expected a number with a decimal"));
}

BOOST_AUTO_TEST_CASE(reports_syntax_errors_with_their_line) {
  auto msg = rejection({}, "[router]\nwindow=3\npolicy=round-robin\n");
  BOOST_TEST(mentions(msg, "syntax error at line 3"));
  BOOST_TEST(mentions(msg, "double quotes"));
}

BOOST_AUTO_TEST_CASE(rejects_a_missing_config_file_by_name) {
  BOOST_TEST(mentions(rejection({"--config-file=/nonexistent/x.ini"}),
                      "/nonexistent/x.ini: cannot open"));
}

BOOST_AUTO_TEST_CASE(rejects_inconsistent_values) {
  BOOST_TEST(mentions(rejection({"--pipeline.blur-kernel=10"}),
                      "expected an odd kernel size"));
  BOOST_TEST(mentions(rejection({"--pipeline.sigma-min=3.0"}),
                      "pipeline.sigma-min"));
  BOOST_TEST(mentions(rejection({"--model.heads=7"}), "model.heads = 7"));
  BOOST_TEST(mentions(rejection({"--model.patch-size=15"}),
                      "model.patch-size = 15"));
}

BOOST_AUTO_TEST_CASE(rejects_roles_this_build_does_not_run) {
  BOOST_TEST(mentions(rejection({"--role=wizard"}), "--role=wizard"));
}

BOOST_AUTO_TEST_SUITE_END()
