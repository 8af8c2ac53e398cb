#include "stoker/node_main.hpp"

#include <csignal>
#include <iostream>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>

#include "stoker/errors.hpp"
#include "node/local_role.hpp"
#include "node/node_config.hpp"
#include "node/node_links.hpp"
#include "node/roles.hpp"

namespace stoker {

int run_node(int argc, char** argv, const registry& reg) {
  // A TLS peer that went away must be an error, not the end of the node.
  std::signal(SIGPIPE, SIG_IGN);
  std::string program = argc > 0 ? argv[0] : "stoker-node";
  program = program.substr(program.find_last_of('/') + 1);
  node_config cfg;
  auto loaded = cfg.load(std::vector<std::string>(argv + 1, argv + argc), reg);
  if (!loaded) {
    std::cerr << program << ": " << describe(loaded.error()) << std::endl;
    return 2;
  }
  if (!*loaded) { // --help, --long-help or --dump-config was printed
    std::cout << "Stoker: --config-file defaults to the embedded "
                 "config/local.ini; --long-help lists every key.\n"
                 "Registered sources: "
              << reg.source_names()
              << "\nRegistered transforms: " << reg.transform_names()
              << "\nRegistered models: " << reg.model_names() << '\n';
    return 0;
  }
  const auto& run = **loaded;
  if (run.node.print_nodes) { // for tools/launch-cluster
    for (auto& node : run.node.cluster.nodes)
      std::cout << node.name << ' ' << to_string(node.role) << ' '
                << node.workers << '\n';
    return 0;
  }
  // Before the actor system, so it outlives every CAF connection.
  auto links = node_links::open(run.node);
  if (!links) {
    std::cerr << program << ": " << describe(links.error()) << std::endl;
    return 2;
  }
  caf::actor_system sys{cfg};
  switch (run.node.role) {
    case role_kind::head:
      return head_role_main(sys, run, **links);
    case role_kind::worker:
    case role_kind::trainer:
      return member_role_main(sys, run, reg, **links);
    case role_kind::local:
      break;
  }
  return local_role_main(sys, run, reg, **links);
}

} // namespace stoker
