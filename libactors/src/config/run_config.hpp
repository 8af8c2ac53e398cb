#pragma once

#include <caf/expected.hpp>
#include <caf/settings.hpp>

#include "stoker/options.hpp"

namespace stoker {

class registry;

/// Reads and validates a run_config from CAF's parsed settings (file, then
/// command line). Any bad value yields errc::invalid_config with a message
/// naming the key, the value and what was expected. For the head and local
/// roles it also resolves the data (resolve_data: reads IDX headers and
/// folder listings); other roles get the resolved pipeline from the head.
/// Sources, transforms and models are looked up in `reg`: a name it lacks
/// is refused, naming the key and the names it has.
caf::expected<run_config> read_run_config(const caf::settings& content,
                                          const registry& reg);

} // namespace stoker
