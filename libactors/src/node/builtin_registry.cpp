#include "stoker/registry.hpp"

#include "registry/builtins.hpp"

namespace stoker {

// Here, above the folders that define them: the built-in sources (data/),
// transforms (transforms/) and models (train/).
registry builtin_registry() {
  registry reg;
  detail::add_builtin_sources(reg);
  detail::add_builtin_transforms(reg);
  detail::add_builtin_models(reg);
  return reg;
}

} // namespace stoker
