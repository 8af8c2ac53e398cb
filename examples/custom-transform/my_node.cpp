// my-node: stoker-node plus this project's entries. Every node of a
// cluster runs this binary; a node without them refuses to join.

#include <iostream>

#include "my_entries.hpp"
#include "stoker/errors.hpp"
#include "stoker/node_main.hpp"

int main(int argc, char** argv) {
  auto reg = stoker::builtin_registry();
  for (auto err : {reg.add(csv_images_source()),
                   reg.add(brightness_jitter_transform()),
                   reg.add(tiny_mlp_model())}) {
    if (err) {
      std::cerr << "my-node: " << stoker::describe(err) << std::endl;
      return 2;
    }
  }
  return stoker::run_node(argc, argv, reg);
}
