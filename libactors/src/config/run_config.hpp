#pragma once

// Reading a node's configuration: each key through its declaration, then
// the checks that span keys. Values only; prepare_run (node/) looks at the
// data, the registry and the machine.

#include <caf/expected.hpp>
#include <caf/settings.hpp>

#include "stoker/options.hpp"

namespace stoker {

/// Reads and checks a run_config from `content` (a config file's keys with
/// the command line's on top; dotted names, "role" and the other global
/// keys at the top): every key through its declaration in the option
/// table, then the checks that span keys. A bad value yields
/// errc::invalid_config naming the key, the value and what was expected.
/// Reads nothing but `content`: no file, no registry, no hostname.
caf::expected<run_config> read_run_config(const caf::settings& content);

/// Whether this process shows the progress line: a head or local node
/// with --progress=on, or auto and standard output a terminal, and its
/// lines not JSON (log.format). A local
/// run's trainer then leaves out its Iteration lines.
bool shows_progress(const node_options& node);

/// Where the process's clocks stand now (process_cpu_seconds,
/// process_wall_seconds).
usage_mark usage_mark_now() noexcept;

/// What this node process used of its machine from `from` to `to`, with
/// the machine's price per hour (node.price-per-hour, else node.
/// instance-type in node.prices, else 0: unknown). A clock that went
/// backwards counts as no time.
node_usage node_usage_between(const node_options& node, usage_mark from,
                              usage_mark to);

/// What this node process has used of its machine since its run started
/// here (node.run_started).
node_usage node_usage_now(const node_options& node);

} // namespace stoker
