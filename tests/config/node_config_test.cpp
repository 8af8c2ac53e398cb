#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>

#include <unistd.h>

#include "stoker/errors.hpp"
#include "stoker/registry.hpp"
#include "config/run_config.hpp"
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

// Why a load failed ("" when it did not).
std::string why(const caf::expected<std::optional<run_config>>& res) {
  return res ? std::string{} : describe(res.error());
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
  BOOST_TEST((cfg.node.role == role_kind::local));
  BOOST_TEST(cfg.pipeline.source.dataset_size > 0u);
  BOOST_TEST(cfg.pipeline.blur.repeat == 10u);
  BOOST_TEST(cfg.node.workers >= 1u);
  BOOST_TEST(mentions(cfg.node.config_source, "embedded"));
}

BOOST_AUTO_TEST_CASE(command_line_overrides_the_file) {
  auto res = load({"--router.policy=round-robin", "--pipeline.batch-size=7",
                   "--trainer.device=sim"},
                  "[router]\npolicy=\"least-loaded\"\nwindow=3\n");
  BOOST_REQUIRE(res);
  auto& cfg = **res;
  BOOST_TEST((cfg.pipeline.router.policy == routing_policy::round_robin));
  BOOST_TEST(cfg.pipeline.router.window == 3u);
  BOOST_TEST(cfg.pipeline.source.batch_size == 7u);
  BOOST_TEST((cfg.node.trainer.device == device_kind::sim));
}

BOOST_AUTO_TEST_CASE(console_flag_is_short_for_console_terminal) {
  for (auto args : {std::vector<std::string>{"--console"},
                    std::vector<std::string>{"--console=true"},
                    std::vector<std::string>{"--console.terminal"}}) {
    auto res = load(args);
    BOOST_REQUIRE(res);
    BOOST_TEST((*res)->node.console.terminal, args.front());
  }
  auto off = load({"--console=false"}, "[console]\nterminal=true\n");
  BOOST_REQUIRE(off);
  BOOST_TEST(!(*off)->node.console.terminal);
  auto plain = load({});
  BOOST_REQUIRE(plain);
  BOOST_TEST(!(*plain)->node.console.terminal);
  BOOST_TEST(mentions(rejection({"--console=maybe"}), "--console.terminal=maybe"));
}

BOOST_AUTO_TEST_CASE(cosine_schedule_falls_from_the_rate_to_zero_over_the_run) {
  auto res = load({"--trainer.lr-schedule=cosine", "--trainer.lr=0.1",
                   "--pipeline.dataset-size=100", "--pipeline.batch-size=10",
                   "--pipeline.epochs=3"});
  BOOST_REQUIRE(res);
  auto& t = (*res)->pipeline.trainer;
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
  BOOST_TEST(cfg.pipeline.source.dataset_size == 64000u);
  BOOST_TEST(cfg.pipeline.source.batch_size == 64u);
  BOOST_TEST(cfg.pipeline.trainer.model.width == 768u);
  BOOST_TEST(cfg.pipeline.trainer.model.depth == 12u);
  BOOST_TEST(cfg.pipeline.trainer.lr == 0.001);
  BOOST_TEST(cfg.pipeline.trainer.momentum == 0.9);
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
  BOOST_TEST(((*ok)->pipeline.router.placement == blur_placement::automatic));
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
  BOOST_TEST(((*ok)->pipeline.blur.impl == blur_impl::stoker));
  BOOST_TEST(((*ok)->pipeline.blur.isa == cpu_isa::scalar));
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

// A duration is shown as written (CAF writes a zero timespan "0d").
BOOST_AUTO_TEST_CASE(rejects_a_zero_duration_showing_it_as_written) {
  BOOST_TEST(mentions(rejection({"--metrics.refresh=0s"}),
                      "metrics.refresh = 0s: expected a positive duration"));
  BOOST_TEST(mentions(rejection({"--metrics.refresh=0ms"}),
                      "metrics.refresh = 0s: expected a positive duration"));
}

// What no message may show a user: CAF's renderings of its errors.
bool shows_internals(const std::string& text) {
  for (auto part : {"parser_error", "not_an_option", "unexpected_character",
                    "exit_reason", "sec::", "({"})
    if (text.find(part) != std::string::npos)
      return true;
  return false;
}

BOOST_AUTO_TEST_CASE(rejects_unknown_keys_in_file_and_flags) {
  BOOST_TEST(mentions(rejection({}, "[router]\nwindw=3\n"),
                      "unknown key 'windw' in section [router]; did you "
                      "mean 'window'?"));
  BOOST_TEST(mentions(rejection({}, "[pipelin]\nbatch-size=3\n"),
                      "unknown section [pipelin]; did you mean [pipeline]?"));
  BOOST_TEST(mentions(rejection({}, "[zzzzzz]\nwindow=3\n"),
                      "unknown section [zzzzzz] (see stoker-node "
                      "--long-help)"));
  auto flag = rejection({"--router.windw=8"});
  BOOST_TEST(flag
             == "command line: --router.windw=8: unknown key 'windw' in "
                "section [router]; did you mean 'window'?");
  BOOST_TEST(mentions(rejection({"--pipeline.batch-sise=64"}),
                      "did you mean 'batch-size'?"));
  BOOST_TEST(mentions(rejection({"--rooter.window=3"}),
                      "unknown section [rooter]; did you mean [router]?"));
  for (auto& text : {flag, rejection({"--rooter.window=3"})})
    BOOST_TEST(!shows_internals(text), text);
}

BOOST_AUTO_TEST_CASE(a_flag_of_the_wrong_type_names_key_value_and_expectation) {
  auto text = rejection({"--pipeline.batch-size=abc"});
  BOOST_TEST(mentions(text, "pipeline.batch-size = \"abc\": expected an "
                            "integer"),
             text);
  BOOST_TEST(!shows_internals(text), text);
  auto boolean = rejection({"--pipeline.batch-size=true"});
  BOOST_TEST(mentions(boolean, "pipeline.batch-size = true: expected an "
                               "integer"),
             boolean);
  BOOST_TEST(!shows_internals(boolean), boolean);
  auto number = rejection({"--trainer.lr=fast"});
  BOOST_TEST(mentions(number, "trainer.lr = \"fast\": expected a number"),
             number);
}

BOOST_AUTO_TEST_CASE(a_section_header_without_its_bracket_is_named_by_line) {
  auto text = rejection({}, "; a comment\n[pipeline\nbatch-size = 8\n");
  BOOST_TEST(mentions(text, "line 2: `[pipeline` has no closing `]`; "
                            "expected a [section] header"),
             text);
}

BOOST_AUTO_TEST_CASE(rejects_wrong_types_naming_what_was_expected) {
  BOOST_TEST(mentions(rejection({}, "[router]\nwindow=\"many\"\n"),
                      "router.window = \"many\": expected an integer"));
  BOOST_TEST(mentions(rejection({}, "[trainer]\nlr=\"fast\"\n"),
                      "trainer.lr = \"fast\": expected a number"));
}

BOOST_AUTO_TEST_CASE(whole_numbers_count_as_numbers_in_a_file_as_on_the_command_line) {
  auto file = load({}, "[trainer]\nlr=1\n[pipeline]\nsigma-max=3\n");
  BOOST_REQUIRE_MESSAGE(file, why(file));
  BOOST_TEST((*file)->pipeline.trainer.lr == 1.0);
  BOOST_TEST((*file)->pipeline.blur.sigma_max == 3.0f);
  auto flags = load({"--trainer.lr=1", "--pipeline.sigma-max=3"});
  BOOST_REQUIRE_MESSAGE(flags, why(flags));
  BOOST_TEST((*flags)->pipeline.trainer.lr == 1.0);
  BOOST_TEST((*flags)->pipeline.blur.sigma_max == 3.0f);
}

BOOST_AUTO_TEST_CASE(a_directory_or_an_empty_file_is_refused_by_name) {
  BOOST_TEST(mentions(rejection({"--config-file=/tmp"}),
                      "--config-file=/tmp: is a directory"));
  BOOST_TEST(mentions(rejection({}, "; only a comment\n\n"),
                      "sets no key (the file is empty or only comments)"));
}

BOOST_AUTO_TEST_CASE(a_key_set_twice_is_refused_naming_both_lines) {
  BOOST_TEST(mentions(rejection({}, "[router]\nwindow=3\nwindow=4\n"),
                      "router.window is set twice, at line 2 and at line 3"));
  BOOST_TEST(mentions(rejection({}, "[router]\nwindow=3\n[trainer]\nlr=0.1\n"
                                    "[router]\n; again\nwindow=5\n"),
                      "router.window is set twice, at line 2 and at line 7"));
  // A list may span lines; its elements are not keys.
  auto ok = load({}, "[cluster]\nnodes=[\"t:trainer\",\n  \"w:worker\"]\n"
                     "[router]\nwindow=2\n");
  BOOST_REQUIRE_MESSAGE(ok, why(ok));
  BOOST_TEST((*ok)->node.cluster.nodes.size() == 2u);
}

BOOST_AUTO_TEST_CASE(crlf_line_ends_and_a_byte_order_mark_are_accepted) {
  auto res = load({}, "\xEF\xBB\xBF[router]\r\nwindow=3\r\npolicy=\"round-robin\"\r\n");
  BOOST_REQUIRE_MESSAGE(res, why(res));
  BOOST_TEST((*res)->pipeline.router.window == 3u);
  BOOST_TEST(((*res)->pipeline.router.policy == routing_policy::round_robin));
}

BOOST_AUTO_TEST_CASE(blur_keys_with_a_transform_chain_are_refused_by_name) {
  auto msg = rejection({"--pipeline.sigma-max=3.0",
                        "--pipeline.transforms=[\"to-tensor\"]"});
  BOOST_TEST(mentions(msg, "pipeline.sigma-max is set, and so is "
                           "pipeline.transforms"));
  BOOST_TEST(mentions(rejection({"--pipeline.blur-repeat=2",
                                 "--pipeline.transforms=[\"to-tensor\"]"}),
                      "pipeline.blur-repeat is set"));
  // Without a chain the same keys configure the fused stage.
  auto ok = load({"--pipeline.sigma-max=3.0"});
  BOOST_REQUIRE(ok);
  BOOST_TEST(((*ok)->pipeline.kind == pipeline_kind::fused_blur));
  auto chain = load({"--pipeline.transforms=[\"to-tensor\"]"});
  BOOST_REQUIRE_MESSAGE(chain, why(chain));
  BOOST_TEST(((*chain)->pipeline.kind == pipeline_kind::transform_chain));
}

BOOST_AUTO_TEST_CASE(a_console_beyond_loopback_without_a_token_is_a_config_error) {
  BOOST_TEST(mentions(rejection({"--console.bind=0.0.0.0"}),
                      "console.bind = \"0.0.0.0\" reaches beyond this "
                      "machine; expected console.token"));
  BOOST_TEST(static_cast<bool>(
    load({"--console.bind=0.0.0.0", "--console.token=s3cret"})));
}

BOOST_AUTO_TEST_CASE(listening_beyond_loopback_without_tls_is_a_config_error) {
  for (auto role : {"--role=head", "--role=trainer"}) {
    auto msg = rejection({role, "--cluster.head=10.0.0.1:4242",
                          "--cluster.bind=10.0.0.2"});
    BOOST_TEST(mentions(msg, "cluster.bind = \"10.0.0.2\" reaches beyond "
                             "this machine, and TLS is not configured; "
                             "expected tls.certificate, tls.key and "
                             "tls.ca-file"),
               msg);
    BOOST_TEST(static_cast<bool>(load({role, "--cluster.head=10.0.0.1:4242",
                                       "--cluster.bind=10.0.0.2",
                                       "--cluster.insecure=true"})));
    BOOST_TEST(static_cast<bool>(load({role, "--cluster.head=10.0.0.1:4242",
                                       "--cluster.bind=10.0.0.2",
                                       "--tls.dir=/etc/stoker/certs"})));
  }
  // A worker node listens nowhere.
  BOOST_TEST(static_cast<bool>(load({"--role=worker",
                                     "--cluster.head=10.0.0.1:4242",
                                     "--cluster.bind=10.0.0.2"})));
  auto console = rejection({"--role=head", "--console.port=4300",
                            "--console.bind=0.0.0.0", "--console.token=t"});
  BOOST_TEST(mentions(console, "console.bind = \"0.0.0.0\" reaches beyond"),
             console);
}

BOOST_AUTO_TEST_CASE(tls_required_without_tls_and_openssl_keys_are_refused) {
  auto msg = rejection({"--role=worker", "--cluster.head=127.0.0.1:4242",
                        "--tls.required=true"});
  BOOST_TEST(mentions(msg, "tls.required = true, and TLS is not configured"),
             msg);
  BOOST_TEST(static_cast<bool>(load({"--role=worker",
                                     "--cluster.head=127.0.0.1:4242",
                                     "--tls.required=true",
                                     "--tls.dir=/etc/stoker/certs"})));
  auto caf_module = rejection({}, "[openssl]\ncertificate = \"a.pem\"\n");
  BOOST_TEST(mentions(caf_module, "under [tls]"), caf_module);
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

BOOST_AUTO_TEST_CASE(a_nodes_usage_counts_from_its_runs_start) {
  node_options node;
  node.name = "w-1";
  node.host = "algo-2";
  node.instance_type = "ml.c5.4xlarge";
  node.prices = {{"ml.p3.2xlarge", 3.825}, {"ml.c5.4xlarge", 0.816}};
  auto u = node_usage_between(node, usage_mark{12.0, 100.0},
                              usage_mark{15.5, 102.0});
  BOOST_TEST(u.node == "w-1");
  BOOST_TEST(u.host == "algo-2");
  BOOST_TEST(u.cpu_s == 3.5, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(u.wall_s == 2.0, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(u.price_per_hour == 0.816);
  // Readings out of order (never from one process's clocks): no time, not
  // a negative share of the machine.
  auto back = node_usage_between(node, usage_mark{15.5, 102.0},
                                 usage_mark{12.0, 100.0});
  BOOST_TEST(back.cpu_s == 0.0);
  BOOST_TEST(back.wall_s == 0.0);
  // Now, from where the node says its run started.
  node.run_started = usage_mark_now();
  auto now = node_usage_now(node);
  BOOST_TEST(now.wall_s >= 0.0);
  BOOST_TEST(now.wall_s < 5.0);
}

BOOST_AUTO_TEST_SUITE_END()
