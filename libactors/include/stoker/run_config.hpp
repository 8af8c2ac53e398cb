#pragma once

#include <chrono>
#include <cstdint>
#include <vector>
#include <optional>
#include <string>
#include <string_view>

#include <caf/expected.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/settings.hpp>

#include "stoker/blur.hpp"
#include "stoker/dataset.hpp"
#include "stoker/entry_spec.hpp"
#include "stoker/epoch_source.hpp"
#include "stoker/offload.hpp"
#include "stoker/routing.hpp"
#include "stoker/synthetic_mapper.hpp"

namespace stoker {

class registry;

/// Where the trainer runs its steps.
enum class device_kind {
  auto_select, ///< CUDA when LibTorch sees a GPU, else CPU
  cuda,
  cpu,
  sim, ///< a simulated accelerator: waits sim_step_ms, checks each batch
};

/// Parses "auto", "cuda", "cpu" or "sim".
std::optional<device_kind> parse_device(std::string_view name);

/// The config-file name of `d`.
std::string to_string(device_kind d);

/// The optimizer (`trainer.optimizer`).
enum class optimizer_kind : uint8_t { sgd = 1, adamw = 2 };

/// Parses "sgd" or "adamw".
std::optional<optimizer_kind> parse_optimizer_kind(std::string_view name);

/// How the learning rate moves over a run (`trainer.lr-schedule`).
enum class lr_schedule : uint8_t {
  constant = 1, ///< trainer.lr throughout
  cosine = 2,   ///< from trainer.lr down to 0 along half a cosine
};

/// Parses "constant" or "cosine".
std::optional<lr_schedule> parse_lr_schedule(std::string_view name);

/// Sizes of the Vision Transformer (timm's ViT-B/16 by default); the image
/// and class fields size the CNN too.
struct vit_spec {
  uint32_t image_height = 224;
  uint32_t image_width = 224;
  uint32_t channels = 3;
  uint32_t patch_size = 16;
  uint32_t width = 768;
  uint32_t depth = 12;
  uint32_t heads = 12;
  uint32_t mlp_dim = 3072;
  uint32_t num_classes = 1000;
};

/// Everything a trainer needs to know.
struct trainer_spec {
  device_kind device = device_kind::auto_select;
  uint32_t sim_step_ms = 50;
  uint32_t log_every = 100;
  uint32_t prefetch = 4; ///< credits: batches the trainer is ready to buffer
  double lr = 0.001;
  double momentum = 0.9;
  uint32_t threads = 0; ///< LibTorch intra-op threads; 0 = LibTorch default
  std::string checkpoint_dir; ///< empty: no checkpoints (node-local)
  uint32_t checkpoint_every = 100; ///< steps between checkpoints
  /// trainer.model: a registered model (registry.hpp) and its arguments.
  entry_spec model_entry = make_entry("vit");
  optimizer_kind optimizer = optimizer_kind::sgd;
  double weight_decay = 0.0;
  lr_schedule schedule = lr_schedule::constant;
  uint64_t total_steps = 0; ///< the run's training steps (for the schedule)
  vit_spec model;
};

/// The learning rate of training step `step` (0-based) of a run of
/// `spec.total_steps`: trainer.lr, or the cosine schedule's
/// lr * (1 + cos(pi * step / total)) / 2.
double learning_rate_at(const trainer_spec& spec, uint64_t step);

/// One node of a cluster's topology: `NAME:ROLE[:WORKERS]` in
/// `cluster.nodes`.
struct node_spec {
  std::string name;
  std::string role;     ///< "worker" or "trainer"
  uint32_t workers = 0; ///< worker actors on a worker node; 0 = its cores
};

/// Parses one `cluster.nodes` entry; errc::invalid_config names it.
caf::expected<node_spec> parse_node_spec(std::string_view entry);

/// How the nodes of a cluster find each other.
struct cluster_spec {
  std::string bind = "127.0.0.1"; ///< address the head (and trainers) listen on
  uint16_t port = 4242;           ///< the head's port; 0 = any free port
  std::string head_host;          ///< where a worker or trainer finds the head
  uint16_t head_port = 0;
  std::chrono::milliseconds join_timeout{30000};
  std::chrono::milliseconds connect_timeout{10000};
  /// The topology: the nodes the head waits for before the run starts, and
  /// what tools/launch-cluster starts.
  std::vector<node_spec> nodes;
  std::string port_file; ///< the head writes its port here once listening
};

/// How the router leases work (`router.*`).
struct router_spec {
  routing_policy policy = routing_policy::least_loaded;
  uint32_t window = 8; ///< batches in flight per trainer at the start
  uint64_t max_inflight_bytes = uint64_t{1} << 30; ///< the window's ceiling
  double idle_target = 0.02; ///< trainer idle fraction that widens the window
  /// How often workers report between items; a report older than three
  /// intervals (plus one item's time) counts against the worker.
  std::chrono::milliseconds report_interval{100};
  /// Re-lease a batch older than this many times the recent median batch
  /// time to a second worker; 0 = off.
  double hedge_factor = 0.0;
  /// A worker silent this long beyond its current item's time is lost:
  /// its leases go to other workers (cluster.heartbeat-timeout).
  std::chrono::milliseconds heartbeat_timeout{5000};
  /// With no live worker this long, the run fails (cluster.join-timeout).
  std::chrono::milliseconds no_worker_timeout{30000};
  /// Where the article's blur stage runs (pipeline.placement): the router
  /// marks each lease for the workers or for the trainer's GPU.
  blur_placement placement = blur_placement::cpu;
};

/// The consoles of a head or local node (`console.*`): over TCP, and on
/// the node's own terminal.
struct console_spec {
  bool terminal = false; ///< console.terminal (`--console`): on stdin/stdout
  uint16_t port = 0;     ///< 0: no TCP console
  std::string bind = "127.0.0.1";
  std::string token; ///< required as the first line if not empty
};

/// One node's whole configuration, validated. Built by read_run_config.
struct run_config {
  std::string role = "local"; ///< local, head, worker or trainer
  std::string node_name;      ///< this node's name in the cluster
  /// The machine it runs on (default: the hostname): workers on the
  /// trainer's machine are local (router.policy local-only, tie-breaks).
  std::string node_host;
  cluster_spec cluster;
  std::string config_source; ///< the file (or embedded default) it came from
  std::string report_path;   ///< empty: no JSON report
  bool resume = false; ///< the trainer continues from its last checkpoint
  synthetic_spec synthetic;
  /// Where samples come from and how they are transformed; resolved (sizes,
  /// classes, output shape) on the head and in a local run.
  data_spec data;
  /// The article's workload: 1000 steps of batch 64.
  source_spec source{64000, 64, 1, true, 0};
  blur_params blur;
  router_spec router;
  console_spec console; ///< the head's or local node's consoles (node-local)
  uint32_t workers = 0; ///< CPU workers; 0 = one per core
  /// Each worker of this node does its transform work this many times (it
  /// keeps the first result): makes slow workers for benchmarks and tests.
  double slowdown = 1.0;
  dtype transport = dtype::float32; ///< image dtype between worker and trainer
  /// Batches between nodes on a direct TCP stream (batch_channel.hpp);
  /// false: as CAF messages through the middleman (slower, one port less).
  bool batch_stream = true;
  trainer_spec trainer;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, vit_spec& x) {
  return f(caf::meta::type_name("vit_spec"), x.image_height, x.image_width,
           x.channels, x.patch_size, x.width, x.depth, x.heads, x.mlp_dim,
           x.num_classes);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, router_spec& x) {
  return f(caf::meta::type_name("router_spec"), x.policy, x.window,
           x.max_inflight_bytes, x.idle_target, x.report_interval,
           x.hedge_factor, x.heartbeat_timeout, x.no_worker_timeout,
           x.placement);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, trainer_spec& x) {
  return f(caf::meta::type_name("trainer_spec"), x.device, x.sim_step_ms,
           x.log_every, x.prefetch, x.lr, x.momentum, x.threads,
           x.checkpoint_dir, x.checkpoint_every, x.model_entry, x.optimizer,
           x.weight_decay, x.schedule, x.total_steps, x.model);
}

/// What the head tells every node it runs: the pipeline and the trainer
/// settings. Node-local settings (role, name, cluster, report, worker
/// count and slowdown) stay with each node.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, run_config& x) {
  return f(caf::meta::type_name("run_config"), x.synthetic, x.data, x.source,
           x.blur, x.router, x.transport, x.batch_stream, x.trainer);
}

/// Bytes of one full batch of `cfg`'s pipeline on the wire
/// (transport.dtype): what the router's byte budget counts.
uint64_t batch_wire_bytes(const run_config& cfg);

/// Parses "HOST:PORT" (PORT 1..65535); nothing if it does not parse.
std::optional<std::pair<std::string, uint16_t>>
parse_host_port(std::string_view text);

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
