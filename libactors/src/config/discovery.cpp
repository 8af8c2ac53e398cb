#include "config/discovery.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <set>

#include <nlohmann/json.hpp>

#include "stoker/errors.hpp"
#include "config/run_config.hpp"

extern char** environ;

namespace stoker {

namespace {

caf::error bad(const std::string& where, const std::string& what) {
  return make_error(errc::invalid_config, where + ": " + what);
}

using json = nlohmann::json;

// The string field `key` of object `j`, or an error naming it.
caf::expected<std::string> text_field(const json& j, const char* key,
                                      const std::string& where) {
  auto i = j.find(key);
  if (i == j.end())
    return bad(where, std::string{"no \""} + key + "\" field");
  if (!i->is_string() || i->get<std::string>().empty())
    return bad(where, std::string{"\""} + key
                        + "\" is not a non-empty string");
  return i->get<std::string>();
}

// The array of host names `key` of object `j`, or an error naming it.
caf::expected<std::vector<std::string>>
hosts_field(const json& j, const char* key, const std::string& where) {
  auto i = j.find(key);
  if (i == j.end())
    return bad(where, std::string{"no \""} + key + "\" field");
  if (!i->is_array() || i->empty())
    return bad(where, std::string{"\""} + key
                        + "\" is not a non-empty list of host names");
  std::vector<std::string> out;
  for (auto& h : *i) {
    if (!h.is_string() || h.get<std::string>().empty())
      return bad(where, std::string{"\""} + key
                          + "\" holds something other than a host name");
    out.push_back(h.get<std::string>());
  }
  return out;
}

// The first name `names` holds twice, or "".
std::string listed_twice(const std::vector<std::string>& names) {
  std::set<std::string> seen;
  for (auto& n : names)
    if (!seen.insert(n).second)
      return n;
  return {};
}

bool has_gpus(const std::string& value) {
  if (value.empty() || value == "0")
    return false;
  return value.find_first_not_of("0") != std::string::npos;
}

std::string get(const environment_map& env, const std::string& key) {
  auto i = env.find(key);
  return i == env.end() ? std::string{} : i->second;
}

// Expands one bracket group's inside ("01-03,07") into its numbers as text.
caf::expected<std::vector<std::string>>
expand_ranges(std::string_view inside, std::string_view list) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at <= inside.size()) {
    auto comma = inside.find(',', at);
    auto part = inside.substr(at, comma == std::string_view::npos
                                    ? std::string_view::npos
                                    : comma - at);
    auto dash = part.find('-');
    auto lo = part.substr(0, dash);
    auto hi = dash == std::string_view::npos ? lo : part.substr(dash + 1);
    auto digits = [](std::string_view s) {
      return !s.empty() && s.size() <= 18
             && std::all_of(s.begin(), s.end(),
                            [](char c) { return c >= '0' && c <= '9'; });
    };
    if (!digits(lo) || !digits(hi))
      return make_error(errc::invalid_config,
                        "hostlist \"" + std::string{list} + "\": \""
                          + std::string{part}
                          + "\": expected N or N-M (digits)");
    auto a = std::stoull(std::string{lo});
    auto b = std::stoull(std::string{hi});
    if (b < a)
      return make_error(errc::invalid_config,
                        "hostlist \"" + std::string{list} + "\": \""
                          + std::string{part} + "\" runs backwards");
    if (b - a > 100000)
      return make_error(errc::invalid_config,
                        "hostlist \"" + std::string{list} + "\": \""
                          + std::string{part}
                          + "\" names over 100,000 hosts");
    auto width = lo.size(); // "01": two digits, zero-padded
    for (auto n = a; n <= b; ++n) {
      auto text = std::to_string(n);
      if (text.size() < width)
        text.insert(0, width - text.size(), '0');
      out.push_back(std::move(text));
    }
    if (comma == std::string_view::npos)
      break;
    at = comma + 1;
  }
  return out;
}

// Expands one host pattern without top-level commas ("rack[1-2]-n[01-02]").
caf::expected<std::vector<std::string>> expand_one(std::string_view name,
                                                   std::string_view list) {
  std::vector<std::string> out{""};
  size_t at = 0;
  while (at < name.size()) {
    auto open = name.find('[', at);
    auto literal = name.substr(at, open == std::string_view::npos
                                     ? std::string_view::npos
                                     : open - at);
    if (literal.find(']') != std::string_view::npos)
      return make_error(errc::invalid_config,
                        "hostlist \"" + std::string{list}
                          + "\": a ']' without its '['");
    for (auto& o : out)
      o += literal;
    if (open == std::string_view::npos)
      break;
    auto close = name.find(']', open);
    if (close == std::string_view::npos)
      return make_error(errc::invalid_config,
                        "hostlist \"" + std::string{list}
                          + "\": a '[' without its ']'");
    auto inside = name.substr(open + 1, close - open - 1);
    if (inside.find('[') != std::string_view::npos)
      return make_error(errc::invalid_config,
                        "hostlist \"" + std::string{list}
                          + "\": nested brackets; expected NAME[RANGES] "
                            "with ranges of digits");
    auto numbers = expand_ranges(inside, list);
    if (!numbers)
      return std::move(numbers.error());
    std::vector<std::string> next;
    for (auto& o : out)
      for (auto& n : *numbers)
        next.push_back(o + n);
    out = std::move(next);
    at = close + 1;
  }
  return out;
}

} // namespace

caf::expected<std::vector<std::string>> expand_hostlist(std::string_view list) {
  std::vector<std::string> out;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= list.size(); ++i) {
    char c = i < list.size() ? list[i] : ',';
    if (c == '[')
      ++depth;
    else if (c == ']')
      --depth;
    if (depth < 0)
      return make_error(errc::invalid_config,
                        "hostlist \"" + std::string{list}
                          + "\": a ']' without its '['");
    if (c == ',' && depth == 0) {
      auto name = list.substr(start, i - start);
      if (name.empty())
        return make_error(errc::invalid_config,
                          "hostlist \"" + std::string{list}
                            + "\": an empty host name");
      auto hosts = expand_one(name, list);
      if (!hosts)
        return std::move(hosts.error());
      out.insert(out.end(), hosts->begin(), hosts->end());
      start = i + 1;
    }
  }
  if (depth != 0)
    return make_error(errc::invalid_config,
                      "hostlist \"" + std::string{list}
                        + "\": a '[' without its ']'");
  return out;
}

caf::expected<discovered_cluster>
discover_sagemaker(const std::string& text, const std::string& where,
                   const std::string& trainer_group,
                   const std::string& current_host) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return bad(where, "not a JSON object; expected SageMaker's "
                      "resourceconfig.json");
  auto hosts = hosts_field(j, "hosts", where);
  if (!hosts)
    return std::move(hosts.error());
  if (auto twice = listed_twice(*hosts); !twice.empty())
    return bad(where, "host \"" + twice + "\" is listed twice in \"hosts\"; "
                      "expected each host once");
  std::string self = current_host;
  if (self.empty()) {
    auto from_file = text_field(j, "current_host", where);
    if (!from_file)
      return std::move(from_file.error());
    self = *from_file;
  }
  discovered_cluster out;
  out.source = "sagemaker (" + where + ")";
  // Each host's group: from instance_groups, or one group of every host.
  std::map<std::string, std::pair<std::string, std::string>> group_of;
  std::vector<std::string> trainers;
  auto groups = j.find("instance_groups");
  if (groups == j.end()) {
    trainers = *hosts;
  } else {
    if (!groups->is_array() || groups->empty())
      return bad(where, "\"instance_groups\" is not a non-empty list");
    bool found = false;
    std::map<std::string, size_t> group_index; // name -> its first index
    for (size_t g = 0; g < groups->size(); ++g) {
      auto& group = (*groups)[g];
      auto at = where + ": instance_groups[" + std::to_string(g) + "]";
      if (!group.is_object())
        return bad(at, "not an object");
      auto name = text_field(group, "instance_group_name", at);
      if (!name)
        return std::move(name.error());
      auto type = text_field(group, "instance_type", at);
      if (!type)
        return std::move(type.error());
      // Two groups of one name: the second "gpu" used to win, and the
      // real GPU hosts became workers.
      if (auto [first, fresh] = group_index.emplace(*name, g); !fresh)
        return bad(at, "instance_group_name \"" + *name
                         + "\" is also instance_groups["
                         + std::to_string(first->second)
                         + "]'s; expected each group named once");
      auto members = hosts_field(group, "hosts", at);
      if (!members)
        return std::move(members.error());
      if (auto twice = listed_twice(*members); !twice.empty())
        return bad(at, "host \"" + twice
                         + "\" is listed twice in instance group \"" + *name
                         + "\"");
      for (auto& h : *members) {
        if (std::find(hosts->begin(), hosts->end(), h) == hosts->end())
          return bad(at, "host \"" + h + "\" is not in \"hosts\"");
        if (auto [other, fresh] =
              group_of.emplace(h, std::make_pair(*name, *type));
            !fresh)
          return bad(at, "host \"" + h + "\" is in two instance groups (\""
                           + other->second.first + "\" and \"" + *name
                           + "\")");
      }
      if (*name == trainer_group) {
        found = true;
        trainers = *members;
      }
    }
    if (!found)
      return bad(where, "no instance group named \"" + trainer_group
                          + "\" (cluster.trainer-group); expected the group "
                            "of the GPU hosts");
    for (auto& h : *hosts)
      if (group_of.count(h) == 0)
        return bad(where, "host \"" + h + "\" is in no instance group");
    // The current group, under either spelling, must be the host's.
    for (auto key : {"current_group_name", "current_instance_group"}) {
      auto i = j.find(key);
      if (i == j.end() || !current_host.empty())
        continue;
      if (!i->is_string())
        return bad(where, std::string{"\""} + key + "\" is not a string");
      auto mine = group_of.find(self);
      if (mine != group_of.end() && mine->second.first != i->get<std::string>())
        return bad(where, std::string{"\""} + key + "\" is \""
                            + i->get<std::string>() + "\", but host \"" + self
                            + "\" is in group \"" + mine->second.first + "\"");
    }
  }
  for (auto& h : *hosts) {
    discovered_node n;
    n.host = h;
    n.role = std::find(trainers.begin(), trainers.end(), h) != trainers.end()
               ? role_kind::trainer
               : role_kind::worker;
    if (auto g = group_of.find(h); g != group_of.end())
      n.instance_type = g->second.second;
    out.nodes.push_back(std::move(n));
  }
  auto index_of = [&](const std::string& h) {
    return static_cast<size_t>(
      std::find_if(out.nodes.begin(), out.nodes.end(),
                   [&](auto& n) { return n.host == h; })
      - out.nodes.begin());
  };
  out.head = index_of(trainers.front());
  out.self = index_of(self);
  if (out.self == out.nodes.size())
    return bad(where, "current_host \"" + self + "\" is not in \"hosts\"");
  return out;
}

caf::expected<discovered_cluster>
discover_slurm(const environment_map& env, const std::string& trainer_group,
               const std::string& current_host) {
  discovered_cluster out;
  out.source = "slurm (SLURM_JOB_NODELIST)";
  auto require = [&](const std::string& key) -> caf::expected<std::string> {
    auto v = get(env, key);
    if (v.empty())
      return make_error(errc::invalid_config,
                        "cluster.discover = slurm: " + key
                          + " is not set; expected to run under srun "
                            "--ntasks-per-node=1");
    return v;
  };
  auto procid = require("SLURM_PROCID");
  if (!procid)
    return std::move(procid.error());
  char* end = nullptr;
  auto rank = std::strtoull(procid->c_str(), &end, 10);
  if (*end != '\0')
    return make_error(errc::invalid_config,
                      "SLURM_PROCID = \"" + *procid
                        + "\": expected a task rank (a whole number)");
  std::vector<std::string> trainers;
  auto het = get(env, "SLURM_HET_SIZE");
  if (!het.empty()) {
    auto size = std::strtoul(het.c_str(), &end, 10);
    if (*end != '\0' || size == 0 || size > 64)
      return make_error(errc::invalid_config,
                        "SLURM_HET_SIZE = \"" + het
                          + "\": expected the number of het groups");
    long chosen = -1;
    if (!trainer_group.empty() && trainer_group != "gpu") {
      chosen = std::strtol(trainer_group.c_str(), &end, 10);
      if (*end != '\0' || chosen < 0 || chosen >= static_cast<long>(size))
        return make_error(errc::invalid_config,
                          "cluster.trainer-group = \"" + trainer_group
                            + "\": expected a het group number below "
                            + het + " (or empty: the group with GPUs)");
    }
    std::map<std::string, unsigned long> het_group_of; // host -> group
    for (unsigned long g = 0; g < size; ++g) {
      auto suffix = "_HET_GROUP_" + std::to_string(g);
      auto list = require("SLURM_JOB_NODELIST" + suffix);
      if (!list)
        return std::move(list.error());
      auto hosts = expand_hostlist(*list);
      if (!hosts)
        return make_error(errc::invalid_config,
                          "SLURM_JOB_NODELIST" + suffix + ": "
                            + describe(hosts.error()));
      // Job-wide facts only (the same in every task's environment):
      // SLURM_JOB_GPUS and SLURM_GPUS_ON_NODE are this node's own.
      bool gpus = false;
      for (auto key : {"SLURM_GPUS", "SLURM_GPUS_PER_NODE"})
        gpus = gpus || has_gpus(get(env, key + suffix));
      gpus = gpus
             || get(env, "SLURM_TRES_PER_NODE" + suffix).find("gpu")
                  != std::string::npos;
      bool trains = chosen >= 0 ? static_cast<long>(g) == chosen
                                : gpus && trainers.empty();
      for (auto& h : *hosts) {
        if (auto [known, fresh] = het_group_of.emplace(h, g); !fresh)
          return make_error(
            errc::invalid_config,
            "cluster.discover = slurm: host \"" + h + "\" is listed twice ("
              + (known->second == g
                   ? "in SLURM_JOB_NODELIST" + suffix
                   : "in SLURM_JOB_NODELIST_HET_GROUP_"
                       + std::to_string(known->second)
                       + " and SLURM_JOB_NODELIST" + suffix)
              + "); expected each host once");
        out.nodes.push_back(
          {h, trains ? role_kind::trainer : role_kind::worker, {}});
        if (trains)
          trainers.push_back(h);
      }
    }
    if (trainers.empty())
      return make_error(errc::invalid_config,
                        "cluster.discover = slurm: no het group has GPUs "
                        "(SLURM_GPUS*_HET_GROUP_n, "
                        "SLURM_TRES_PER_NODE_HET_GROUP_n); expected one, or "
                        "cluster.trainer-group = the het group that trains");
  } else {
    auto list = get(env, "SLURM_JOB_NODELIST");
    if (list.empty())
      list = get(env, "SLURM_NODELIST");
    if (list.empty())
      return make_error(errc::invalid_config,
                        "cluster.discover = slurm: SLURM_JOB_NODELIST is not "
                        "set; expected to run under srun "
                        "--ntasks-per-node=1");
    auto hosts = expand_hostlist(list);
    if (!hosts)
      return make_error(errc::invalid_config,
                        "SLURM_JOB_NODELIST: " + describe(hosts.error()));
    if (auto twice = listed_twice(*hosts); !twice.empty())
      return make_error(errc::invalid_config,
                        "cluster.discover = slurm: host \"" + twice
                          + "\" is listed twice in SLURM_JOB_NODELIST \""
                          + list + "\"; expected each host once");
    // GPUs on every node, from the job's request (--gpus-per-node, or
    // --gres=gpu:N): the same in every task's environment, so every host
    // works out the same plan. A node's own SLURM_GPUS_ON_NODE or
    // SLURM_JOB_GPUS differ between nodes (a job's nodes need not all
    // have GPUs) and gave each host a different plan: not read.
    bool gpus = has_gpus(get(env, "SLURM_GPUS_PER_NODE"))
                || get(env, "SLURM_TRES_PER_NODE").find("gpu")
                     != std::string::npos;
    for (size_t i = 0; i < hosts->size(); ++i)
      out.nodes.push_back({(*hosts)[i],
                           gpus || i == 0 ? role_kind::trainer
                                          : role_kind::worker,
                           {}});
  }
  if (auto tasks = get(env, "SLURM_NTASKS");
      !tasks.empty() && tasks != std::to_string(out.nodes.size()))
    return make_error(errc::invalid_config,
                      "cluster.discover = slurm: SLURM_NTASKS = " + tasks
                        + " for " + std::to_string(out.nodes.size())
                        + " host(s); expected one task per node (srun "
                          "--ntasks-per-node=1)");
  if (rank >= out.nodes.size())
    return make_error(errc::invalid_config,
                      "SLURM_PROCID = " + *procid + ": expected a rank below "
                        + std::to_string(out.nodes.size())
                        + ", the number of hosts");
  auto self = current_host;
  if (self.empty())
    self = get(env, "SLURMD_NODENAME");
  if (self.empty())
    self = out.nodes[rank].host;
  auto at = std::find_if(out.nodes.begin(), out.nodes.end(),
                         [&](auto& n) { return n.host == self; });
  if (at == out.nodes.end())
    return make_error(errc::invalid_config,
                      "cluster.discover = slurm: this host \"" + self
                        + "\" is not in the job's node list");
  out.self = static_cast<size_t>(at - out.nodes.begin());
  out.head = 0; // rank 0's host
  if (rank == 0 && out.self != 0)
    return make_error(errc::invalid_config,
                      "SLURM_PROCID = 0 on host \"" + self
                        + "\", not the job's first host \""
                        + out.nodes.front().host
                        + "\"; expected one task per node in node order");
  return out;
}

void apply_discovery(const discovered_cluster& found, node_options& node) {
  auto& c = node.cluster;
  auto& self = found.nodes[found.self];
  auto& head = found.nodes[found.head];
  if (c.bind == cluster_spec{}.bind)
    c.bind = self.host; // reachable from the other machines
  c.head_host = head.host;
  c.head_port = c.port;
  if (node.instance_type.empty())
    node.instance_type = self.instance_type;
  node.host = self.host;
  // No worker host (a homogeneous GPU cluster): each trainer host runs
  // its own CPU workers too, as the local role does, in a worker node
  // named HOST-cpu; else nothing would make batches.
  bool worker_hosts = std::any_of(found.nodes.begin(), found.nodes.end(),
                                  [](auto& n) {
                                    return n.role == role_kind::worker;
                                  });
  auto own_workers = [&](const discovered_node& n) {
    return node_spec{n.host + "-cpu", role_kind::worker, 0};
  };
  c.nodes.clear(); // the head waits for them; --print-nodes shows them
  for (auto& n : found.nodes) {
    c.nodes.push_back(node_spec{n.host, n.role, 0});
    if (!worker_hosts && n.role == role_kind::trainer)
      c.nodes.push_back(own_workers(n));
  }
  node.companions.clear();
  if (found.self == found.head) {
    node.role = role_kind::head;
    node.name = self.host + "-head";
    node.companions.push_back(node_spec{self.host, self.role, 0});
  } else {
    node.role = self.role;
    node.name = self.host;
  }
  if (!worker_hosts && self.role == role_kind::trainer)
    node.companions.push_back(own_workers(self));
  size_t trainers = 0;
  for (auto& n : found.nodes)
    trainers += n.role == role_kind::trainer ? 1 : 0;
  std::string runs = to_string(node.role);
  for (auto& beside : node.companions)
    runs += " and " + to_string(beside.role) + " " + beside.name;
  node.discovered = found.source + ": " + std::to_string(found.nodes.size())
                    + " host(s), " + std::to_string(trainers)
                    + " trainer(s)"
                    + (worker_hosts ? ""
                                    : ", no worker host: each trainer host "
                                      "runs its own CPU workers (HOST-cpu)")
                    + "; head on " + head.host + ":" + std::to_string(c.port)
                    + "; this host " + self.host + " runs " + runs;
}

caf::error apply_platform_discovery(run_config& cfg) {
  auto& c = cfg.node.cluster;
  caf::expected<discovered_cluster> found{caf::error{}};
  switch (c.discover) {
    case discover_kind::static_nodes:
      return caf::none;
    case discover_kind::sagemaker: {
      std::ifstream in{c.sagemaker_config};
      if (!in)
        return make_error(errc::invalid_config,
                          "cluster.sagemaker-config = \"" + c.sagemaker_config
                            + "\": cannot read it; expected SageMaker's "
                              "resourceconfig.json (cluster.discover = "
                              "sagemaker)");
      std::string text{std::istreambuf_iterator<char>{in},
                       std::istreambuf_iterator<char>{}};
      found = discover_sagemaker(text, c.sagemaker_config, c.trainer_group,
                                 c.current_host);
      break;
    }
    case discover_kind::slurm: {
      environment_map env;
      for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
        std::string kv = *e;
        auto eq = kv.find('=');
        if (eq != std::string::npos && kv.compare(0, 5, "SLURM") == 0)
          env[kv.substr(0, eq)] = kv.substr(eq + 1);
      }
      found = discover_slurm(env, c.trainer_group == "gpu" ? std::string{}
                                                           : c.trainer_group,
                             c.current_host);
      break;
    }
  }
  if (!found)
    return std::move(found.error());
  apply_discovery(*found, cfg.node);
  return caf::none;
}

} // namespace stoker
