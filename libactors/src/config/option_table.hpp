#pragma once

// Every Stoker config key, declared once (option_table.cpp): the reader,
// --long-help and docs/configuration.md's key table all come from here.

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <caf/config_option_set.hpp>
#include <caf/config_value.hpp>
#include <caf/error.hpp>

#include "stoker/options.hpp"

namespace stoker {

/// Which half of run_config a key fills: the node's own settings, or the
/// pipeline the head ships to every node.
enum class option_scope { node, pipeline };

/// One config key: its name, the values it takes, its default and help.
/// The default is what a default-constructed run_config holds there, so
/// it cannot drift from the struct. Plain data; the table is built once
/// and only read.
struct option_decl {
  /// "pipeline.batch-size"; a key without a section ("role") is a flag
  /// only (--role=head) or a line before any [section] header.
  std::string name;
  std::string help;         ///< what it does, one sentence, no default
  std::string values;       ///< what a value looks like: "1..65536"
  std::string default_text; ///< the default as help and docs show it
  option_scope scope = option_scope::pipeline;
  /// Checks `value` and stores it in `cfg`. An error (errc::invalid_config)
  /// names the key, the value and what was expected.
  std::function<caf::error(const caf::config_value& value, run_config& cfg)>
    read;
  /// Adds the key to CAF's option set with `description`: then it is a
  /// command-line flag and --long-help lists it.
  std::function<void(caf::config_option_set& set,
                     const std::string& description)>
    declare;

  /// The section before the dot ("global" for none).
  std::string section() const;
  /// The name after the dot.
  std::string key() const;
  /// How --long-help describes it: help, values and default.
  std::string description() const;
};

/// Every Stoker key, in the order --long-help and docs list them.
const std::vector<option_decl>& option_table();

/// The declaration of `name` ("router.window", "role"), or null.
const option_decl* find_option(std::string_view name);

/// Why `name` ("router.windw", "pipelin.batch-size", "rol") is no key, in
/// words, with the nearest known name where one is close: "unknown key
/// 'windw' in section [router]; did you mean 'window'?", "unknown section
/// [pipelin]; did you mean [pipeline]?". Sections that are CAF's are not
/// Stoker's to judge: the caller skips them.
std::string unknown_option_text(std::string_view name);

/// Adds every key of the table to `set` (node_config does, once).
void declare_options(caf::config_option_set& set);

} // namespace stoker
