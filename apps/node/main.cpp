// stoker-node: Stoker's own sources, transforms and models, and nothing
// else; a user's node binary is the same three lines with its additions
// registered (docs/extending.md).
// Exit codes: 0 success, 1 the run failed, 2 bad configuration.

#include "stoker/node_main.hpp"

int main(int argc, char** argv) {
  return stoker::run_node(argc, argv, stoker::builtin_registry());
}
