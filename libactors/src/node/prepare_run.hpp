#pragma once

// Between reading a config and running a role: what needs the registry,
// the data and the machine.

#include <cstdint>

#include <caf/error.hpp>

#include "stoker/options.hpp"

namespace stoker {

class registry;

/// Completes a config read_run_config checked. For this node: its name
/// (ROLE-PID unless node.name), its host (the hostname unless node.host),
/// its worker count (its cores unless worker.count). For the pipeline:
/// checks every source, transform and model it names against `reg`;
/// where the data is looked at (the head, a local run, any node with the
/// synthetic source) resolves it (sizes, classes, output shape) and checks
/// the model against it; decides once how workers make batches
/// (`pipeline_options::kind`); and stamps the registry's versions, which
/// every node of the cluster must have. A local run (and any opencv
/// blur) also checks the blur against this CPU. Errors
/// (errc::invalid_config) name the key and what was expected.
caf::error prepare_run(run_config& cfg, const registry& reg);

/// Whether one batch of the resolved `pipeline` can ever be made: no
/// larger on the wire than router.max-inflight-bytes (the router could
/// never lease it) and, as float32, than `machine_bytes` (0: unknown). The
/// error (errc::invalid_config) names the shape, both sizes and the key.
/// prepare_run checks it before anything is allocated; a worker or trainer
/// node checks the head's pipeline against its own memory when it joins.
caf::error check_batch_fits(const pipeline_options& pipeline,
                            uint64_t machine_bytes);

/// Before anything of a run starts (no worker, no trainer): every port a
/// local or head node will listen on (metrics.port, console.port, a head's
/// cluster.port) can be bound on its address. The error
/// (errc::invalid_config) names the key, the address, the port and the
/// system's reason. Port 0 (off, or any free port) is not checked. The
/// check binds and closes: a port taken between it and the real listen is
/// still refused there.
caf::error check_ports_free(const node_options& node);

} // namespace stoker
