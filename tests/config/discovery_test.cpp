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
  BOOST_TEST(node.companions.empty());
  // The same file on the GPU host: the head, and its trainer beside it.
  node_options head;
  apply_discovery(sagemaker("article.json", "algo-1"), head);
  BOOST_TEST(to_string(head.role) == "head");
  BOOST_REQUIRE_EQUAL(head.companions.size(), 1u);
  BOOST_TEST(head.companions[0].name == "algo-1");
  BOOST_TEST(to_string(head.companions[0].role) == "trainer");
  BOOST_REQUIRE_EQUAL(head.cluster.nodes.size(), 2u);
  BOOST_TEST(to_string(head.cluster.nodes[1].role) == "worker");
}

// "name:role" for each node of a plan (cluster.nodes).
std::string plan_of(const node_options& node) {
  std::string out;
  for (auto& n : node.cluster.nodes)
    out += (out.empty() ? "" : " ") + n.name + ":" + to_string(n.role);
  return out;
}

BOOST_AUTO_TEST_CASE(a_homogeneous_cluster_trains_on_every_host) {
  BOOST_TEST(roles_of(sagemaker("homogeneous.json"))
             == "algo-1:trainer* algo-2:trainer algo-3:trainer<");
}

// No worker host (a homogeneous cluster, a file without instance groups):
// the head waited for ever with nothing to make batches. Each trainer
// host now runs its own CPU workers, a worker node HOST-cpu beside it.
BOOST_AUTO_TEST_CASE(trainer_hosts_without_worker_hosts_run_their_own_workers) {
  node_options on3;
  apply_discovery(sagemaker("homogeneous.json"), on3);
  BOOST_TEST(plan_of(on3)
             == "algo-1:trainer algo-1-cpu:worker algo-2:trainer "
                "algo-2-cpu:worker algo-3:trainer algo-3-cpu:worker");
  BOOST_TEST(to_string(on3.role) == "trainer");
  BOOST_TEST(on3.name == "algo-3");
  BOOST_REQUIRE_EQUAL(on3.companions.size(), 1u);
  BOOST_TEST(on3.companions[0].name == "algo-3-cpu");
  BOOST_TEST(to_string(on3.companions[0].role) == "worker");
  BOOST_TEST(on3.discovered.find("no worker host") != std::string::npos,
             on3.discovered);
  // The head's host: the head, its trainer and its workers.
  node_options on1;
  apply_discovery(sagemaker("homogeneous.json", "algo-1"), on1);
  BOOST_TEST(to_string(on1.role) == "head");
  BOOST_REQUIRE_EQUAL(on1.companions.size(), 2u);
  BOOST_TEST(on1.companions[0].name == "algo-1");
  BOOST_TEST(to_string(on1.companions[0].role) == "trainer");
  BOOST_TEST(on1.companions[1].name == "algo-1-cpu");
  BOOST_TEST(to_string(on1.companions[1].role) == "worker");
  BOOST_TEST(plan_of(on1) == plan_of(on3));
  // With a worker host, no trainer host runs workers of its own.
  node_options article;
  apply_discovery(sagemaker("article.json", "algo-1"), article);
  BOOST_TEST(plan_of(article) == "algo-1:trainer algo-2:worker");
}

// A host or a group named twice was taken (the second "gpu" group won and
// the GPU hosts became workers); each is refused by name.
BOOST_AUTO_TEST_CASE(a_host_or_group_named_twice_is_refused_by_name) {
  BOOST_TEST(sagemaker_error(R"({"hosts": ["a", "b", "a"],
    "current_host": "a"})")
               .find("F: host \"a\" is listed twice in \"hosts\"")
             != std::string::npos);
  BOOST_TEST(sagemaker_error(R"({"hosts": ["a", "b"], "current_host": "a",
    "instance_groups": [{"instance_group_name": "gpu",
                         "instance_type": "x", "hosts": ["a"]},
                        {"instance_group_name": "gpu",
                         "instance_type": "y", "hosts": ["b"]}]})")
               .find("F: instance_groups[1]: instance_group_name \"gpu\" is "
                     "also instance_groups[0]'s")
             != std::string::npos);
  BOOST_TEST(sagemaker_error(R"({"hosts": ["a", "b"], "current_host": "a",
    "instance_groups": [{"instance_group_name": "gpu",
                         "instance_type": "x", "hosts": ["a", "a"]},
                        {"instance_group_name": "cpu",
                         "instance_type": "y", "hosts": ["b"]}]})")
               .find("host \"a\" is listed twice in instance group \"gpu\"")
             != std::string::npos);
  BOOST_TEST(sagemaker_error(R"({"hosts": ["a", "b"], "current_host": "a",
    "instance_groups": [{"instance_group_name": "gpu",
                         "instance_type": "x", "hosts": ["a"]},
                        {"instance_group_name": "cpu",
                         "instance_type": "y", "hosts": ["a", "b"]}]})")
               .find("host \"a\" is in two instance groups (\"gpu\" and "
                     "\"cpu\")")
             != std::string::npos);
  environment_map env{{"SLURM_PROCID", "0"},
                      {"SLURM_JOB_NODELIST", "n[1-2],n1"}};
  BOOST_TEST(describe(discover_slurm(env, "", "").error())
               .find("host \"n1\" is listed twice in SLURM_JOB_NODELIST")
             != std::string::npos);
  environment_map het{{"SLURM_PROCID", "0"},
                      {"SLURM_HET_SIZE", "2"},
                      {"SLURM_JOB_NODELIST_HET_GROUP_0", "c1,g1"},
                      {"SLURM_JOB_NODELIST_HET_GROUP_1", "g1"},
                      {"SLURM_GPUS_PER_NODE_HET_GROUP_1", "4"}};
  BOOST_TEST(describe(discover_slurm(het, "", "").error())
               .find("host \"g1\" is listed twice (in "
                     "SLURM_JOB_NODELIST_HET_GROUP_0 and "
                     "SLURM_JOB_NODELIST_HET_GROUP_1)")
             != std::string::npos);
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
  BOOST_REQUIRE_EQUAL(head.companions.size(), 1u);
  BOOST_TEST(to_string(head.companions[0].role) == "worker");
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

// Every task of a job must work out one plan: each host's plan (the
// nodes, their roles, the head) for the environment each task sees.
std::vector<std::string>
plans_of_every_task(const std::vector<environment_map>& tasks) {
  std::vector<std::string> plans;
  for (auto& env : tasks) {
    auto c = discover_slurm(env, "", "");
    BOOST_REQUIRE_MESSAGE(static_cast<bool>(c), why(c));
    node_options node;
    apply_discovery(*c, node);
    plans.push_back(plan_of(node) + " head " + node.cluster.head_host);
  }
  return plans;
}

// Roles came from each node's own SLURM_GPUS_ON_NODE: with GPUs on some
// nodes only, each host printed another plan and the run hung. The plan
// is now a function of job-wide facts, the same on every host.
BOOST_AUTO_TEST_CASE(every_slurm_task_works_out_the_same_plan) {
  auto job = [](const environment_map& shared,
                const std::vector<std::string>& hosts,
                const std::vector<environment_map>& own) {
    std::vector<environment_map> tasks;
    for (size_t i = 0; i < hosts.size(); ++i) {
      auto env = shared;
      env["SLURM_PROCID"] = std::to_string(i);
      env["SLURMD_NODENAME"] = hosts[i];
      for (auto& [k, v] : own[i])
        env[k] = v;
      tasks.push_back(std::move(env));
    }
    return tasks;
  };
  // GPUs on n1 and n3 only (a job over mixed nodes): each node's own
  // variables differ; every task prints the first plan.
  auto mixed = plans_of_every_task(
    job({{"SLURM_JOB_NODELIST", "n[1-3]"}, {"SLURM_NTASKS", "3"}},
        {"n1", "n2", "n3"},
        {{{"SLURM_GPUS_ON_NODE", "2"}, {"SLURM_JOB_GPUS", "0,1"}},
         {},
         {{"SLURM_GPUS_ON_NODE", "1"}, {"SLURM_JOB_GPUS", "0"}}}));
  for (auto& plan : mixed)
    BOOST_TEST(plan == mixed[0]);
  BOOST_TEST(mixed[0] == "n1:trainer n2:worker n3:worker head n1");
  // --gpus-per-node: every host trains, and runs its own workers.
  auto every = plans_of_every_task(
    job({{"SLURM_JOB_NODELIST", "g[1-2]"}, {"SLURM_GPUS_PER_NODE", "4"}},
        {"g1", "g2"}, {{{"SLURM_GPUS_ON_NODE", "4"}}, {}}));
  BOOST_TEST(every[0] == every[1]);
  BOOST_TEST(every[0]
             == "g1:trainer g1-cpu:worker g2:trainer g2-cpu:worker head g1");
  // A het job: the group's job-wide GPU request, not a node's own.
  auto het = plans_of_every_task(
    job({{"SLURM_HET_SIZE", "2"},
         {"SLURM_JOB_NODELIST_HET_GROUP_0", "c[1-2]"},
         {"SLURM_JOB_NODELIST_HET_GROUP_1", "g1"},
         {"SLURM_TRES_PER_NODE_HET_GROUP_1", "gres/gpu:2"}},
        {"c1", "c2", "g1"},
        {{{"SLURM_JOB_GPUS_HET_GROUP_0", "0"}}, {},
         {{"SLURM_JOB_GPUS_HET_GROUP_1", "0,1"}}}));
  for (auto& plan : het)
    BOOST_TEST(plan == het[0]);
  BOOST_TEST(het[0] == "c1:worker c2:worker g1:trainer head c1");
}

BOOST_AUTO_TEST_CASE(a_plain_slurm_job_and_its_errors) {
  environment_map env{{"SLURM_PROCID", "1"},
                      {"SLURM_JOB_NODELIST", "n[1-3]"},
                      {"SLURM_NTASKS", "3"}};
  auto c = discover_slurm(env, "", "");
  BOOST_REQUIRE(static_cast<bool>(c));
  BOOST_TEST(roles_of(*c) == "n1:trainer* n2:worker< n3:worker");
  env["SLURM_GPUS_ON_NODE"] = "2"; // this node's own: not read
  BOOST_TEST(roles_of(*discover_slurm(env, "", ""))
             == "n1:trainer* n2:worker< n3:worker");
  env["SLURM_TRES_PER_NODE"] = "gres/gpu:2"; // the job's
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
