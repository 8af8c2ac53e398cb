// stoker-test-node: a user's node binary as docs/extending.md describes
// it, with the entries of custom_entries.hpp; the node_main suite runs
// clusters of it.

#include "stoker/node_main.hpp"
#include "support/custom_entries.hpp"

int main(int argc, char** argv) {
  auto reg = stoker_test::test_registry();
  return stoker::run_node(argc, argv, reg);
}
