#pragma once

// stoker layer: config
//
// Every setting of a run as plain structs, and the enums config files
// name: what the head ships to every node here, what each node keeps for
// itself in stoker/node_options.hpp (included). Each struct's member initialisers are the defaults (declared once:
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
#include "stoker/node_options.hpp"

namespace stoker {

// -- enums config files name ------------------------------------------------


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
  /// pipeline.shuffle-buffer: with a source in shards, the window within
  /// which samples are shuffled after the shards' order is.
  uint64_t shuffle_buffer = 1000;
  /// Samples per shard, in index order (tar-shards; resolve_data fills
  /// it): each epoch then shuffles whole shards and within the buffer
  /// (shard_order), not the whole dataset. Empty: one permutation.
  std::vector<uint64_t> shards{};
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, source_spec& x) {
  return f(caf::meta::type_name("source_spec"), x.dataset_size, x.batch_size,
           x.epochs, x.shuffle, x.seed, x.eval_size, x.last_batch,
           x.shuffle_buffer, x.shards);
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
  /// pipeline.decode-region: a chain starting decode then a crop decodes
  /// only what the crop needs of a JPEG (transform_chain::bind).
  bool decode_region = true;
  /// pipeline.max-failed-share: the run fails once more than this share of
  /// its samples failed in a transform (a Python stage's exception).
  double max_failed_share = 0.01;
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
  /// Damage the listing found (source_view::damage), for the log and the
  /// report.
  std::vector<std::string> damage;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, data_spec& x) {
  return f(caf::meta::type_name("data_spec"), x.source, x.data, x.eval_data,
           x.transforms, x.eval_transforms, x.eval, x.decode_region,
           x.max_failed_share, x.train_limit,
           x.eval_limit, x.seed, x.train_size, x.eval_size, x.num_classes,
           x.output, x.fingerprint, x.damage);
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

/// The learning rate of training step `step` (0-based) of a run of
/// `spec.total_steps`: trainer.lr, or the cosine schedule's
/// lr * (1 + cos(pi * step / total)) / 2.
double learning_rate_at(const trainer_spec& spec, uint64_t step);

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

/// How batches travel between worker and trainer (`transport.*`).
struct transport_spec {
  dtype wire = dtype::float32; ///< image dtype between worker and trainer
  /// Batches between nodes on a direct TCP stream (transport/); false: as
  /// CAF messages through the middleman (slower, one port less).
  bool batch_stream = true;
};

// -- one node's whole configuration ------------------------------------------

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
