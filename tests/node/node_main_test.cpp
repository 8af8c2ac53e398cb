#include <boost/test/unit_test.hpp>

#include "support/node_processes.hpp"

// run_node in a user's own binary: stoker-test-node (tests/custom_node.cpp)
// registers a source, a transform and a model of its own; clusters of it
// run them, and a node built without them refuses to join.

using namespace stoker_test;

namespace {

child start_test_node(std::vector<std::string> args, const std::string& log) {
  return start(STOKER_TEST_NODE_BINARY, std::move(args), log);
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The user's pipeline: ids in pixels, affine(2, 1), a model that checks it.
std::vector<std::string> user_pipeline(const std::string& transform) {
  return {"--pipeline.source=id-images(6, 5)",
          "--pipeline.dataset-size=320",
          "--pipeline.batch-size=32",
          "--pipeline.transforms=[\"to-tensor\", \"" + transform + "\"]",
          "--trainer.model=check-affine(2, 1)",
          "--trainer.device=cpu",
          "--trainer.threads=1",
          "--trainer.lr=0.01",
          "--trainer.log-every=1000"};
}

// Starts a head of stoker-test-node waiting for `nodes`.
head_node start_test_head(const std::string& tag, const std::string& nodes,
                          std::vector<std::string> extra) {
  extra.push_back("--cluster.nodes=" + nodes);
  return start_head(tag, std::move(extra), STOKER_TEST_NODE_BINARY);
}

} // namespace

BOOST_AUTO_TEST_SUITE(node_main)

BOOST_AUTO_TEST_CASE(a_custom_source_transform_and_model_run_on_a_loopback_cluster) {
  auto report = tmp_path("custom.json");
  auto args = user_pipeline("affine(2, 1)");
  args.push_back("--report=" + report);
  auto head = start_test_head(
    "custom", "[\"t-0:trainer\", \"w-a:worker:1\", \"w-b:worker:1\"]", args);
  const std::string node = STOKER_TEST_NODE_BINARY;
  auto trainer = start_member(head.at, "custom", "trainer", "t-0",
                              {"--trainer.device=cpu"}, node);
  auto a = start_member(head.at, "custom", "worker", "w-a",
                        {"--worker.count=1"}, node);
  auto b = start_member(head.at, "custom", "worker", "w-b",
                        {"--worker.count=1"}, node);
  BOOST_TEST(wait_exit(head.proc, 120s) == 0, read_file(head.proc.log));
  for (auto* c : {&trainer, &a, &b})
    BOOST_TEST(wait_exit(*c, 20s) == 0, read_file(c->log));
  // Every image passed the model's pixel check (else the step throws and
  // the run fails), exactly once, on the CPU model.
  auto json = read_file(report);
  BOOST_TEST(has(json, "\"samples_delivered\": 320,"), json);
  BOOST_TEST(has(json, "\"missing\": 0,"));
  BOOST_TEST(has(json, "\"trainer_device\": \"cpu\""));
  BOOST_TEST(has(json, "\"trainer_simulated\": false"));
  auto per_worker = batches_by_worker(json);
  BOOST_TEST(per_worker["w-a/0"] + per_worker["w-b/0"] == 10, json);
  std::remove(report.c_str());
}

BOOST_AUTO_TEST_CASE(the_user_model_fails_the_run_when_the_images_differ) {
  // affine(3, 1) where the model expects affine(2, 1): the check is live.
  auto args = user_pipeline("affine(3, 1)");
  args.push_back("--worker.count=1");
  auto local = start_test_node(args, tmp_path("mismatch.log"));
  BOOST_TEST(wait_exit(local, 60s) == 1);
  auto log = read_file(local.log);
  BOOST_TEST(has(log, "check-affine: pixel"), log);
}

BOOST_AUTO_TEST_CASE(a_node_without_the_entries_refuses_to_join_naming_them) {
  auto args = user_pipeline("affine(2, 1)");
  args.push_back("--cluster.join-timeout=4s");
  auto head = start_test_head("refuse",
                              "[\"t-0:trainer\", \"w-a:worker:1\"]", args);
  auto trainer = start_member(head.at, "refuse", "trainer", "t-0",
                              {"--trainer.device=cpu"},
                              STOKER_TEST_NODE_BINARY);
  // Plain stoker-node: Stoker's own entries only.
  auto plain = start_member(head.at, "refuse", "worker", "w-a");
  BOOST_TEST(wait_exit(plain, 30s) == 1);
  auto log = read_file(plain.log);
  BOOST_TEST(has(log, "node 'w-a' refuses to join: the head's pipeline uses "
                      "source 'id-images' (pipeline.source) but this node's "
                      "registry has no such source"),
             log);
  BOOST_TEST(wait_exit(head.proc, 60s) != 0); // w-a never joined
  BOOST_TEST(wait_exit(trainer, 20s) >= 0);
  // Given the user's pipeline itself, plain stoker-node stops at the config.
  auto direct = start_node(user_pipeline("affine(2, 1)"),
                           tmp_path("refuse-local.log"));
  BOOST_TEST(wait_exit(direct, 30s) == 2);
  BOOST_TEST(has(read_file(direct.log),
                 "pipeline.source = \"id-images(6, 5)\": unknown source "
                 "'id-images'; expected synthetic, idx, image-folder or tar-shards"));
}

BOOST_AUTO_TEST_SUITE_END()
