#pragma once

// stoker layer: node

#include "stoker/registry.hpp"

namespace stoker {

/// Everything `stoker-node` does, for a user's own node binary: parses
/// `argv` (--config-file=PATH, every key as a --section.key=value flag,
/// --help), then runs the role it names (local, head, worker or trainer)
/// with the sources, transforms and models of `reg`. A worker or trainer
/// whose `reg` lacks an entry the head's pipeline uses refuses to join,
/// naming it. Call it from main() on the main thread, once per process.
/// Returns the process exit code: 0 success, 1 the run failed, 2 bad
/// configuration (the message names the file, key or flag). Sets SIGPIPE
/// to be ignored for the process: OpenSSL writes to its sockets with
/// write(), which raises SIGPIPE when the peer has gone, and every write
/// failure is handled (and reported) as an error already.
///
///     int main(int argc, char** argv) {
///       auto reg = stoker::builtin_registry();
///       reg.add(my_transform()); // check the caf::error it returns
///       return stoker::run_node(argc, argv, reg);
///     }
int run_node(int argc, char** argv, const registry& reg);

} // namespace stoker
