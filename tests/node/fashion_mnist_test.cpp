#include <boost/test/unit_test.hpp>

#include <cmath>

#include <caf/actor_system.hpp>

#include "stoker/errors.hpp"
#include "stoker/registry.hpp"
#include "node/local_role.hpp"
#include "node/node_config.hpp"

#include "support/local_runs.hpp"
#include "support/node_processes.hpp"
#include "support/real_data.hpp"

using namespace stoker;
using namespace stoker_test;

namespace {

caf::expected<run_report> run(std::vector<std::string> args) {
  return run_local_with(args);
}

} // namespace

BOOST_AUTO_TEST_SUITE(fashion_mnist)

// 200 steps of the CNN on real Fashion-MNIST through the whole pipeline,
// evaluated on 2000 test images after each of two epochs.
BOOST_AUTO_TEST_CASE(a_short_cnn_run_learns_far_above_chance) {
  require_fashion_mnist();
  auto r = run({"--config-file=" STOKER_SOURCE_DIR "/config/fashion-mnist.ini",
                "--pipeline.dataset-size=6400", "--pipeline.eval-size=2000",
                "--pipeline.epochs=2", "--trainer.log-every=1000",
                "--worker.count=2"});
  BOOST_REQUIRE_MESSAGE(r, why(r));
  BOOST_TEST(r->exactly_once());
  BOOST_TEST(r->steps == 200u);
  BOOST_REQUIRE(r->epoch_test_accuracy.size() == 2u);
  BOOST_REQUIRE(r->epoch_train_loss.size() == 2u);
  BOOST_TEST_MESSAGE("test accuracy " << r->epoch_test_accuracy[0] << ", "
                                      << r->epoch_test_accuracy[1]
                                      << "; train loss "
                                      << r->epoch_train_loss[0] << ", "
                                      << r->epoch_train_loss[1]);
  BOOST_TEST(r->test_accuracy > 0.65); // chance is 0.10
  BOOST_TEST(r->epoch_train_loss[1] < r->epoch_train_loss[0]);
  BOOST_TEST(r->epoch_train_loss[1] < 1.0); // ln(10) = 2.3 at chance
}

BOOST_AUTO_TEST_CASE(a_simulated_accelerator_evaluates_nothing_and_says_so) {
  require_fashion_mnist();
  auto r = run({"--pipeline.source=idx", "--pipeline.data=" + fashion_mnist_dir,
                "--pipeline.dataset-size=640", "--pipeline.eval-size=320",
                "--pipeline.batch-size=64", "--pipeline.epochs=3",
                "--trainer.eval", "--trainer.device=sim",
                "--trainer.sim-step-ms=1", "--worker.count=2"});
  BOOST_REQUIRE_MESSAGE(r, why(r));
  BOOST_TEST(r->exactly_once());
  BOOST_TEST(r->steps == 30u);
  BOOST_TEST(r->batches_acked == 3u * (10 + 5));
  BOOST_REQUIRE(r->epoch_test_accuracy.size() == 3u);
  BOOST_TEST(std::isnan(r->test_accuracy));
}

// Head, trainer and a worker node as processes: the worker reads the IDX
// files itself (the head sent indices only), and test batches come back
// evaluated after each epoch. (A worker seeing other files is refused:
// dataset suite.)
BOOST_AUTO_TEST_CASE(a_cluster_trains_and_evaluates_on_real_files) {
  require_fashion_mnist();
  auto report = tmp_path("fmnist.json");
  std::vector<std::string> data = {
    "--pipeline.source=idx", "--pipeline.data=" + fashion_mnist_dir,
    "--pipeline.dataset-size=1280", "--pipeline.eval-size=640",
    "--pipeline.batch-size=64", "--pipeline.epochs=2", "--trainer.eval",
    "--trainer.device=sim", "--trainer.sim-step-ms=2"};
  auto with_data = [&](std::vector<std::string> args) {
    args.insert(args.end(), data.begin(), data.end());
    return args;
  };
  auto head = start_head(
    "fmnist",
    with_data({"--cluster.nodes=[\"t-0:trainer\", \"w-a:worker:2\"]",
               "--report=" + report}));
  auto trainer = start_member(head.at, "fmnist", "trainer", "t-0",
                              {"--trainer.device=sim"});
  auto worker = start_member(head.at, "fmnist", "worker", "w-a");
  BOOST_TEST(wait_exit(head.proc, 120s) == 0, read_file(head.proc.log));
  BOOST_TEST(wait_exit(trainer, 20s) == 0);
  BOOST_TEST(wait_exit(worker, 20s) == 0);
  auto json = read_file(report);
  BOOST_TEST(json.find("\"missing\": 0,") != std::string::npos, json);
  BOOST_TEST(json.find("\"epoch_test_accuracy\": [null, null]")
               != std::string::npos,
             json);
  BOOST_TEST(read_file(trainer.log).find("epoch 2: train_loss")
               != std::string::npos);
  std::remove(report.c_str());
}

BOOST_AUTO_TEST_SUITE_END()
