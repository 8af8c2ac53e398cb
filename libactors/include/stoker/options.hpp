#pragma once

// stoker layer: config
//
// Every setting of a run as plain structs, and the enums config files
// name. Each struct's member initialisers are the defaults (declared once:
// the option table in config/option_table.cpp reads them for --long-help,
// the reader and docs/configuration.md). Nothing here does work; the units
// that use a spec include this header, never the other way round.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <caf/expected.hpp>
#include <caf/meta/type_name.hpp>

#include "stoker/entry_spec.hpp"
#include "stoker/enum_names.hpp"
#include "stoker/messages.hpp"

namespace stoker {

// -- enums config files name ------------------------------------------------

/// What a node process runs (`--role`).
enum class role_kind : uint8_t {
  local = 1,   ///< every actor of the run in this process
  head = 2,    ///< the source, the router and cluster membership
  worker = 3,  ///< CPU workers that join a head
  trainer = 4, ///< a trainer that joins a head
};

template <>
struct enum_names<role_kind> {
  static constexpr enum_name<role_kind> table[] = {
    {role_kind::local, "local"},
    {role_kind::head, "head"},
    {role_kind::worker, "worker"},
    {role_kind::trainer, "trainer"}};
};

/// Where a node learns the cluster's shape (`cluster.discover`).
enum class discover_kind : uint8_t {
  static_nodes = 1, ///< cluster.nodes, --role and --cluster.head as given
  sagemaker = 2,    ///< SageMaker's resourceconfig.json
  slurm = 3,        ///< Slurm's SLURM_* environment (one task per node)
};

template <>
struct enum_names<discover_kind> {
  static constexpr enum_name<discover_kind> table[] = {
    {discover_kind::static_nodes, "static"},
    {discover_kind::sagemaker, "sagemaker"},
    {discover_kind::slurm, "slurm"}};
};

/// Whether a head or local node shows one updating progress line
/// (`--progress`): auto = when standard output is a terminal.
enum class progress_mode : uint8_t { automatic = 1, on = 2, off = 3 };

template <>
struct enum_names<progress_mode> {
  static constexpr enum_name<progress_mode> table[] = {
    {progress_mode::automatic, "auto"},
    {progress_mode::on, "on"},
    {progress_mode::off, "off"}};
};

/// How a worker makes a batch: decided once per run (prepare_run) and
/// shipped with the pipeline.
enum class pipeline_kind : uint8_t {
  /// The article's pipeline: synthetic images through the fused ToTensor +
  /// GaussianBlur stage of pipeline.blur-* (the synthetic source without
  /// pipeline.transforms).
  fused_blur = 1,
  /// Every sample read through the source and run through the chain of
  /// pipeline.transforms (pipeline.eval-transforms for the test split).
  transform_chain = 2,
};

template <>
struct enum_names<pipeline_kind> {
  static constexpr enum_name<pipeline_kind> table[] = {
    {pipeline_kind::fused_blur, "fused-blur"},
    {pipeline_kind::transform_chain, "transform-chain"}};
};

/// Where the trainer runs its steps (`trainer.device`).
enum class device_kind {
  auto_select, ///< CUDA when LibTorch sees a GPU, else CPU
  cuda,
  cpu,
  sim, ///< a simulated accelerator: waits sim_step_ms, checks each batch
};

template <>
struct enum_names<device_kind> {
  static constexpr enum_name<device_kind> table[] = {
    {device_kind::auto_select, "auto"},
    {device_kind::cuda, "cuda"},
    {device_kind::cpu, "cpu"},
    {device_kind::sim, "sim"}};
};

/// The optimizer (`trainer.optimizer`).
enum class optimizer_kind : uint8_t { sgd = 1, adamw = 2 };

template <>
struct enum_names<optimizer_kind> {
  static constexpr enum_name<optimizer_kind> table[] = {
    {optimizer_kind::sgd, "sgd"}, {optimizer_kind::adamw, "adamw"}};
};

/// How the learning rate moves over a run (`trainer.lr-schedule`).
enum class lr_schedule : uint8_t {
  constant = 1, ///< trainer.lr throughout
  cosine = 2,   ///< from trainer.lr down to 0 along half a cosine
};

template <>
struct enum_names<lr_schedule> {
  static constexpr enum_name<lr_schedule> table[] = {
    {lr_schedule::constant, "constant"}, {lr_schedule::cosine, "cosine"}};
};

/// What happens to the tail of an epoch that does not fill a last global
/// step of W batches of pipeline.batch-size (`pipeline.last-batch`). Every
/// rank gets the same number of batches per epoch whichever it is.
enum class last_batch_policy : uint8_t {
  partial = 1, ///< smaller last batches, split evenly over the ranks
  drop = 2,    ///< the remainder is not trained on (counted in the report)
  pad = 3,     ///< filled up with samples from the epoch's start, flagged
};

template <>
struct enum_names<last_batch_policy> {
  static constexpr enum_name<last_batch_policy> table[] = {
    {last_batch_policy::partial, "partial"},
    {last_batch_policy::drop, "drop"},
    {last_batch_policy::pad, "pad"}};
};

/// How data-parallel trainers exchange gradients (`trainer.backend`):
/// LibTorch's c10d process groups.
enum class collective_backend : uint8_t {
  automatic = 1, ///< nccl where the LibTorch in use has it and the trainers
                 ///< are on CUDA, else gloo
  gloo = 2,      ///< ProcessGroupGloo: CPU tensors, any machine
  nccl = 3,      ///< ProcessGroupNCCL: CUDA tensors; needs a LibTorch with it
};

template <>
struct enum_names<collective_backend> {
  static constexpr enum_name<collective_backend> table[] = {
    {collective_backend::automatic, "auto"},
    {collective_backend::gloo, "gloo"},
    {collective_backend::nccl, "nccl"}};
};

/// How the router picks a worker for the next work item (`router.policy`).
enum class routing_policy {
  least_loaded, ///< least expected delay: (queued + in flight + item) / rate
  round_robin,  ///< every worker in turn, whatever its load (a baseline)
  local_only,   ///< least-loaded among workers on the trainer's machine
                ///< only (the single-machine baseline)
  power_of_two, ///< two workers drawn at random, the better one: two delay
                ///< estimates per pick instead of one per worker
};

template <>
struct enum_names<routing_policy> {
  static constexpr enum_name<routing_policy> table[] = {
    {routing_policy::least_loaded, "least-loaded"},
    {routing_policy::round_robin, "round-robin"},
    {routing_policy::local_only, "local-only"},
    {routing_policy::power_of_two, "power-of-two"}};
};

/// Where the article's blur stage runs (`pipeline.placement`).
enum class blur_placement {
  cpu,       ///< on the workers, always (the default)
  gpu,       ///< on the trainer's GPU, always: workers send unblurred HWC
  automatic, ///< the router moves a share of the batches (offload.hpp)
};

template <>
struct enum_names<blur_placement> {
  static constexpr enum_name<blur_placement> table[] = {
    {blur_placement::cpu, "cpu"},
    {blur_placement::gpu, "gpu"},
    {blur_placement::automatic, "auto"}};
};

/// Which CPU blur runs the stage (`pipeline.blur-impl`).
enum class blur_impl : uint8_t {
  automatic = 0, ///< stoker where the CPU has AVX2 or AVX-512, else opencv
  opencv = 1,    ///< OpenCV's sepFilter2D, one call per blur
  stoker = 2,    ///< the hand-written chain (kernels/blur_chain.hpp)
};

template <>
struct enum_names<blur_impl> {
  static constexpr enum_name<blur_impl> table[] = {
    {blur_impl::automatic, "auto"},
    {blur_impl::opencv, "opencv"},
    {blur_impl::stoker, "stoker"}};
};

/// Which instruction set the hand-written chain uses (`pipeline.blur-isa`).
enum class cpu_isa : uint8_t {
  automatic = 0, ///< the widest this CPU runs
  avx512 = 1,    ///< AVX-512F, 16 floats a vector
  avx2 = 2,      ///< AVX2 with FMA, 8 floats a vector
  scalar = 3,    ///< one float at a time: any CPU
};

template <>
struct enum_names<cpu_isa> {
  static constexpr enum_name<cpu_isa> table[] = {{cpu_isa::automatic, "auto"},
                                                 {cpu_isa::avx512, "avx512"},
                                                 {cpu_isa::avx2, "avx2"},
                                                 {cpu_isa::scalar, "scalar"}};
};

// -- the pipeline's parts ---------------------------------------------------

/// The shape of an image; 0 where it varies from image to image (files of
/// different sizes before a resize or crop).
struct image_shape {
  uint32_t height = 0;
  uint32_t width = 0;
  uint32_t channels = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, image_shape& x) {
  return f(caf::meta::type_name("image_shape"), x.height, x.width,
           x.channels);
}

/// Shape and seed of the article's synthetic dataset (`pipeline.height`,
/// `width`, `channels`, `num-classes`).
struct synthetic_spec {
  uint64_t seed = 0;
  uint32_t height = 224;
  uint32_t width = 224;
  uint32_t channels = 3;
  uint32_t num_classes = 1000;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, synthetic_spec& x) {
  return f(caf::meta::type_name("synthetic_spec"), x.seed, x.height, x.width,
           x.channels, x.num_classes);
}

/// What the source hands out: `epochs` passes over ids 0..dataset_size-1 in
/// batches of `batch_size` (the last batch of an epoch may be smaller),
/// each followed, when eval_size > 0, by the test split's ids
/// 0..eval_size-1 in order (work items of split::test). The defaults are
/// the article's workload: 1000 steps of batch 64.
struct source_spec {
  uint64_t dataset_size = 64000;
  uint32_t batch_size = 64;
  uint32_t epochs = 1;
  bool shuffle = true; ///< a fresh permutation per epoch, from (seed, epoch)
  uint64_t seed = 0;
  uint64_t eval_size = 0; ///< test samples evaluated after each epoch
  /// The tail of an epoch that does not fill a global step.
  last_batch_policy last_batch = last_batch_policy::partial;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, source_spec& x) {
  return f(caf::meta::type_name("source_spec"), x.dataset_size, x.batch_size,
           x.epochs, x.shuffle, x.seed, x.eval_size, x.last_batch);
}

/// The blur stage of the article's pipeline: ToTensor (HWC -> CHW), then
/// GaussianBlur(kernel_size) `repeat` times, each call with its own sigma
/// drawn uniformly from [sigma_min, sigma_max] (torchvision's semantics).
struct blur_params {
  uint64_t seed = 0;
  uint32_t kernel_size = 11; ///< odd, >= 1
  float sigma_min = 0.1f;
  float sigma_max = 2.0f;
  uint32_t repeat = 10;
  blur_impl impl = blur_impl::automatic; ///< pipeline.blur-impl
  cpu_isa isa = cpu_isa::automatic;      ///< pipeline.blur-isa (stoker)
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, blur_params& x) {
  return f(caf::meta::type_name("blur_params"), x.seed, x.kernel_size,
           x.sigma_min, x.sigma_max, x.repeat, x.impl, x.isa);
}

/// A run's data: where it is, how samples are transformed, and (filled by
/// resolve_data on the head, then sent to every node) what is there.
struct data_spec {
  /// pipeline.source: a registered source (registry.hpp) and its arguments.
  entry_spec source = make_entry("synthetic");
  /// idx: a directory with {train,t10k}-{images-idx3,labels-idx1}-ubyte
  /// (each plain or .gz); image-folder: the training folder.
  std::string data;
  std::string eval_data; ///< image-folder: the test folder
  /// Empty with a synthetic source: the article's fused blur stage.
  std::vector<transform_spec> transforms;
  std::vector<transform_spec> eval_transforms; ///< no augmentation
  bool eval = false;         ///< test split after each epoch
  /// pipeline.dataset-size: the synthetic source's size; a real source's
  /// fixed subset of N samples (0 = all).
  uint64_t train_limit = 0;
  uint64_t eval_limit = 0;
  uint64_t seed = 0; ///< pipeline.seed: picks the subset of a limit
  // -- what resolve_data found
  uint64_t train_size = 0;
  uint64_t eval_size = 0;
  uint32_t num_classes = 0;
  image_shape output;      ///< what the trainer gets (CHW)
  std::string fingerprint; ///< of the file listings (image-folder)
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, data_spec& x) {
  return f(caf::meta::type_name("data_spec"), x.source, x.data, x.eval_data,
           x.transforms, x.eval_transforms, x.eval, x.train_limit,
           x.eval_limit, x.seed, x.train_size, x.eval_size, x.num_classes,
           x.output, x.fingerprint);
}

// -- the trainer ------------------------------------------------------------

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

/// How the trainer trains (`trainer.*` and `model.*` but the node-local
/// keys of trainer_local_spec): shipped by the head, so every trainer of a
/// run trains alike. Models see it (registry.hpp's model_def).
struct trainer_spec {
  uint32_t sim_step_ms = 50; ///< the simulated accelerator's step time
  uint32_t log_every = 100;
  uint32_t prefetch = 4; ///< credits: batches the trainer is ready to buffer
  double lr = 0.001;
  double momentum = 0.9;
  /// trainer.model: a registered model (registry.hpp) and its arguments.
  entry_spec model_entry = make_entry("vit");
  optimizer_kind optimizer = optimizer_kind::sgd;
  double weight_decay = 0.0;
  lr_schedule schedule = lr_schedule::constant;
  uint64_t total_steps = 0; ///< the run's training steps (for the schedule)
  vit_spec model;
  /// How data-parallel trainers exchange gradients.
  collective_backend backend = collective_backend::automatic;
  /// A trainer waiting this long in a collective (a barrier, an all-reduce,
  /// the group's set-up) for another rank fails the run, naming the rank.
  std::chrono::milliseconds collective_timeout{60000};
};

/// The trainer settings each trainer node keeps for itself: its device,
/// its threads and where it saves checkpoints.
struct trainer_local_spec {
  device_kind device = device_kind::auto_select;
  uint32_t threads = 0; ///< LibTorch intra-op threads; 0 = LibTorch default
  std::string checkpoint_dir; ///< empty: no checkpoints
  uint32_t checkpoint_every = 100; ///< steps between checkpoints
  /// Trainers this node runs (one data-parallel rank each); 0 = one per
  /// CUDA device LibTorch sees, 1 where it sees none (CPU, sim).
  uint32_t count = 0;
  /// For benchmarks and tests: simulated steps take this many times
  /// trainer.sim-step-ms on this node (one slow rank of a group).
  double sim_slowdown = 1.0;
};

/// The learning rate of training step `step` (0-based) of a run of
/// `spec.total_steps`: trainer.lr, or the cosine schedule's
/// lr * (1 + cos(pi * step / total)) / 2.
double learning_rate_at(const trainer_spec& spec, uint64_t step);

// -- the cluster ------------------------------------------------------------

/// One node of a cluster's topology: `NAME:ROLE[:WORKERS]` in
/// `cluster.nodes`.
struct node_spec {
  std::string name;
  role_kind role = role_kind::worker; ///< worker or trainer
  uint32_t workers = 0; ///< worker actors on a worker node; 0 = its cores
};

/// Parses one `cluster.nodes` entry; errc::invalid_config names it.
caf::expected<node_spec> parse_node_spec(std::string_view entry);

/// Parses "HOST:PORT" (PORT 1..65535); nothing if it does not parse.
std::optional<std::pair<std::string, uint16_t>>
parse_host_port(std::string_view text);

/// Whether `address` is reachable from this machine only (127.x.y.z, ::1,
/// localhost): anything else needs a token before it serves a console.
bool is_loopback(std::string_view address);

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
  /// Listening beyond loopback without TLS is refused unless this is set
  /// (then every node says once that the cluster is unauthenticated).
  bool insecure = false;
  /// A CAF (BASP) message declaring a larger payload closes its connection
  /// at the node's gate, before CAF allocates for it.
  uint64_t max_message_bytes = uint64_t{256} << 20;
  /// Where the topology comes from; anything but static_nodes sets this
  /// node's role, name, host, the head's address and (on the head)
  /// cluster.nodes from what the platform says (config/discovery.hpp).
  discover_kind discover = discover_kind::static_nodes;
  /// SageMaker's resource file (overridable for tests).
  std::string sagemaker_config = "/opt/ml/input/config/resourceconfig.json";
  /// The instance group whose hosts run trainers (SageMaker); its first
  /// host runs the head too. Slurm: a het group's number, or "" to take
  /// the one with GPUs.
  std::string trainer_group = "gpu";
  /// This node's host instead of the platform's (tests: one machine
  /// playing several hosts).
  std::string current_host;
  /// The head journals the run here (head.journal, written atomically):
  /// with it, nodes outlive the head and a head started again with
  /// --resume takes them back. Empty: nodes exit when the head goes.
  std::string state_dir;
};

/// Mutual TLS between nodes (`tls.*`, this node's own files): every CAF
/// connection, every batch stream and the TCP console. Empty certificate
/// and dir: no TLS.
struct tls_spec {
  std::string certificate; ///< PEM: this node's certificate (chain)
  std::string key;         ///< PEM: its private key
  std::string ca_file;     ///< PEM: the cluster's CA; peers must be signed by it
  std::string passphrase;  ///< the key's passphrase, if it is encrypted
  /// A directory from tools/make-certs: ca.pem, NAME.pem, NAME.key for
  /// this node's name (fills the three files that are not set).
  std::string dir;
  /// Refuse to start without TLS configured, even on loopback (a config
  /// file that means TLS, run without certificates by mistake).
  bool required = false;

  /// Whether TLS is configured (the files are checked when loaded).
  bool enabled() const noexcept {
    return !certificate.empty() || !key.empty() || !ca_file.empty()
           || !dir.empty();
  }
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

/// The head's (or a local run's) HTTP endpoints (`metrics.*`): /metrics in
/// the Prometheus text format, /api/state (JSON) and the live dashboard
/// at / (docs/metrics.md).
struct metrics_spec {
  uint16_t port = 0; ///< 0: off
  std::string bind = "127.0.0.1";
  /// Served this long after the run ends, so a last scrape (or the
  /// dashboard) sees the final counts.
  std::chrono::milliseconds linger{0};
};

/// How batches travel between worker and trainer (`transport.*`).
struct transport_spec {
  dtype wire = dtype::float32; ///< image dtype between worker and trainer
  /// Batches between nodes on a direct TCP stream (transport/); false: as
  /// CAF messages through the middleman (slower, one port less).
  bool batch_stream = true;
};

// -- one node's whole configuration ------------------------------------------

/// What stays with each node: its role, name and addresses, its consoles,
/// its workers and its trainer's device. Never shipped.
struct node_options {
  role_kind role = role_kind::local;
  std::string name; ///< this node's name in the cluster; "" = ROLE-PID
  /// The machine it runs on ("" = the hostname): workers on the trainer's
  /// machine are local (router.policy local-only, tie-breaks).
  std::string host;
  cluster_spec cluster;
  tls_spec tls;         ///< this node's certificate, key and the cluster's CA
  console_spec console; ///< the head's or local node's consoles
  metrics_spec metrics; ///< the head's or local node's HTTP endpoints
  std::string report_path; ///< empty: no JSON report
  progress_mode progress = progress_mode::automatic;
  bool resume = false; ///< the trainer continues from its last checkpoint
  bool print_nodes = false; ///< print cluster.nodes and exit
  uint32_t workers = 0; ///< CPU workers; 0 = one per core
  /// What this node's machine costs per hour (node.price-per-hour; 0: look
  /// up instance_type in prices, else unknown): the run's cost.
  double price_per_hour = 0.0;
  std::string instance_type; ///< node.instance-type (SageMaker fills it)
  /// node.prices: "TYPE=DOLLARS_PER_HOUR" as the user supplies them.
  std::vector<std::pair<std::string, double>> prices;
  /// Set by discovery on the head's machine: the node it runs beside the
  /// head (SageMaker: the first GPU host's trainer), as a second process.
  std::optional<node_spec> companion;
  /// What discovery found, said by --print-nodes and at the start.
  std::string discovered;
  /// Each worker of this node does its transform work this many times (it
  /// keeps the first result): makes slow workers for benchmarks and tests.
  double slowdown = 1.0;
  /// Each worker of this node also waits this long per item without using
  /// the CPU: many simulated workers on one machine (tools/bench-scale).
  std::chrono::milliseconds sim_item{0};
  trainer_local_spec trainer;
  std::string config_source; ///< the file (or embedded default) it came from
};

/// What the head ships to every node: the pipeline, the router's settings
/// and how the trainer trains. A worker or trainer node runs the head's,
/// whatever its own file says.
struct pipeline_options {
  source_spec source;
  synthetic_spec synthetic;
  blur_params blur;
  /// Where samples come from and how they are transformed; resolved (sizes,
  /// classes, output shape) on the head and in a local run.
  data_spec data;
  router_spec router;
  trainer_spec trainer;
  transport_spec transport;
  /// How workers make batches (prepare_run decides it once).
  pipeline_kind kind = pipeline_kind::fused_blur;
};

/// One node's whole configuration: read and checked by read_run_config,
/// completed by prepare_run.
struct run_config {
  node_options node;
  pipeline_options pipeline;
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
  return f(caf::meta::type_name("trainer_spec"), x.sim_step_ms, x.log_every,
           x.prefetch, x.lr, x.momentum, x.model_entry, x.optimizer,
           x.weight_decay, x.schedule, x.total_steps, x.model, x.backend,
           x.collective_timeout);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, transport_spec& x) {
  return f(caf::meta::type_name("transport_spec"), x.wire, x.batch_stream);
}

/// What travels from the head to every node (node_options never do).
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, pipeline_options& x) {
  return f(caf::meta::type_name("pipeline_options"), x.source, x.synthetic,
           x.blur, x.data, x.router, x.trainer, x.transport, x.kind);
}

/// Bytes of one full batch of the pipeline on the wire (transport.dtype):
/// what the router's byte budget counts.
uint64_t batch_wire_bytes(const pipeline_options& p);

/// Bytes of one full batch as float32, the largest a worker may send
/// whatever transport.dtype says: a trainer node's frame limit.
uint64_t batch_float_bytes(const pipeline_options& p);

} // namespace stoker
