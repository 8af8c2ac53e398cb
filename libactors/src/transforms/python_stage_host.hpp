#pragma once

// The Python side of a Python stage (python_stage.hpp): the script each
// stage process runs, and the protocol it speaks with the worker.

namespace stoker {

/// The script a stage process runs with `python3 -c` (its arguments: the
/// socket's fd, the shared memory's fd, MODULE:CALLABLE, python.path...):
/// imports the callable, says so (or why not), then answers one call at a
/// time until the worker closes its socket. The protocol is described
/// above its definition. Static text, any thread.
const char* python_stage_host_script() noexcept;

} // namespace stoker
