#include <boost/test/unit_test.hpp>

#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "stoker/errors.hpp"
#include "config/discovery.hpp"

using namespace stoker;

namespace {

// The error of an expected, or "" (Boost builds the message either way).
template <class T>
std::string why(const caf::expected<T>& x) {
  return x ? std::string{} : describe(x.error());
}

std::string fixture(const std::string& name) {
  auto path = std::string{STOKER_SOURCE_DIR} + "/tests/config/sagemaker/"
              + name;
  std::ifstream in{path};
  BOOST_REQUIRE_MESSAGE(in, "cannot read " << path);
  return {std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
}

discovered_cluster sagemaker(const std::string& name,
                             const std::string& current = {}) {
  auto found = discover_sagemaker(fixture(name), name, "gpu", current);
  BOOST_REQUIRE_MESSAGE(static_cast<bool>(found), why(found));
  return *found;
}

std::string sagemaker_error(const std::string& json) {
  auto found = discover_sagemaker(json, "F", "gpu", "");
  BOOST_REQUIRE(!found);
  return describe(found.error());
}

// "host:role" for each node, "*" on the head's host, "<" on this one's.
std::string roles_of(const discovered_cluster& c) {
  std::string out;
  for (size_t i = 0; i < c.nodes.size(); ++i)
    out += (out.empty() ? "" : " ") + c.nodes[i].host + ":"
           + to_string(c.nodes[i].role) + (i == c.head ? "*" : "")
           + (i == c.self ? "<" : "");
  return out;
}

std::vector<std::string> hosts(const std::string& list) {
  auto h = expand_hostlist(list);
  BOOST_REQUIRE_MESSAGE(static_cast<bool>(h), why(h));
  return *h;
}

std::string hostlist_error(const std::string& list) {
  auto h = expand_hostlist(list);
  BOOST_REQUIRE(!h);
  return describe(h.error());
}

} // namespace

BOOST_AUTO_TEST_SUITE(discovery)

BOOST_AUTO_TEST_CASE(the_articles_cluster_puts_the_head_on_the_gpu_host) {
  auto c = sagemaker("article.json");
  BOOST_TEST(roles_of(c) == "algo-1:trainer* algo-2:worker<");
  BOOST_TEST(c.nodes[0].instance_type == "ml.g5.xlarge");
  BOOST_TEST(c.nodes[1].instance_type == "ml.c5.4xlarge");
  node_options node;
  apply_discovery(c, node);
  BOOST_TEST(to_string(node.role) == "worker");
  BOOST_TEST(node.name == "algo-2");
  BOOST_TEST(node.host == "algo-2");
  BOOST_TEST(node.cluster.head_host == "algo-1");
  BOOST_TEST(node.cluster.head_port == 4242);
  BOOST_TEST(node.cluster.bind == "algo-2"); // reachable from algo-1
  BOOST_TEST(node.instance_type == "ml.c5.4xlarge");
  BOOST_TEST(!node.companion);
  // The same file on the GPU host: the head, and its trainer beside it.
  node_options head;
  apply_discovery(sagemaker("article.json", "algo-1"), head);
  BOOST_TEST(to_string(head.role) == "head");
  BOOST_REQUIRE(head.companion.has_value());
  BOOST_TEST(head.companion->name == "algo-1");
  BOOST_TEST(to_string(head.companion->role) == "trainer");
  BOOST_REQUIRE_EQUAL(head.cluster.nodes.size(), 2u);
  BOOST_TEST(to_string(head.cluster.nodes[1].role) == "worker");
}

BOOST_AUTO_TEST_CASE(a_homogeneous_cluster_trains_on_every_host) {
  BOOST_TEST(roles_of(sagemaker("homogeneous.json"))
             == "algo-1:trainer* algo-2:trainer algo-3:trainer<");
}

BOOST_AUTO_TEST_CASE(two_gpu_hosts_and_three_cpu_hosts) {
  // The head goes to the first host of the gpu group as the group lists
  // them (algo-2), not the first of "hosts".
  BOOST_TEST(roles_of(sagemaker("two-gpu-three-cpu.json"))
             == "algo-1:trainer algo-2:trainer* algo-3:worker "
                "algo-4:worker< algo-5:worker");
}

BOOST_AUTO_TEST_CASE(the_local_mode_spelling_of_the_current_group_works) {
  BOOST_TEST(roles_of(sagemaker("local-mode.json"))
             == "algo-1-x7k2p:trainer*< algo-2-m3q9z:worker");
}

BOOST_AUTO_TEST_CASE(missing_and_wrong_fields_are_named) {
  BOOST_TEST(sagemaker_error("{").find("F: not a JSON object")
             != std::string::npos);
  BOOST_TEST(sagemaker_error(R"({"current_host": "a"})")
               .find("F: no \"hosts\" field")
             != std::string::npos);
  BOOST_TEST(sagemaker_error(R"({"hosts": ["a"]})")
               .find("no \"current_host\" field")
             != std::string::npos);
  BOOST_TEST(sagemaker_error(R"({"hosts": ["a"], "current_host": "b"})")
               .find("current_host \"b\" is not in \"hosts\"")
             != std::string::npos);
  BOOST_TEST(sagemaker_error(R"({"hosts": ["a", "b"], "current_host": "a",
    "instance_groups": [{"instance_group_name": "cpu",
                         "instance_type": "x", "hosts": ["a", "b"]}]})")
               .find("no instance group named \"gpu\"")
             != std::string::npos);
  BOOST_TEST(sagemaker_error(R"({"hosts": ["a"], "current_host": "a",
    "instance_groups": [{"instance_group_name": "gpu", "hosts": ["a"]}]})")
               .find("F: instance_groups[0]: no \"instance_type\" field")
             != std::string::npos);
  BOOST_TEST(sagemaker_error(R"({"hosts": ["a"], "current_host": "a",
    "instance_groups": [{"instance_group_name": "gpu",
                         "instance_type": "x", "hosts": ["z"]}]})")
               .find("host \"z\" is not in \"hosts\"")
             != std::string::npos);
  BOOST_TEST(sagemaker_error(R"({"hosts": ["a", "b"], "current_host": "a",
    "current_group_name": "cpu",
    "instance_groups": [{"instance_group_name": "gpu",
                         "instance_type": "x", "hosts": ["a"]},
                        {"instance_group_name": "cpu",
                         "instance_type": "y", "hosts": ["b"]}]})")
               .find("\"current_group_name\" is \"cpu\", but host \"a\" is "
                     "in group \"gpu\"")
             != std::string::npos);
}

BOOST_AUTO_TEST_CASE(slurm_hostlists_expand_ranges_padding_and_lists) {
  BOOST_TEST(hosts("node1") == std::vector<std::string>{"node1"});
  BOOST_TEST(hosts("gpu[01-03,07],cpu[1-2]")
             == (std::vector<std::string>{"gpu01", "gpu02", "gpu03", "gpu07",
                                          "cpu1", "cpu2"}));
  BOOST_TEST(hosts("n[8-10]") == (std::vector<std::string>{"n8", "n9",
                                                           "n10"}));
  BOOST_TEST(hosts("rack[1-2]-n[01-02]")
             == (std::vector<std::string>{"rack1-n01", "rack1-n02",
                                          "rack2-n01", "rack2-n02"}));
  BOOST_TEST(hosts("a,b-ib") == (std::vector<std::string>{"a", "b-ib"}));
  BOOST_TEST(hostlist_error("gpu[1-[2-3]]").find("nested brackets")
             != std::string::npos);
  BOOST_TEST(hostlist_error("gpu[1-3").find("a '[' without its ']'")
             != std::string::npos);
  BOOST_TEST(hostlist_error("gpu1-3]").find("a ']' without its '['")
             != std::string::npos);
  BOOST_TEST(hostlist_error("gpu[5-2]").find("\"5-2\" runs backwards")
             != std::string::npos);
  BOOST_TEST(hostlist_error("gpu[a-b]").find("expected N or N-M")
             != std::string::npos);
  BOOST_TEST(hostlist_error("a,,b").find("an empty host name")
             != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_slurm_het_job_trains_on_the_component_with_gpus) {
  environment_map env{
    {"SLURM_PROCID", "3"},
    {"SLURMD_NODENAME", "gpu2"},
    {"SLURM_NTASKS", "4"},
    {"SLURM_HET_SIZE", "2"},
    {"SLURM_JOB_NODELIST_HET_GROUP_0", "cpu[1-2]"},
    {"SLURM_JOB_NODELIST_HET_GROUP_1", "gpu[1-2]"},
    {"SLURM_TRES_PER_NODE_HET_GROUP_1", "gres/gpu:4"},
  };
  auto c = discover_slurm(env, "", "");
  BOOST_REQUIRE_MESSAGE(static_cast<bool>(c), why(c));
  // Rank 0 (cpu1) hosts the head; the gpu component trains.
  BOOST_TEST(roles_of(*c)
             == "cpu1:worker* cpu2:worker gpu1:trainer gpu2:trainer<");
  node_options head;
  env["SLURM_PROCID"] = "0";
  env["SLURMD_NODENAME"] = "cpu1";
  auto on_head = discover_slurm(env, "", "");
  BOOST_REQUIRE(static_cast<bool>(on_head));
  apply_discovery(*on_head, head);
  BOOST_TEST(to_string(head.role) == "head");
  BOOST_TEST(to_string(head.companion->role) == "worker");
  // Without a GPU hint the trainer group must be named.
  env.erase("SLURM_TRES_PER_NODE_HET_GROUP_1");
  auto none = discover_slurm(env, "", "");
  BOOST_REQUIRE(!none);
  BOOST_TEST(describe(none.error()).find("no het group has GPUs")
             != std::string::npos);
  auto named = discover_slurm(env, "1", "");
  BOOST_REQUIRE(static_cast<bool>(named));
  BOOST_TEST(roles_of(*named)
             == "cpu1:worker*< cpu2:worker gpu1:trainer gpu2:trainer");
}

BOOST_AUTO_TEST_CASE(a_plain_slurm_job_and_its_errors) {
  environment_map env{{"SLURM_PROCID", "1"},
                      {"SLURM_JOB_NODELIST", "n[1-3]"},
                      {"SLURM_NTASKS", "3"}};
  auto c = discover_slurm(env, "", "");
  BOOST_REQUIRE(static_cast<bool>(c));
  BOOST_TEST(roles_of(*c) == "n1:trainer* n2:worker< n3:worker");
  env["SLURM_GPUS_ON_NODE"] = "2";
  BOOST_TEST(roles_of(*discover_slurm(env, "", ""))
             == "n1:trainer* n2:trainer< n3:trainer");
  env["SLURM_NTASKS"] = "6";
  BOOST_TEST(describe(discover_slurm(env, "", "").error())
               .find("SLURM_NTASKS = 6 for 3 host(s)")
             != std::string::npos);
  env.erase("SLURM_PROCID");
  BOOST_TEST(describe(discover_slurm(env, "", "").error())
               .find("SLURM_PROCID is not set")
             != std::string::npos);
  env = {{"SLURM_PROCID", "x"}, {"SLURM_JOB_NODELIST", "n1"}};
  BOOST_TEST(describe(discover_slurm(env, "", "").error())
               .find("SLURM_PROCID = \"x\"")
             != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
