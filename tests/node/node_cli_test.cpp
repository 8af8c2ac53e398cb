#include <boost/test/unit_test.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include <sys/wait.h>
#include <unistd.h>

#include "kernels/cuda_devices.hpp"
#include "train/checkpoint.hpp"

#include "support/node_processes.hpp"

// Runs the real stoker-node binary, as a user would.

namespace {

struct outcome {
  int exit_code = -1;
  std::string output; // stdout and stderr
};

outcome run_node(const std::string& args) {
  std::string cmd = std::string{STOKER_NODE_BINARY} + " " + args + " 2>&1";
  outcome out;
  FILE* pipe = ::popen(cmd.c_str(), "r");
  BOOST_REQUIRE(pipe != nullptr);
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0)
    out.output.append(buf, n);
  int status = ::pclose(pipe);
  out.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  BOOST_TEST_MESSAGE("$ stoker-node " << args << "\n" << out.output);
  // Whatever the case, a user never reads CAF's internals.
  BOOST_TEST(stoker_test::caf_internals_in(out.output).empty(),
             args << ": " << out.output);
  return out;
}

bool mentions(const outcome& o, const std::string& part) {
  return o.output.find(part) != std::string::npos;
}

const std::string small_run
  = "--trainer.device=sim --trainer.sim-step-ms=1 --pipeline.dataset-size=96 "
    "--pipeline.batch-size=16 --worker.count=2";

} // namespace

BOOST_AUTO_TEST_SUITE(node_cli)

BOOST_AUTO_TEST_CASE(bad_config_value_exits_2_naming_the_key) {
  auto o = run_node("--router.policy=fastest");
  BOOST_TEST(o.exit_code == 2);
  BOOST_TEST(mentions(o, "router.policy = \"fastest\": expected"));
  o = run_node("--pipeline.batch-size=-1");
  BOOST_TEST(o.exit_code == 2);
  BOOST_TEST(mentions(o, "pipeline.batch-size = -1"));
  o = run_node("--trainer.device=gpu");
  BOOST_TEST(o.exit_code == 2);
  BOOST_TEST(mentions(o, "trainer.device"));
}

BOOST_AUTO_TEST_CASE(unknown_flag_and_role_exit_2) {
  auto o = run_node("--router.speed=3");
  BOOST_TEST(o.exit_code == 2);
  BOOST_TEST(mentions(o, "--router.speed=3"));
  o = run_node("--role=dancer");
  BOOST_TEST(o.exit_code == 2);
  BOOST_TEST(mentions(o, "--role=dancer"));
}

BOOST_AUTO_TEST_CASE(bad_config_file_exits_2_naming_file_and_line) {
  auto path = "/tmp/stoker-cli-test-" + std::to_string(::getpid()) + ".ini";
  std::ofstream{path} << "[router]\n; fine\npolicy = round-robin\n";
  auto o = run_node("--config-file=" + path);
  BOOST_TEST(o.exit_code == 2);
  BOOST_TEST(mentions(o, path + ": syntax error at line 3"));
  std::remove(path.c_str());
  o = run_node("--config-file=/nonexistent.ini");
  BOOST_TEST(o.exit_code == 2);
  BOOST_TEST(mentions(o, "/nonexistent.ini: cannot open"));
}

BOOST_AUTO_TEST_CASE(config_files_a_new_user_writes_wrong_exit_2_naming_why) {
  auto o = run_node("--config-file=/tmp");
  BOOST_TEST(o.exit_code == 2);
  BOOST_TEST(mentions(o, "--config-file=/tmp: is a directory"));
  auto path = "/tmp/stoker-cli-dup-" + std::to_string(::getpid()) + ".ini";
  std::ofstream{path} << "[router]\nwindow = 3\n\n[router]\nwindow = 4\n";
  o = run_node("--config-file=" + path);
  BOOST_TEST(o.exit_code == 2);
  BOOST_TEST(mentions(o, "router.window is set twice, at line 2 and at line 5"));
  std::ofstream{path} << "; nothing set\n";
  o = run_node("--config-file=" + path);
  BOOST_TEST(o.exit_code == 2);
  BOOST_TEST(mentions(o, "sets no key"));
  std::remove(path.c_str());
}

BOOST_AUTO_TEST_CASE(a_console_beyond_loopback_without_a_token_exits_2) {
  auto o = run_node("--console.bind=0.0.0.0 --console.port=0");
  BOOST_TEST(o.exit_code == 2);
  BOOST_TEST(mentions(o, "console.bind = \"0.0.0.0\" reaches beyond"));
}

BOOST_AUTO_TEST_CASE(an_address_that_does_not_parse_exits_2) {
  auto o = run_node("--role=worker --cluster.head=nohost");
  BOOST_TEST(o.exit_code == 2);
  BOOST_TEST(mentions(o, "cluster.head = \"nohost\": expected HOST:PORT"));
}

BOOST_AUTO_TEST_CASE(a_loss_that_turns_nan_stops_and_keeps_the_last_checkpoint) {
  auto dir = "/tmp/stoker-cli-nan-" + std::to_string(::getpid());
  // A tiny CPU ViT with an absurd learning rate diverges in a few steps.
  auto o = run_node("--trainer.device=cpu --model.width=32 --model.depth=1 "
                    "--model.heads=2 --model.mlp-dim=32 --model.patch-size=16 "
                    "--pipeline.height=32 --pipeline.width=32 "
                    "--pipeline.num-classes=10 --pipeline.dataset-size=512 "
                    "--pipeline.batch-size=16 --trainer.lr=1000 "
                    "--trainer.checkpoint-every=1 --trainer.checkpoint-dir="
                    + dir);
  BOOST_TEST(o.exit_code == 1);
  BOOST_TEST(mentions(o, "expected a finite number"));
  auto saved = stoker::read_checkpoint(dir);
  BOOST_REQUIRE(saved); // intact: written before the bad step, never after
  BOOST_TEST(saved->step >= 1u);
  BOOST_TEST(!saved->engine_state.empty());
  std::remove(stoker::checkpoint_path(dir).c_str());
  ::rmdir(dir.c_str());
}

BOOST_AUTO_TEST_CASE(help_exits_0) {
  auto o = run_node("--long-help");
  BOOST_TEST(o.exit_code == 0);
  BOOST_TEST(mentions(o, "router.policy"));
}

BOOST_AUTO_TEST_CASE(local_run_with_sim_trainer_delivers_every_sample_once) {
  auto report = "/tmp/stoker-cli-report-" + std::to_string(::getpid())
                + ".json";
  auto o = run_node(small_run + " --pipeline.epochs=2 --report=" + report);
  BOOST_TEST(o.exit_code == 0);
  BOOST_TEST(mentions(o, "[simulated accelerator]"));
  std::ifstream in{report};
  std::stringstream json;
  json << in.rdbuf();
  auto text = json.str();
  BOOST_TEST_MESSAGE(text);
  BOOST_TEST(text.find("\"samples_delivered\": 192,") != std::string::npos);
  BOOST_TEST(text.find("\"missing\": 0,") != std::string::npos);
  BOOST_TEST(text.find("\"duplicates\": 0,") != std::string::npos);
  BOOST_TEST(text.find("\"steps\": 12,") != std::string::npos);
  BOOST_TEST(text.find("\"trainer_device\": \"sim\"") != std::string::npos);
  BOOST_TEST(text.find("\"policy\": \"least-loaded\"") != std::string::npos);
  std::remove(report.c_str());
}

BOOST_AUTO_TEST_CASE(gpu_placement_without_a_gpu_fails_naming_why_and_auto_runs_on_the_cpus) {
  if (stoker::probe_cuda_devices().count > 0) {
    BOOST_TEST_MESSAGE("a CUDA device is here: blur_cuda covers gpu");
  } else {
    auto o = run_node(small_run + " --pipeline.placement=gpu");
    BOOST_TEST(o.exit_code == 2); // a setting this machine cannot run
    BOOST_TEST(mentions(o, "refused: pipeline.placement"));
    BOOST_TEST(mentions(o, "pipeline.placement = \"gpu\": CUDA blur on "
                           "device 0"));
  }
  auto report = "/tmp/stoker-cli-auto-" + std::to_string(::getpid())
                + ".json";
  auto o = run_node(small_run + " --pipeline.placement=auto --report="
                    + report);
  BOOST_TEST(o.exit_code == 0);
  std::stringstream json;
  json << std::ifstream{report}.rdbuf();
  auto text = json.str();
  BOOST_TEST_MESSAGE(text);
  BOOST_TEST(text.find("\"missing\": 0,") != std::string::npos);
  BOOST_TEST(text.find("\"placement\": \"auto\",") != std::string::npos);
  if (stoker::probe_cuda_devices().count == 0) {
    BOOST_TEST(mentions(o, "the workers blur everything"));
    BOOST_TEST(text.find("\"batches_gpu_blur\": 0,") != std::string::npos);
  }
  std::remove(report.c_str());
}

BOOST_AUTO_TEST_CASE(a_run_forced_onto_the_scalar_blur_delivers_every_sample) {
  auto report = "/tmp/stoker-cli-scalar-" + std::to_string(::getpid())
                + ".json";
  auto o = run_node(small_run + " --pipeline.height=40 --pipeline.width=37 "
                                "--pipeline.blur-impl=stoker "
                                "--pipeline.blur-isa=scalar --report="
                    + report);
  BOOST_TEST(o.exit_code == 0);
  std::stringstream json;
  json << std::ifstream{report}.rdbuf();
  BOOST_TEST(json.str().find("\"missing\": 0,") != std::string::npos);
  BOOST_TEST(json.str().find("\"rejected_batches\": 0,") != std::string::npos);
  std::remove(report.c_str());
}

BOOST_AUTO_TEST_CASE(progress_lines_say_iteration_and_idle) {
  auto o = run_node(small_run + " --trainer.log-every=2");
  BOOST_TEST(o.exit_code == 0);
  BOOST_TEST(mentions(o, "Iteration 2: avg time per step"));
  BOOST_TEST(mentions(o, "accelerator idle"));
  BOOST_TEST(mentions(o, "Iteration 6:"));
}

BOOST_AUTO_TEST_SUITE_END()
