#pragma once

// Where people run Stoker: a cluster's shape from what the platform says
// (SageMaker's resourceconfig.json, Slurm's SLURM_* variables) instead of
// a hand-written cluster.nodes, so every host runs the same command line
// and works out its own role. Pure functions over text and an
// environment map (tests feed fixtures); apply_platform_discovery reads
// the real file and environment.

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <caf/error.hpp>
#include <caf/expected.hpp>

#include "stoker/options.hpp"

namespace stoker {

struct run_config;

/// One host of a discovered cluster and what it runs.
struct discovered_node {
  std::string host;
  role_kind role = role_kind::worker; ///< worker or trainer
  std::string instance_type;          ///< SageMaker's, else empty
};

/// A cluster as its platform describes it.
struct discovered_cluster {
  std::vector<discovered_node> nodes; ///< every host, in the platform's order
  size_t head = 0;                    ///< index of the host that runs the head
  size_t self = 0;                    ///< index of this process's host
  std::string source;                 ///< where it came from, for messages
};

/// SageMaker: `json` is resourceconfig.json (read from `where`). The first
/// host of the instance group `trainer_group` runs the head and a trainer,
/// the group's other hosts trainers, every other group's hosts workers;
/// without instance_groups every host is in the trainer group. The current
/// group may be spelled current_group_name (clusters) or
/// current_instance_group (the training toolkit's local mode).
/// `current_host`, if not empty, replaces the file's. A missing or wrong
/// field is an error naming `where` and the field.
caf::expected<discovered_cluster>
discover_sagemaker(const std::string& json, const std::string& where,
                   const std::string& trainer_group,
                   const std::string& current_host);

/// Expands a Slurm hostlist: "gpu[01-03,07],cpu[1-2]" is gpu01, gpu02,
/// gpu03, gpu07, cpu1, cpu2 (zero padding kept; several bracket groups in
/// one name multiply). Nested or unbalanced brackets, a range running
/// backwards and an empty name are errors naming the list.
caf::expected<std::vector<std::string>> expand_hostlist(std::string_view list);

/// The environment a process sees, by name.
using environment_map = std::map<std::string, std::string>;

/// Slurm, one task per node (srun --ntasks-per-node=1): hosts from
/// SLURM_JOB_NODELIST, this task's rank from SLURM_PROCID (rank 0's host
/// runs the head), its host from SLURMD_NODENAME (or the rank's host). A
/// heterogeneous job (SLURM_HET_SIZE, SLURM_JOB_NODELIST_HET_GROUP_n): the
/// group with GPUs (SLURM_GPUS*_HET_GROUP_n, SLURM_TRES_PER_NODE_HET_GROUP_n
/// naming gpu), or group `trainer_group` if it is a number, runs trainers,
/// the others workers. One job of one kind: every host a trainer if it has
/// GPUs (SLURM_GPUS_ON_NODE, SLURM_JOB_GPUS), else the first a trainer and
/// the rest workers.
caf::expected<discovered_cluster>
discover_slurm(const environment_map& env, const std::string& trainer_group,
               const std::string& current_host);

/// Sets `node` from `found`: this host's role, name (the host name) and
/// host; the head's address (its host, cluster.port); cluster.bind, if left
/// at loopback, to this host (other machines must reach it); the instance
/// type if not set; cluster.nodes, every host. On the head's host the role
/// is head and `companion` is the host's own node (a second process).
/// `node.discovered` says what was found.
void apply_discovery(const discovered_cluster& found, node_options& node);

/// For cluster.discover other than static: reads the platform (the
/// SageMaker file, or this process's environment) and applies it; errors
/// name the file or variable. Static: nothing.
caf::error apply_platform_discovery(run_config& cfg);

} // namespace stoker
