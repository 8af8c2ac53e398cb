#include "stoker/registry.hpp"

#include <algorithm>
#include <cctype>
#include <stdexcept>
#include <type_traits>

#include "stoker/errors.hpp"
#include "registry/builtins.hpp"

namespace stoker {

namespace {

caf::error bad(const std::string& what) {
  return make_error(errc::invalid_config, what);
}

// The checks every kind of entry shares.
template <class Def>
caf::error admit(const std::vector<Def>& known, const Def& def,
                 const char* kind, const char* missing) {
  if (def.name.empty())
    return bad(std::string{"registry: a "} + kind
               + " without a name; expected the name config files use");
  for (char c : def.name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_'
        && c != '.')
      return bad(std::string{"registry: "} + kind + " name '" + def.name
                 + "': expected letters, digits, '-', '_' or '.' (config "
                   "files write NAME(ARGS))");
  for (auto& k : known)
    if (k.name == def.name)
      return bad(std::string{"registry: "} + kind + " '" + def.name
                 + "' is registered already; expected each name once");
  if (def.min_args > def.max_args)
    return bad(std::string{"registry: "} + kind + " '" + def.name
               + "': min_args " + std::to_string(def.min_args)
               + " is above max_args " + std::to_string(def.max_args));
  if (missing != nullptr)
    return bad(std::string{"registry: "} + kind + " '" + def.name
               + "' has no " + missing + " function");
  return caf::none;
}

template <class Def>
const Def* find(const std::vector<Def>& defs, std::string_view name) {
  auto i = std::find_if(defs.begin(), defs.end(),
                        [&](const Def& d) { return d.name == name; });
  return i == defs.end() ? nullptr : &*i;
}

template <class Def>
std::string names_of(const std::vector<Def>& defs) {
  std::string out;
  for (size_t i = 0; i < defs.size(); ++i) {
    if (i > 0)
      out += i + 1 == defs.size() ? " or " : ", ";
    out += defs[i].name;
  }
  return out.empty() ? "(none registered)" : out;
}

// The entry's name and argument count against its definition.
template <class Def>
caf::error check_entry(const Def* def, const entry_spec& entry,
                       const std::string& prefix, const char* kind,
                       const std::string& known) {
  if (def == nullptr)
    return bad(prefix + "unknown " + kind + " '" + entry.name
               + "'; expected " + known);
  bool takes_ref = false;
  if constexpr (std::is_same_v<Def, transform_def>)
    takes_ref = def->takes_ref;
  if (takes_ref && entry.ref.empty())
    return bad(prefix + "expected " + def->name
               + "(MODULE:CALLABLE): the function to run");
  if (!takes_ref && !entry.ref.empty())
    return bad(prefix + "'" + entry.ref + "' is not a number; "
               + "usage: " + (def->usage.empty() ? def->name : def->usage));
  auto n = entry.args.size();
  if (n < def->min_args || n > def->max_args)
    return bad(prefix + std::to_string(n) + " argument(s); usage: "
               + (def->usage.empty() ? def->name : def->usage));
  return caf::none;
}

} // namespace

caf::error registry::add(source_def def) {
  if (auto err = admit(sources_, def, "source",
                       !def.resolve ? "resolve" : !def.open ? "open" : nullptr))
    return err;
  sources_.push_back(std::move(def));
  return caf::none;
}

caf::error registry::add(transform_def def) {
  if (auto err = admit(transforms_, def, "transform",
                       def.apply ? nullptr : "apply"))
    return err;
  transforms_.push_back(std::move(def));
  return caf::none;
}

caf::error registry::add(model_def def) {
  if (auto err = admit(models_, def, "model", def.make ? nullptr : "make"))
    return err;
  models_.push_back(std::move(def));
  return caf::none;
}

const source_def* registry::source(std::string_view name) const {
  return find(sources_, name);
}

const transform_def* registry::transform(std::string_view name) const {
  return find(transforms_, name);
}

const model_def* registry::model(std::string_view name) const {
  return find(models_, name);
}

std::string registry::source_names() const {
  return names_of(sources_);
}

std::string registry::transform_names() const {
  return names_of(transforms_);
}

std::string registry::model_names() const {
  return names_of(models_);
}

caf::error registry::check_source(const entry_spec& entry) const {
  return check_entry(source(entry.name), entry,
                     "pipeline.source = \"" + entry.text + "\": ", "source",
                     source_names());
}

caf::error registry::check_transform(const entry_spec& entry,
                                     std::string_view key) const {
  return check_entry(transform(entry.name), entry,
                     std::string{key} + ": \"" + entry.text + "\": ",
                     "transform", transform_names());
}

caf::error registry::check_model(const entry_spec& entry) const {
  return check_entry(model(entry.name), entry,
                     "trainer.model = \"" + entry.text + "\": ", "model",
                     model_names());
}

void detail::must_add(caf::error err) {
  if (err)
    throw std::logic_error("built-in registry entry: " + describe(err));
}


namespace {

// Calls f(kind, key, entry) for every entry the pipeline uses.
template <class Pipeline, class F>
void for_each_entry(Pipeline& p, F f) {
  f("source", "pipeline.source", p.data.source);
  for (auto& t : p.data.transforms)
    f("transform", "pipeline.transforms", t);
  for (auto& t : p.data.eval_transforms)
    f("transform", "pipeline.eval-transforms", t);
  f("model", "trainer.model", p.trainer.model_entry);
}

// The version `reg` has for the entry of `kind`, or nothing if it has none.
const std::string* version_in(const registry& reg, std::string_view kind,
                              const std::string& name) {
  if (kind == "source")
    if (auto def = reg.source(name))
      return &def->version;
  if (kind == "transform")
    if (auto def = reg.transform(name))
      return &def->version;
  if (kind == "model")
    if (auto def = reg.model(name))
      return &def->version;
  return nullptr;
}

std::string names_of_kind(const registry& reg, std::string_view kind) {
  return kind == "source"      ? reg.source_names()
         : kind == "transform" ? reg.transform_names()
                               : reg.model_names();
}

} // namespace

void stamp_versions(pipeline_options& pipeline, const registry& reg) {
  for_each_entry(pipeline, [&](std::string_view kind, const char*,
                          entry_spec& entry) {
    if (auto v = version_in(reg, kind, entry.name))
      entry.version = *v;
  });
}

caf::error check_pipeline_names(const registry& reg,
                                const pipeline_options& pipeline) {
  caf::error first;
  for_each_entry(pipeline, [&](std::string_view kind, const char* key,
                          const entry_spec& entry) {
    if (first)
      return;
    auto what = std::string{"the head's pipeline uses "} + std::string{kind}
                + " '" + entry.name + "'";
    auto v = version_in(reg, kind, entry.name);
    if (v == nullptr)
      first = bad(what + " (" + key + ") but this node's registry has no "
                  + "such " + std::string{kind} + " (it has "
                  + names_of_kind(reg, kind)
                  + "); expected the same build, with the same "
                    "registrations, on every node");
    else if (*v != entry.version)
      first = bad(what + " version \"" + entry.version + "\" (" + key
                  + ") but this node's is version \"" + *v
                  + "\"; expected the same build on every node");
  });
  return first;
}

caf::error transform_error(const entry_spec& entry, const std::string& what) {
  return bad("pipeline.transforms: \"" + entry.text + "\": " + what);
}

} // namespace stoker
