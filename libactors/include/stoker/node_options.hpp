#pragma once

// stoker layer: config
//
// What each node keeps for itself and never ships: its role, name and
// addresses, how it finds the cluster, its TLS files, consoles, metrics
// endpoints and its trainer's device. stoker/options.hpp (which includes
// this header) has what the head ships, and run_config, the two together.
// As there: each struct's member initialisers are the defaults, declared
// once; nothing here does work.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <caf/expected.hpp>

#include "stoker/enum_names.hpp"
#include "stoker/log.hpp"

namespace stoker {

// -- enums a node's own keys name -------------------------------------------

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
struct enum_names<progress_mode> {  static constexpr enum_name<progress_mode> table[] = {
    {progress_mode::automatic, "auto"},
    {progress_mode::on, "on"},
    {progress_mode::off, "off"}};
};

/// Where the trainer runs its steps (`trainer.device`).
enum class device_kind {
  auto_select, ///< CUDA when LibTorch sees a GPU, else CPU
  cuda,
  cpu,
  sim, ///< a simulated accelerator: waits sim_step_ms, checks each batch
};

template <>
struct enum_names<device_kind> {  static constexpr enum_name<device_kind> table[] = {
    {device_kind::auto_select, "auto"},
    {device_kind::cuda, "cuda"},
    {device_kind::cpu, "cpu"},
    {device_kind::sim, "sim"}};
};

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
  /// what tools/ops/launch-cluster starts.
  std::vector<node_spec> nodes;
  std::string port_file; ///< the head writes its port here once listening
  /// Listening beyond loopback without TLS is refused unless this is set
  /// (then every node says once that the cluster is unauthenticated).
  bool insecure = false;
  /// A CAF (BASP) message declaring a larger payload closes its connection
  /// at the node's gate, before CAF allocates for it.
  uint64_t max_message_bytes = uint64_t{256} << 20;
  /// A node port's gate holds at most this many connections at once, and
  /// this many from one peer address: idle strangers cannot lock nodes
  /// out (those that send nothing are closed after connect-timeout).
  uint32_t max_connections = 512;
  uint32_t max_connections_per_peer = 64;
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
  /// A directory from tools/ops/make-certs: ca.pem, NAME.pem, NAME.key for
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
  /// The endpoints look at the job at most this often, whoever asks
  /// (every request is served the latest look).
  std::chrono::milliseconds refresh{1000};
};

// -- the trainer node's own --------------------------------------------------

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
  /// The trainer re-reads and checksums every image, also those already
  /// verified in this process (see image_batch::verified_here).
  bool recheck_images = false;
};

/// How this node writes its lines (log.*).
struct log_spec {
  log_level level = log_level::info;    ///< this level and above are said
  log_format format = log_format::text; ///< stoker-node's standard streams
};

// -- one node's own settings -------------------------------------------------

/// What stays with each node: its role, name and addresses, its consoles,
/// its workers and its trainer's device. Never shipped.
/// Where this node's Python stages run (python.*): each node its own, as
/// the modules live on its machine.
struct python_spec {
  /// The interpreter a stage's processes run (one with torch).
  std::string executable = "/usr/bin/python3";
  /// Directories put first on its sys.path, where the modules are.
  std::vector<std::string> path;
};

/// One end of the span a node's CPU utilisation covers: the process's CPU
/// time (every thread) and wall time, both counted from the library's load,
/// read together.
struct usage_mark {
  double cpu_s = 0.0;
  double wall_s = 0.0;
};

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
  log_spec log;         ///< the level and format of this node's lines
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
  /// Set by discovery: the nodes this host runs beside its own, each as a
  /// process of its own: on the head's host, the host's node (SageMaker:
  /// the first GPU host's trainer); on a trainer host of a cluster with no
  /// worker host, a worker node HOST-cpu (its own CPU workers).
  std::vector<node_spec> companions;
  /// What discovery found, said by --print-nodes and at the start.
  std::string discovered;
  /// Each worker of this node does its transform work this many times (it
  /// keeps the first result): makes slow workers for benchmarks and tests.
  double slowdown = 1.0;
  /// Each worker of this node also waits this long per item without using
  /// the CPU: many simulated workers on one machine (tools/bench/bench-scale).
  std::chrono::milliseconds sim_item{0};
  trainer_local_spec trainer;
  python_spec python; ///< where its Python stages run
  std::string config_source; ///< the file (or embedded default) it came from
  /// Not a key: set when the run starts in this process (embedded_run::
  /// start), so that the CPU utilisation a report gives is this run's, not
  /// the process's since the library was loaded (an embedder that ran
  /// before, or idled, would dilute it).
  usage_mark run_started;
};

} // namespace stoker
