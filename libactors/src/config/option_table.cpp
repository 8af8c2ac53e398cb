#include "config/option_table.hpp"

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "config/table_builder.hpp"

namespace stoker {

namespace {

using namespace detail;


// cluster.head = "HOST:PORT".
caf::error read_head(const std::string& name, const caf::config_value& v,
                     const std::string& text, run_config& cfg) {
  auto hp = parse_host_port(text);
  if (!hp)
    return bad_value(name, v, "HOST:PORT, e.g. 127.0.0.1:4242");
  cfg.node.cluster.head_host = hp->first;
  cfg.node.cluster.head_port = hp->second;
  return caf::none;
}

// cluster.nodes = ["NAME:ROLE[:N]", ...].
caf::error read_nodes(const std::string& name,
                      const std::vector<std::string>& entries,
                      run_config& cfg) {
  std::vector<node_spec> nodes;
  for (auto& entry : entries) {
    auto node = parse_node_spec(entry);
    if (!node)
      return make_error(errc::invalid_config,
                        name + ": " + describe(node.error()));
    nodes.push_back(std::move(*node));
  }
  cfg.node.cluster.nodes = std::move(nodes);
  return caf::none;
}

// node.prices = ["TYPE=DOLLARS", ...].
caf::error read_prices(const std::string& name,
                       const std::vector<std::string>& entries,
                       run_config& cfg) {
  std::vector<std::pair<std::string, double>> prices;
  for (auto& entry : entries) {
    auto eq = entry.rfind('=');
    char* end = nullptr;
    double price = eq == std::string::npos
                     ? -1.0
                     : std::strtod(entry.c_str() + eq + 1, &end);
    if (eq == std::string::npos || eq == 0 || end == entry.c_str() + eq + 1
        || *end != '\0' || !(price >= 0.0) || price > 1e6)
      return make_error(errc::invalid_config,
                        name + ": \"" + entry
                          + "\": expected \"INSTANCE-TYPE=DOLLARS_PER_HOUR\" "
                            "(e.g. \"ml.g5.xlarge=1.408\")");
    prices.emplace_back(entry.substr(0, eq), price);
  }
  cfg.node.prices = std::move(prices);
  return caf::none;
}

// python.path = ["DIR", ...]: any directories (a missing one is the
// import's error to name).
caf::error read_python_path(const std::string& name,
                            const std::vector<std::string>& entries,
                            run_config& cfg) {
  for (auto& dir : entries)
    if (dir.empty())
      return make_error(errc::invalid_config,
                        name + ": an empty entry; expected directories");
  cfg.node.python.path = entries;
  return caf::none;
}

using N = node_options;
using P = pipeline_options;

std::vector<option_decl> make_table() {
  std::vector<option_decl> t;
  // -- global: flags of the command line
  table_builder{t, ""}
    .choice("role", node_at<&N::role>,
            "what this process runs: every actor here (local), the head, "
            "or a worker or trainer node that joins one")
    .text("report", node_at<&N::report_path>,
          "write the JSON run report to this path")
    .shown_default("none")
    .choice("progress", node_at<&N::progress>,
            "one updating progress line on a head or local node (samples, "
            "samples/s, ETA, accelerator idle) instead of the Iteration "
            "lines; auto: when standard output is a terminal")
    .boolean("print-nodes", node_at<&N::print_nodes>,
             "print cluster.nodes as NAME ROLE WORKERS lines and exit (for "
             "tools/ops/launch-cluster)")
    .boolean("resume", node_at<&N::resume>,
             "the trainer continues from the checkpoint in "
             "trainer.checkpoint-dir (roles local and trainer); the head "
             "continues the run journaled in cluster.state-dir")
    // -- console (head and local roles)
    .section("console")
    .boolean("terminal", node_at<&N::console, &console_spec::terminal>,
             "the console on this terminal while the job runs (line "
             "editing, history, tab completion); --console for short")
    .integer("port", node_at<&N::console, &console_spec::port>, 0, 65535,
             "the head (or local node) serves its console over TCP here; "
             "0 = off")
    .text("bind", node_at<&N::console, &console_spec::bind>,
          "the console's address; anything but loopback needs "
          "console.token")
    .text("token", node_at<&N::console, &console_spec::token>,
          "a console client's first line must be this")
    // -- metrics
    .section("metrics")
    .integer("port", node_at<&N::metrics, &metrics_spec::port>, 0, 65535,
             "the head (or local node) serves /metrics (Prometheus), "
             "/api/state and the dashboard over HTTP here; 0 = off")
    .text("bind", node_at<&N::metrics, &metrics_spec::bind>,
          "the HTTP endpoints' address; beyond loopback it needs tls.* "
          "(then mutual TLS) or cluster.insecure")
    .duration("linger", node_at<&N::metrics, &metrics_spec::linger>,
              "keep serving this long after the run ends, so a last "
              "scrape (or the dashboard) sees the final counts",
              true)
    .duration("refresh", node_at<&N::metrics, &metrics_spec::refresh>,
              "look at the job at most this often, however many scrape: "
              "every request is served the latest look")
    // -- log
    .section("log")
    .choice("level", node_at<&N::log, &log_spec::level>,
            "say lines of this level and above (each node its own)")
    .choice("format", node_at<&N::log, &log_spec::format>,
            "text: the lines as said; json: one object a line with ts "
            "(UTC), level, node, role and msg, for a log collector (the "
            "progress line is off)")
    // -- node
    .section("node")
    .text("name", node_at<&N::name>, "this node's name in the cluster (unique)")
    .shown_default("ROLE-PID")
    .text("host", node_at<&N::host>,
          "the machine the node runs on: workers on the trainer's machine "
          "are local to it (local-only, tie-breaks)")
    .shown_default("the hostname")
    .real("price-per-hour", node_at<&N::price_per_hour>, 0.0, 1e6,
          "what this node's machine costs per hour, for the run's cost; 0 = "
          "node.instance-type's price in node.prices, else unknown")
    .text("instance-type", node_at<&N::instance_type>,
          "this machine's instance type (cluster.discover = sagemaker fills "
          "it from the node's instance group)")
    .shown_default("none")
    .list("prices", option_scope::node,
          "instance prices the user supplies: \"TYPE=DOLLARS_PER_HOUR\" "
          "entries, looked up by node.instance-type",
          "[\"TYPE=PRICE\", ...]", "[]", read_prices)
    // -- python
    .section("python")
    .text("executable", node_at<&N::python, &python_spec::executable>,
          "the interpreter a python(MODULE:CALLABLE) transform's processes "
          "run (one with torch; the Python package sets its own)")
    .list("path", option_scope::node,
          "directories put first on that interpreter's sys.path, where the "
          "transforms' modules are (each node its own)",
          "[\"DIR\", ...]", "[]", read_python_path)
    // -- cluster
    .section("cluster")
    .text("bind", node_at<&N::cluster, &cluster_spec::bind>,
          "the address the head and trainer nodes listen on")
    .integer("port", node_at<&N::cluster, &cluster_spec::port>, 0, 65535,
             "the head's port; 0 = any free port")
    .text_with("head", option_scope::node,
               "HOST:PORT of the head (worker and trainer roles)", "HOST:PORT",
               "none", read_head)
    .duration("join-timeout", node_at<&N::cluster, &cluster_spec::join_timeout>,
              "how long the head waits for cluster.nodes (and a node for "
              "the head's answer)")
    .duration("connect-timeout",
              node_at<&N::cluster, &cluster_spec::connect_timeout>,
              "how long a node retries reaching the head")
    .duration("heartbeat-timeout",
              pipe_at<&P::router, &router_spec::heartbeat_timeout>,
              "a worker silent this long beyond its current item is lost; "
              "its work goes elsewhere")
    .list("nodes", option_scope::node,
          "the topology: \"NAME:worker[:WORKERS]\" or \"NAME:trainer\" "
          "entries",
          "[\"NAME:ROLE[:N]\", ...]", "[]", read_nodes)
    .text("port-file", node_at<&N::cluster, &cluster_spec::port_file>,
          "the head writes its port here once listening")
    .shown_default("none")
    .boolean("insecure", node_at<&N::cluster, &cluster_spec::insecure>,
             "allow listening beyond loopback without TLS (no "
             "authentication: anyone who reaches the ports can join)")
    .integer("max-message-bytes",
             node_at<&N::cluster, &cluster_spec::max_message_bytes>, 1 << 20,
             i64_max,
             "a CAF message declaring more payload than this closes its "
             "connection (before CAF allocates for it)")
    .integer("max-connections",
             node_at<&N::cluster, &cluster_spec::max_connections>, 1, 65536,
             "a node port's gate holds at most this many connections at "
             "once; more are refused, saying why (the node tries again)")
    .integer("max-connections-per-peer",
             node_at<&N::cluster, &cluster_spec::max_connections_per_peer>,
             1, 65536,
             "at most this many of them from one peer address; a peer that "
             "sends nothing is closed after cluster.connect-timeout")
    .choice("discover", node_at<&N::cluster, &cluster_spec::discover>,
            "where the topology comes from: static (cluster.nodes, --role, "
            "--cluster.head), sagemaker (its resourceconfig.json) or slurm "
            "(SLURM_* of a one-task-per-node job); the same command line on "
            "every host then works out each node's role")
    .text("sagemaker-config",
          node_at<&N::cluster, &cluster_spec::sagemaker_config>,
          "SageMaker's resource file (cluster.discover = sagemaker)")
    .text("trainer-group",
          node_at<&N::cluster, &cluster_spec::trainer_group>,
          "SageMaker: the instance group whose hosts run trainers (its "
          "first host the head too); Slurm: the het group's number, empty = "
          "the one with GPUs")
    .text("current-host",
          node_at<&N::cluster, &cluster_spec::current_host>,
          "this node's host instead of the platform's (one machine playing "
          "several hosts)")
    .shown_default("the platform's")
    .text("state-dir", node_at<&N::cluster, &cluster_spec::state_dir>,
          "the head journals the run here, so nodes outlive the head and a "
          "head started again with --resume takes them back (other roles "
          "ignore it); empty = nodes exit when the head goes")
    .shown_default("none")
    // -- tls
    .section("tls")
    .text("certificate", node_at<&N::tls, &tls_spec::certificate>,
          "PEM file: this node's certificate; set with tls.key and "
          "tls.ca-file for mutual TLS on every connection")
    .shown_default("none")
    .text("key", node_at<&N::tls, &tls_spec::key>,
          "PEM file: this node's private key")
    .shown_default("none")
    .text("ca-file", node_at<&N::tls, &tls_spec::ca_file>,
          "PEM file: the cluster's CA; every peer needs a certificate it "
          "signed")
    .shown_default("none")
    .text("passphrase", node_at<&N::tls, &tls_spec::passphrase>,
          "the passphrase of an encrypted tls.key")
    .shown_default("none")
    .text("dir", node_at<&N::tls, &tls_spec::dir>,
          "a directory from tools/ops/make-certs: ca.pem, NAME.pem and "
          "NAME.key for this node.name")
    .shown_default("none")
    .boolean("required", node_at<&N::tls, &tls_spec::required>,
             "refuse to start unless TLS is configured (tls.dir or "
             "tls.certificate, tls.key and tls.ca-file), even on loopback")
    // -- pipeline
    .section("pipeline")
    .integer("seed", pipe_at<&P::source, &source_spec::seed>, 0, i64_max,
             "seed of every random draw (images, sigmas, shuffles)")
    .integer("dataset-size", pipe_at<&P::source, &source_spec::dataset_size>, 1,
             i64_max,
             "sample ids 0..N-1; with a real source, a fixed subset of N "
             "samples")
    .integer("batch-size", pipe_at<&P::source, &source_spec::batch_size>, 1,
             65536, "samples per batch")
    .integer("epochs", pipe_at<&P::source, &source_spec::epochs>, 1, 1000000,
             "passes over the dataset")
    .boolean("shuffle", pipe_at<&P::source, &source_spec::shuffle>,
             "a new order each epoch, from (seed, epoch)")
    .integer("shuffle-buffer",
             pipe_at<&P::source, &source_spec::shuffle_buffer>, 1, i64_max,
             "tar-shards: each epoch shuffles the shards' order, then the "
             "samples within windows of this many (WebDataset's shuffle "
             "buffer); larger mixes more, a window reads from more shards")
    .choice("last-batch", pipe_at<&P::source, &source_spec::last_batch>,
            "the tail of an epoch that does not fill a global step (one "
            "batch per trainer): partial (smaller batches, split evenly), "
            "drop (not trained on) or pad (filled from the epoch's start)")
    .integer("height", pipe_at<&P::synthetic, &synthetic_spec::height>, 1,
             16384, "synthetic image height")
    .integer("width", pipe_at<&P::synthetic, &synthetic_spec::width>, 1, 16384,
             "synthetic image width")
    .integer("channels", pipe_at<&P::synthetic, &synthetic_spec::channels>, 1,
             4, "synthetic image channels")
    .integer("num-classes",
             pipe_at<&P::synthetic, &synthetic_spec::num_classes>, 1, 1000000,
             "the label of synthetic sample i is i % num-classes")
    .integer("blur-repeat", pipe_at<&P::blur, &blur_params::repeat>, 0, 1000,
             "GaussianBlur calls per image (0: ToTensor only)")
    .integer("blur-kernel", pipe_at<&P::blur, &blur_params::kernel_size>, 1, 99,
             "the blur's kernel size, odd")
    .choice("blur-impl", pipe_at<&P::blur, &blur_params::impl>,
            "the CPU blur: stoker (the hand-written chain), opencv "
            "(sepFilter2D), auto (stoker where the CPU has AVX2 or AVX-512)")
    .choice("blur-isa", pipe_at<&P::blur, &blur_params::isa>,
            "the chain's instruction set (auto: the widest the CPU runs)")
    .real("sigma-min", pipe_at<&P::blur, &blur_params::sigma_min>, 1e-3, 100.0,
          "the smallest sigma drawn")
    .real("sigma-max", pipe_at<&P::blur, &blur_params::sigma_max>, 1e-3, 100.0,
          "the largest sigma drawn")
    .choice("placement", pipe_at<&P::router, &router_spec::placement>,
            "where the blur stage runs: the workers (cpu), the trainer's "
            "GPU (gpu) or a share the router moves (auto)")
    .entry("source", pipe_at<&P::data, &data_spec::source>,
           "a registered source: synthetic, idx, image-folder, tar-shards or "
           "one of the node's own")
    .text("data", pipe_at<&P::data, &data_spec::data>,
          "idx: the directory of the IDX files; image-folder: the training "
          "folder; tar-shards: a directory of .tar shards, one shard, or a "
          "brace pattern (train-{000000..000146}.tar)")
    .text("eval-data", pipe_at<&P::data, &data_spec::eval_data>,
          "image-folder: the test folder; tar-shards: the test shards")
    .integer("eval-size", pipe_at<&P::data, &data_spec::eval_limit>, 0, i64_max,
             "evaluate on a fixed subset of this many test samples; 0 = all")
    .entries("transforms", pipe_at<&P::data, &data_spec::transforms>,
             "the chain each training sample goes through on a worker")
    .entries("eval-transforms", pipe_at<&P::data, &data_spec::eval_transforms>,
             "the chain for test samples")
    .shown_default("the transforms without augmentation")
    .real("max-failed-share",
          pipe_at<&P::data, &data_spec::max_failed_share>, 0.0, 1.0,
          "the run fails once more than this share of its samples failed "
          "in a transform (a python(...) stage's exception), judged over "
          "at least 1,000 samples; below it each is skipped and counted")
    .boolean("decode-region", pipe_at<&P::data, &data_spec::decode_region>,
             "a chain that starts decode, then random-resized-crop or "
             "resize + center-crop, decodes only the rows and columns of a "
             "JPEG the crop needs, at the largest M/8 scale that keeps it "
             "three times the output size (libjpeg-turbo), then resamples it "
             "antialiased; false: every file decoded whole by OpenCV, then "
             "cropped")
    // -- router
    .section("router")
    .choice("policy", pipe_at<&P::router, &router_spec::policy>,
            "how the router picks a worker for each batch")
    .integer("window", pipe_at<&P::router, &router_spec::window>, 1, 100000,
             "batches in flight per trainer at the start; adapts from there")
    .integer("max-inflight-bytes",
             pipe_at<&P::router, &router_spec::max_inflight_bytes>, 1, i64_max,
             "the window's ceiling, in bytes of batches")
    .real("idle-target", pipe_at<&P::router, &router_spec::idle_target>, 0.0,
          1.0,
          "trainer idle fraction (a data-parallel group's: its steps' wait "
          "for data) above which the window widens")
    .duration("report-interval",
              pipe_at<&P::router, &router_spec::report_interval>,
              "how often workers report between items")
    .real("hedge-factor", pipe_at<&P::router, &router_spec::hedge_factor>, 0.0,
          1000.0,
          "lease a batch this many times older than the median to a second "
          "worker; 0 = off, else at least 1.5")
    // -- worker
    .section("worker")
    .integer("count", node_at<&N::workers>, 0, 4096,
             "CPU workers; 0 = one per core")
    .real("slowdown", node_at<&N::slowdown>, 1.0, 1000.0,
          "FOR BENCHMARKS AND TESTS: do the transform work this many times")
    .duration("sim-item", node_at<&N::sim_item>,
              "FOR BENCHMARKS AND TESTS: each item also takes this long "
              "without using the CPU (many simulated workers on one machine)",
              true)
    // -- transport
    .section("transport")
    .choice("dtype", pipe_at<&P::transport, &transport_spec::wire>,
            "images between worker and trainer (16 bits: half the bytes)")
    .boolean("batch-stream",
             pipe_at<&P::transport, &transport_spec::batch_stream>,
             "batches between nodes on a direct TCP stream, not as CAF "
             "messages")
    // -- trainer: each trainer node's own device, threads and checkpoints
    .section("trainer")
    .choice("device", node_at<&N::trainer, &trainer_local_spec::device>,
            "where the trainer steps (auto: CUDA if LibTorch sees one, else "
            "CPU; sim: a simulated accelerator)")
    .integer("threads", node_at<&N::trainer, &trainer_local_spec::threads>, 0,
             4096, "LibTorch intra-op threads; 0 = LibTorch's default")
    .text("checkpoint-dir",
          node_at<&N::trainer, &trainer_local_spec::checkpoint_dir>,
          "where the trainer saves checkpoints; empty = none")
    .integer("checkpoint-every",
             node_at<&N::trainer, &trainer_local_spec::checkpoint_every>, 1,
             u32_max, "steps between checkpoints")
    .integer("count", node_at<&N::trainer, &trainer_local_spec::count>, 0,
             1024,
             "trainers on this node, one data-parallel rank each; 0 = one "
             "per CUDA device LibTorch sees, 1 without")
    .real("sim-slowdown",
          node_at<&N::trainer, &trainer_local_spec::sim_slowdown>, 1.0,
          1000.0,
          "FOR BENCHMARKS AND TESTS: this node's simulated steps take this "
          "many times trainer.sim-step-ms (a slow rank)")
    .boolean("recheck-images",
             node_at<&N::trainer, &trainer_local_spec::recheck_images>,
             "the trainer checksums every image again before its step, also "
             "those verified in this process already (checksummed as this "
             "process's workers wrote them, or compared as the batch stream "
             "received them)")
    // -- trainer: how every trainer trains (the head's)
    .integer("sim-step-ms", pipe_at<&P::trainer, &trainer_spec::sim_step_ms>, 0,
             3600000, "step time of the simulated accelerator, ms")
    .integer("log-every", pipe_at<&P::trainer, &trainer_spec::log_every>, 1,
             u32_max, "steps between progress lines")
    .integer("prefetch", pipe_at<&P::trainer, &trainer_spec::prefetch>, 1,
             100000,
             "batches always in flight to the trainer: the window's floor")
    .entry("model", pipe_at<&P::trainer, &trainer_spec::model_entry>,
           "a registered model: vit, cnn or one of the node's own")
    .choice("optimizer", pipe_at<&P::trainer, &trainer_spec::optimizer>,
            "the optimizer (sgd with trainer.momentum, or adamw)")
    .real("lr", pipe_at<&P::trainer, &trainer_spec::lr>, 0.0, 1e3,
          "the learning rate")
    .real("momentum", pipe_at<&P::trainer, &trainer_spec::momentum>, 0.0, 1.0,
          "SGD's momentum")
    .real("weight-decay", pipe_at<&P::trainer, &trainer_spec::weight_decay>,
          0.0, 10.0, "the optimizer's weight decay")
    .choice("lr-schedule", pipe_at<&P::trainer, &trainer_spec::schedule>,
            "constant, or cosine down to 0 over the run")
    .choice("backend", pipe_at<&P::trainer, &trainer_spec::backend>,
            "how several trainers exchange gradients: LibTorch's c10d gloo "
            "(CPU tensors) or nccl (a LibTorch with NCCL); auto: nccl where "
            "there is one and the trainers are on CUDA, else gloo")
    .duration("collective-timeout",
              pipe_at<&P::trainer, &trainer_spec::collective_timeout>,
              "a trainer waiting this long for another rank (set-up, "
              "barrier, all-reduce) fails the run, naming it")
    .boolean("eval", pipe_at<&P::data, &data_spec::eval>,
             "evaluate on the test split after each epoch")
    // -- model: the ViT's sizes
    .section("model")
    .integer("patch-size",
             pipe_at<&P::trainer, &trainer_spec::model, &vit_spec::patch_size>,
             1, 4096, "ViT patch size (must divide the image size)")
    .integer("width",
             pipe_at<&P::trainer, &trainer_spec::model, &vit_spec::width>, 1,
             65536, "ViT embedding width")
    .integer("depth",
             pipe_at<&P::trainer, &trainer_spec::model, &vit_spec::depth>, 1,
             1000, "ViT blocks")
    .integer("heads",
             pipe_at<&P::trainer, &trainer_spec::model, &vit_spec::heads>, 1,
             1024, "attention heads (must divide the width)")
    .integer("mlp-dim",
             pipe_at<&P::trainer, &trainer_spec::model, &vit_spec::mlp_dim>, 1,
             1 << 20, "ViT MLP hidden size");
  return t;
}

} // namespace

std::string option_decl::section() const {
  auto dot = name.find('.');
  return dot == std::string::npos ? "global" : name.substr(0, dot);
}

std::string option_decl::key() const {
  auto dot = name.find('.');
  return dot == std::string::npos ? name : name.substr(dot + 1);
}

std::string option_decl::description() const {
  return help + " [" + values + "; default " + default_text + "]";
}

const std::vector<option_decl>& option_table() {
  static const std::vector<option_decl> table = make_table();
  return table;
}

const option_decl* find_option(std::string_view name) {
  auto& t = option_table();
  auto i = std::find_if(t.begin(), t.end(),
                        [&](const option_decl& d) { return d.name == name; });
  return i == t.end() ? nullptr : &*i;
}

namespace {

// Edits (insert, delete, substitute, swap two neighbours) from a to b.
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1,
                                     std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i)
    d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j)
    d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1,
                          d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

// The candidate nearest `word`, if near enough to be a slip of the keys
// (at most a third of its letters, and at least one, changed); "" if none.
std::string nearest(std::string_view word,
                    const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_d = std::max<size_t>(1, word.size() / 3) + 1;
  for (auto& c : candidates) {
    auto d = edit_distance(word, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

} // namespace

std::string unknown_option_text(std::string_view name) {
  auto dot = name.find('.');
  auto section = std::string{dot == std::string_view::npos
                               ? std::string_view{"global"}
                               : name.substr(0, dot)};
  auto key = std::string{dot == std::string_view::npos ? name
                                                       : name.substr(dot + 1)};
  std::vector<std::string> sections;
  std::vector<std::string> keys;
  for (auto& d : option_table()) {
    auto s = d.section();
    if (std::find(sections.begin(), sections.end(), s) == sections.end()
        && s != "global")
      sections.push_back(s);
    if (s == section)
      keys.push_back(d.key());
  }
  auto more = " (see stoker-node --long-help)";
  if (section != "global" && keys.empty()) {
    auto near = nearest(section, sections);
    return "unknown section [" + section + "]"
           + (near.empty() ? std::string{more}
                           : "; did you mean [" + near + "]?");
  }
  auto near = nearest(key, keys);
  return "unknown key '" + key + "'"
         + (section == "global" ? std::string{}
                                : " in section [" + section + "]")
         + (near.empty() ? std::string{more}
                         : "; did you mean '" + near + "'?");
}

void declare_options(caf::config_option_set& set) {
  for (auto& d : option_table())
    d.declare(set, d.description());
}

} // namespace stoker
