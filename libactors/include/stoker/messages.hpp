#pragma once

// stoker layer: core

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/atom.hpp>
#include <caf/meta/type_name.hpp>

#include "stoker/atoms.hpp"
#include "stoker/enum_names.hpp"

namespace stoker {

/// Element type of an image buffer. Workers make float32; 16-bit types
/// halve the bytes on the wire (`transport.dtype`) and the trainer converts
/// back. The tag travels with every batch.
enum class dtype : uint8_t { float32 = 1, float16 = 2, bfloat16 = 3 };

template <>
struct enum_names<dtype> {
  static constexpr enum_name<dtype> table[] = {{dtype::float32, "float32"},
                                               {dtype::float16, "float16"},
                                               {dtype::bfloat16, "bfloat16"}};
};

/// Memory order of an image buffer: HWC as decoded, CHW after ToTensor.
enum class layout : uint8_t { hwc = 1, chw = 2 };

template <>
struct enum_names<layout> {
  static constexpr enum_name<layout> table[] = {{layout::hwc, "HWC"},
                                                {layout::chw, "CHW"}};
};

/// Bytes per element of `t`.
size_t dtype_size(dtype t) noexcept;

/// The train or the test split of a dataset.
enum class split : uint8_t { train = 0, test = 1 };

template <>
struct enum_names<split> {
  static constexpr enum_name<split> table[] = {{split::train, "train"},
                                               {split::test, "test"}};
};

/// Where a batch sits in the data-parallel group: the rank that trains on
/// it and its place in that rank's sequence. Every rank runs its batches in
/// `seq` order when there are several (a rank's k-th training batch is
/// global step k's), so all-reduces pair up the same step everywhere.
struct batch_slot {
  uint32_t rank = 0; ///< the trainer it goes to
  uint64_t seq = 0;  ///< its position among that rank's batches of the run
  /// Its last `padded` samples repeat samples from the start of the epoch
  /// (pipeline.last-batch = pad): trained on, counted once.
  uint32_t padded = 0;
  /// The rank's last batch of its phase (an epoch's training, or its
  /// test): every rank's last training batch of an epoch is the same step.
  bool phase_end = false;
};

/// One lease of work: which samples go into which batch. Small by design:
/// the data is made where it is needed, never shipped from the source.
struct work_item {
  uint64_t epoch = 0;
  uint64_t batch_id = 0; ///< unique over the whole run
  std::vector<uint64_t> sample_ids;
  split part = split::train; ///< test: evaluated, not trained on
  /// The article's blur stage runs on the trainer's GPU for this batch
  /// (pipeline.placement): the worker sends it unblurred, HWC.
  bool blur_on_trainer = false;
  batch_slot slot; ///< which trainer, and when
};

/// A batch of images. `data` is one contiguous buffer of
/// n * c * h * w elements of `type` in `order`; whoever holds the message
/// owns it (CAF messages are copy-on-write, so passing it on is free).
struct image_batch {
  uint64_t epoch = 0;
  uint64_t batch_id = 0;
  std::vector<uint64_t> sample_ids;
  std::vector<int64_t> labels;
  dtype type = dtype::float32;
  layout order = layout::hwc;
  uint32_t height = 0;
  uint32_t width = 0;
  uint32_t channels = 0;
  std::vector<char> data;
  /// One checksum per image (see checksum.hpp), taken by the worker after
  /// the last transform, so the trainer can prove what it received.
  std::vector<uint64_t> checksums;
  std::string producer; ///< name of the worker that made it
  split part = split::train; ///< test: evaluated, not trained on
  /// Samples of this batch whose file could not be read or decoded: left
  /// out of the images, accounted as handled (not delivered), counted and
  /// named in the log and the report.
  std::vector<uint64_t> skipped_ids;
  /// Why, same order: the file and what is wrong with it.
  std::vector<std::string> skipped_names;
  /// Where each is counted, same order: its shard, or its own file
  /// (dataset::source_of).
  std::vector<std::string> skipped_sources;
  batch_slot slot; ///< the work item's: which trainer, and when
  /// Soft labels a per-batch stage made (python-batch: MixUp, CutMix):
  /// size() rows of `label_classes` float32, each image's; empty: the
  /// labels are hard. `labels` stay each sample's own either way.
  std::vector<float> soft_labels;
  uint32_t label_classes = 0;
  /// The images are known to match `checksums` in this process: taken as
  /// this process's own worker wrote them (set when it hands the batch to a
  /// trainer as a CAF message), or compared image by image as the batch
  /// stream received them (batch_listener, while each image is still in
  /// cache). Neither the batch frame nor inspect() writes it, so a batch
  /// from another process arrives with false unless this process compared
  /// it. The trainer does not re-read such images for their checksums
  /// unless trainer.recheck-images; every other check runs.
  bool verified_here = false;

  size_t size() const noexcept { return sample_ids.size(); }
  size_t image_elements() const noexcept {
    return size_t{height} * width * channels;
  }
  size_t image_bytes() const noexcept {
    return image_elements() * dtype_size(type);
  }
  /// Image `i` as raw bytes (any dtype).
  const char* image_data(size_t i) const noexcept {
    return data.data() + i * image_bytes();
  }
  /// Image `i` as floats; only for float32 batches.
  float* image(size_t i) noexcept {
    return reinterpret_cast<float*>(data.data() + i * image_bytes());
  }
  const float* image(size_t i) const noexcept {
    return reinterpret_cast<const float*>(data.data() + i * image_bytes());
  }
};

/// The float32 batch a mapper starts from for `item`: its epoch, id and
/// split, the image shape and order, and a buffer for all its images (in
/// `buffer`, resized: one of the right size, e.g. from a pool, is neither
/// reallocated nor zeroed); ids, labels and checksums are the mapper's to
/// fill.
image_batch float_batch_for(const work_item& item, layout order,
                            uint32_t height, uint32_t width, uint32_t channels,
                            std::vector<char> buffer = {});

/// One stage of a worker's transform chain over a run: an entry as
/// written ("python(my_aug:wide)"), or the entries the fused start ran in
/// one pass, joined by " + "; the samples it ran on and its time (the
/// wall time on the worker's thread: a Python stage's includes the
/// crossing to its process). Summed by name across chains and workers.
struct stage_time {
  std::string stage;
  uint64_t samples = 0;
  uint64_t ns = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, stage_time& x) {
  return f(caf::meta::type_name("stage_time"), x.stage, x.samples, x.ns);
}

/// Adds `samples` and `ns` to `stage` in `into` (a new row the first
/// time): stages stay in the order first seen, the chain's.
void add_stage_time(std::vector<stage_time>& into, const std::string& stage,
                    uint64_t samples, uint64_t ns);

/// What a worker tells the router after each item (samples > 0) and every
/// router.report-interval between items (samples == 0): enough to estimate
/// its rate and its queue, and to know it is alive.
struct worker_report {
  uint64_t batch_id = 0;
  uint32_t samples = 0;       ///< the finished item's; 0: periodic report
  uint64_t busy_ns = 0;       ///< time spent making this batch
  uint64_t mailbox_depth = 0; ///< items waiting in the worker's mailbox
  uint32_t in_flight = 0;     ///< items it is working on (0 or 1)
  uint64_t processed = 0;     ///< items finished so far
  uint64_t busy_total_ns = 0; ///< busy time so far
  /// Its counters so far (worker_stats'), so that the head keeps what a
  /// worker made though it is lost before the run's end.
  uint64_t samples_total = 0;
  uint64_t decoded_files = 0;
  uint64_t decode_ns = 0;
  uint64_t decoded_pixels = 0;
  uint64_t file_pixels = 0;
  std::vector<stage_time> stages;
};

/// What a trainer tells the router about a batch it consumed (trained,
/// evaluated, or rejected): the lease ends, and what the in-flight window
/// adapts to.
struct batch_ack {
  uint64_t batch_id = 0;
  uint64_t wait_ns = 0; ///< the trainer's idle time before it (data wait)
  uint64_t step_ns = 0; ///< its step's busy time (0: rejected, not trained)
  uint64_t backlog = 0; ///< batches waiting at the trainer after the step
  uint32_t rank = 0;    ///< the trainer's rank in its group
  /// Its time in the group's collective for this step (waiting for the
  /// other ranks, then reducing): 0 for a group of one.
  uint64_t collective_ns = 0;
};

/// A trainer's place in the data-parallel group, sent to it before it says
/// hello: its rank, the group's size, and the group's rendezvous store (a
/// store_actor of the head or the local process, reached over CAF; null
/// with world 1: no group).
struct group_spec {
  uint32_t rank = 0;
  uint32_t world = 1;
  caf::actor store;
  std::string node; ///< the trainer's node (for messages that name it)
  /// The address its collective traffic uses; empty: its cluster.bind.
  std::string interface;
  /// Which forming of the group: 0 at the start, one more each time the
  /// group forms again after a lost rank (then from rank 0's checkpoint).
  uint32_t generation = 0;
};

/// What a trainer tells the router when it is ready: the least it wants
/// in flight, the machine it is on, and (when it resumed from a
/// checkpoint) the batches it trained on before, which the router skips.
struct trainer_hello {
  uint32_t prefetch = 4;
  std::string host;
  bool checkpoints = false; ///< it saves checkpoints (and says when)
  bool resumed = false;     ///< it continued from a checkpoint
  uint64_t done_below = 0;        ///< every batch id below was trained on
  std::vector<uint64_t> done_ids; ///< and these
  /// It opened a CUDA blur stage (pipeline.placement gpu or auto): the
  /// router may send it unblurred batches.
  bool gpu_blur = false;
  uint32_t rank = 0;  ///< its rank in the data-parallel group
  uint32_t world = 1; ///< the group's size
  std::string node;   ///< its node's name
  /// A group resumed from a checkpoint: the rank's batches below this
  /// slot.seq were trained on before.
  uint64_t resume_seq = 0;
};

/// What one node process used of its machine, and what the machine
/// costs: the run report's CPU utilisation and cost per host.
struct node_usage {
  std::string node; ///< its name (several actors of a node: counted once)
  std::string host; ///< node.host: the machine
  double cpu_s = 0.0;  ///< CPU time (user + system) since the run started
  double wall_s = 0.0; ///< since the run started in this process
  uint32_t cores = 0;  ///< the machine's cores: 100% is all of them busy
  double price_per_hour = 0.0; ///< node.price-per-hour or node.prices; 0: unknown
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, node_usage& x) {
  return f(caf::meta::type_name("node_usage"), x.node, x.host, x.cpu_s,
           x.wall_s, x.cores, x.price_per_hour);
}

struct worker_stats {
  std::string name;
  uint64_t batches = 0;
  uint64_t samples = 0;
  uint64_t busy_ns = 0;
  uint64_t alive_ns = 0;
  /// Minor page faults its thread took making and sending its batches
  /// after the first few (the steady state), and how many batches that is:
  /// fresh memory on the data path shows up here.
  uint64_t steady_faults = 0;
  uint64_t steady_batches = 0;
  node_usage usage; ///< its node process's, when asked
  /// Files it decoded, the time inside the decoder, and the pixels the
  /// decoder made against the files' full size (a JPEG decoded only where
  /// its crop lies, at M/8, makes fewer): transform_chain's chain_tally.
  uint64_t decoded_files = 0;
  uint64_t decode_ns = 0;
  uint64_t decoded_pixels = 0;
  uint64_t file_pixels = 0;
  /// Time per stage of its transform chain (transform_chain's tally).
  std::vector<stage_time> stages;
};

/// Samples skipped from one source (a shard, or a file of its own) over a
/// run: how many (each epoch's counted), and the first reason seen.
struct skip_source {
  std::string source;
  uint64_t samples = 0;
  std::string reason;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, skip_source& x) {
  return f(caf::meta::type_name("skip_source"), x.source, x.samples,
           x.reason);
}

/// Counters of one trainer, for the run report.
struct trainer_stats {
  std::string device;
  bool simulated = false;
  uint64_t steps = 0;
  uint64_t samples_delivered = 0; ///< trained on (skipped ones are not)
  /// Training samples handled, each once: trained on or skipped.
  uint64_t unique_samples = 0;
  uint64_t skipped_unique = 0; ///< of those, skipped (the ledger's)
  uint64_t duplicates = 0;
  uint64_t rejected_batches = 0;
  uint64_t dropped_copies = 0; ///< second copies of a batch (hedging), dropped
  /// Of those, copies whose bits differ from the first's (copy_check): the
  /// chain is not deterministic.
  uint64_t copy_mismatches = 0;
  uint64_t resumed_samples = 0; ///< delivered before a restart (checkpoint)
  /// Steps taken before a restart: in `steps`, not in the times below,
  /// which are this run's.
  uint64_t resumed_steps = 0;
  uint64_t wait_ns = 0; ///< accelerator idle: time spent waiting for data
  uint64_t step_ns = 0; ///< time spent in training steps
  double last_loss = 0.0;
  std::string first_error; ///< the first rejected batch's reason, if any
  uint64_t skipped_samples = 0; ///< unreadable or corrupt files
  std::vector<std::string> skipped_examples; ///< the first few of them
  /// Every skipped sample by where it came from (skip_tally::sources).
  std::vector<skip_source> skipped_sources;
  /// Per epoch: the mean training loss and (trainer.eval) the test
  /// accuracy; < 0 where not measured (the simulated accelerator). Not NaN:
  /// CAF 0.17's serializer turns NaN into -1 on the way between nodes.
  std::vector<double> epoch_train_loss;
  std::vector<double> epoch_test_accuracy;
  uint64_t gpu_blurred_batches = 0; ///< blurred on its GPU (placement)
  /// Minor page faults its thread took on its batches after the first few
  /// (the steady state), and how many batches that is.
  uint64_t steady_faults = 0;
  uint64_t steady_batches = 0;
  uint32_t rank = 0;
  std::string node;
  uint64_t collective_ns = 0; ///< in the group's collectives (W > 1)
  uint64_t padded_samples = 0; ///< repeats that filled last batches (pad)
  /// The ledger's bits (delivery_ledger::pack) when the group has more
  /// than one rank: the report merges them into one ledger.
  std::vector<uint8_t> ledger_bits;
  uint64_t batches_received = 0; ///< every batch that arrived (copies too)
  uint64_t bytes_received = 0;   ///< their image bytes, as on the wire
  node_usage usage; ///< its node process's, when asked
  /// It holds a rank of the group (its group_spec came): a trainer its
  /// node started beyond the group's ranks holds none and is no rank.
  bool grouped = false;
};

/// What a run of a data-parallel group of `world` trainers does per the
/// source's epoch plan (the answer to `world`).
struct group_plan {
  uint32_t world = 1;
  uint64_t samples_expected = 0; ///< training samples delivered, each once
  uint64_t samples_dropped = 0;  ///< left out (pipeline.last-batch = drop)
  uint64_t samples_padded = 0;   ///< repeated to fill last batches (pad)
  uint64_t steps_per_epoch = 0;  ///< global steps (each rank's batches)
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, batch_slot& x) {
  return f(caf::meta::type_name("batch_slot"), x.rank, x.seq, x.padded,
           x.phase_end);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, work_item& x) {
  return f(caf::meta::type_name("work_item"), x.epoch, x.batch_id,
           x.sample_ids, x.part, x.blur_on_trainer, x.slot);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, image_batch& x) {
  // `data` is a std::vector<char>: CAF writes it as one raw block.
  return f(caf::meta::type_name("image_batch"), x.epoch, x.batch_id,
           x.sample_ids, x.labels, x.type, x.order, x.height, x.width,
           x.channels, x.data, x.checksums, x.producer, x.part,
           x.skipped_ids, x.skipped_names, x.skipped_sources, x.slot,
           x.soft_labels, x.label_classes);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, worker_report& x) {
  return f(caf::meta::type_name("worker_report"), x.batch_id, x.samples,
           x.busy_ns, x.mailbox_depth, x.in_flight, x.processed,
           x.busy_total_ns, x.samples_total, x.decoded_files, x.decode_ns,
           x.decoded_pixels, x.file_pixels, x.stages);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, batch_ack& x) {
  return f(caf::meta::type_name("batch_ack"), x.batch_id, x.wait_ns,
           x.step_ns, x.backlog, x.rank, x.collective_ns);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, group_plan& x) {
  return f(caf::meta::type_name("group_plan"), x.world, x.samples_expected,
           x.samples_dropped, x.samples_padded, x.steps_per_epoch);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, group_spec& x) {
  return f(caf::meta::type_name("group_spec"), x.rank, x.world, x.store,
           x.node, x.interface, x.generation);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, trainer_hello& x) {
  return f(caf::meta::type_name("trainer_hello"), x.prefetch, x.host,
           x.checkpoints, x.resumed, x.done_below, x.done_ids, x.gpu_blur,
           x.rank, x.world, x.node, x.resume_seq);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, worker_stats& x) {
  return f(caf::meta::type_name("worker_stats"), x.name, x.batches, x.samples,
           x.busy_ns, x.alive_ns, x.steady_faults, x.steady_batches,
           x.usage, x.decoded_files, x.decode_ns, x.decoded_pixels,
           x.file_pixels, x.stages);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, trainer_stats& x) {
  return f(caf::meta::type_name("trainer_stats"), x.device, x.simulated,
           x.steps, x.samples_delivered, x.unique_samples, x.skipped_unique,
           x.duplicates,
           x.rejected_batches, x.dropped_copies, x.copy_mismatches,
           x.resumed_samples,
           x.resumed_steps,
           x.wait_ns, x.step_ns, x.last_loss, x.first_error,
           x.skipped_samples, x.skipped_examples, x.skipped_sources,
           x.epoch_train_loss,
           x.epoch_test_accuracy, x.gpu_blurred_batches, x.steady_faults,
           x.steady_batches, x.rank, x.node, x.collective_ns,
           x.padded_samples, x.ledger_bits, x.batches_received,
           x.bytes_received, x.usage, x.grouped);
}

/// Registers every message type of this header (and the actor handles of
/// actors.hpp) with `cfg`; call once before the actor system starts.
void register_message_types(caf::actor_system_config& cfg);

} // namespace stoker
