// stoker-node: parses the configuration and runs the role it names.
// Exit codes: 0 success, 1 the run failed, 2 bad configuration.

#include <iostream>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>

#include "stoker/cluster.hpp"
#include "stoker/errors.hpp"
#include "stoker/local_run.hpp"
#include "stoker/node_config.hpp"

int main(int argc, char** argv) {
  stoker::node_config cfg;
  auto loaded = cfg.load(std::vector<std::string>(argv + 1, argv + argc));
  if (!loaded) {
    std::cerr << "stoker-node: " << stoker::describe(loaded.error())
              << std::endl;
    return 2;
  }
  if (!*loaded) { // --help, --long-help or --dump-config was printed
    std::cout << "Stoker: --config-file defaults to the embedded "
                 "config/local.ini; --long-help lists every key.\n";
    return 0;
  }
  const auto& run = **loaded;
  if (caf::get_or(cfg, "print-nodes", false)) { // for tools/launch-cluster
    for (auto& node : run.cluster.nodes)
      std::cout << node.name << ' ' << node.role << ' ' << node.workers
                << '\n';
    return 0;
  }
  caf::actor_system sys{cfg};
  if (run.role == "head")
    return stoker::head_role_main(sys, run);
  if (run.role == "worker" || run.role == "trainer")
    return stoker::member_role_main(sys, run);
  return stoker::local_role_main(sys, run);
}
