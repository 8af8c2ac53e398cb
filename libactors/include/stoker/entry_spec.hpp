#pragma once

// stoker layer: core

#include <string>
#include <string_view>
#include <vector>

#include <caf/expected.hpp>
#include <caf/meta/type_name.hpp>

namespace stoker {

/// One use of a registered name in a config file: "random-crop(28, 4)" is
/// name "random-crop" with args {28, 4}. Sources (`pipeline.source`),
/// transforms (`pipeline.transforms`) and models (`trainer.model`) are all
/// written this way; the registry (registry.hpp) says which names exist
/// and what their arguments mean.
struct entry_spec {
  std::string name;
  std::vector<double> args;
  /// A first argument that names code rather than a number,
  /// "MODULE:CALLABLE" ("python(my_aug:trivial_wide)"); empty for most
  /// entries (the registry refuses one where the entry takes none).
  std::string ref;
  std::string text; ///< as written, for error messages
  /// The registered entry's version, recorded by the head
  /// (stamp_versions); empty until then.
  std::string version;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, entry_spec& x) {
  return f(caf::meta::type_name("entry_spec"), x.name, x.args, x.ref,
           x.text, x.version);
}

/// One entry of `pipeline.transforms`: a registered transform's name with
/// its arguments (registry.hpp; the chain's checks in transform_chain.hpp).
using transform_spec = entry_spec;

/// An entry as if written "name(a, b)" (just "name" without arguments):
/// for entries made in code, e.g. a transform's evaluation form.
entry_spec make_entry(std::string name, std::vector<double> args = {});

/// Parses "name" or "name(a, b, ...)" with numeric arguments, the first
/// of which may be a reference "MODULE:CALLABLE" (dotted names); the syntax
/// only (the registry checks the name and the argument count). Errors
/// (errc::invalid_config) quote the entry.
caf::expected<entry_spec> parse_entry(std::string_view text);

} // namespace stoker
