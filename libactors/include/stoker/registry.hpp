#pragma once

// stoker layer: registry

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <caf/error.hpp>
#include <caf/expected.hpp>

#include "stoker/counter_rng.hpp"
#include "stoker/dataset.hpp"
#include "stoker/entry_spec.hpp"
#include "stoker/options.hpp"

// LibTorch's types appear only in std::function signatures here, so this
// header does not pull LibTorch into every unit that names a transform;
// a model's definition includes <torch/torch.h> itself.
namespace at {
class Tensor;
} // namespace at
namespace torch::nn {
class AnyModule;
} // namespace torch::nn
namespace torch::optim {
class Optimizer;
} // namespace torch::optim

namespace stoker {

/// What a chain has made of a sample so far, as check_chain follows it
/// without reading any sample. Each transform's `check` reads it and
/// updates it to what comes out.
struct chain_state {
  image_shape shape;     ///< 0 where it varies from image to image
  bool files = false;    ///< the source gives files' bytes
  bool encoded = false;  ///< still bytes: nothing has decoded them yet
  bool is_float = false; ///< float32 pixels (after to-tensor)
};

/// A transform: a pure function over one sample with its own numeric
/// parameters (the entry's arguments) and its own counter-based generator,
/// keyed by (seed, epoch, sample, position in the chain), so any worker on
/// any node makes the same sample.
struct transform_def {
  std::string name; ///< as config files write it: "my-jitter"
  size_t min_args = 0;
  size_t max_args = 0;
  std::string usage; ///< shown when the argument count is wrong
  /// Checks the entry's arguments against what comes in and updates
  /// `state` to what comes out; a transform_error says what is wrong. Runs
  /// on the head (and a local run) before any sample is read. Unset: any
  /// input, and the shape stays.
  std::function<caf::error(const entry_spec& entry, chain_state& state)> check;
  /// Transforms one sample, on a worker's thread, several workers at once:
  /// no mutable state outside the sample. `sample.pixels` (HWC, 8-bit or
  /// float32) may be a view of the source's memory: replace it with a new
  /// cv::Mat, never write into it. Draws come from `rng` only. An error
  /// (errc::io_failure) skips the sample; the report names it.
  std::function<caf::error(const entry_spec& entry, sample_input& sample,
                           const counter_rng& rng)>
    apply;
  /// The entry's form in the evaluation chain (pipeline.eval-transforms'
  /// default). Unset: kept as it is; an augmentation returns nothing.
  std::function<std::vector<entry_spec>(const entry_spec& entry)> eval;
  /// Whether it takes a file's bytes (only decode does): the chain over a
  /// source of files must start with such a transform.
  bool takes_files = false;
  /// Whether its first argument names a function, MODULE:CALLABLE
  /// (entry_spec::ref; only python does): required then, refused
  /// otherwise.
  bool takes_ref = false;
  /// Whether it runs on the whole batch once its samples are made
  /// (python-batch: MixUp, CutMix), not on each sample: last in the chain
  /// (check_chain), and `apply` is not called.
  bool per_batch = false;
  /// Which implementation this is ("2", a date, a commit): the head's
  /// pipeline records it, and a node whose entry of that name has another
  /// version refuses to join. Change it when the entry's output changes.
  std::string version;
};

/// What a source found when the head looked at its data.
struct source_view {
  image_shape input;     ///< what the chain starts from; 0 where it varies
  bool files = false;    ///< samples are files' bytes (a chain must decode)
  uint64_t train_size = 0;
  uint64_t eval_size = 0; ///< the test split's, when data.eval
  uint32_t num_classes = 0;
  /// Of the listing, so a node with other files can be refused in `open`.
  std::string fingerprint;
  /// Training samples per shard, in index order, for a source whose
  /// samples live in shards read in order (tar-shards): each epoch shuffles
  /// whole shards, then within pipeline.shuffle-buffer. Empty: the epoch's
  /// order is one permutation of every sample.
  std::vector<uint64_t> shards;
  /// Damage found while listing (a line each, naming the file and the
  /// bytes): logged once at the start and listed in the report.
  std::vector<std::string> damage;
};

/// A source: how to enumerate and read the samples of a dataset.
struct source_def {
  std::string name; ///< `pipeline.source`
  size_t min_args = 0;
  size_t max_args = 0;
  std::string usage;
  /// On the head and in a local run: looks at `data` (pipeline.data,
  /// pipeline.eval-data, the limits, the entry's arguments in
  /// data.source) without reading every sample. Errors
  /// (errc::invalid_config) name the key, the path and what was expected.
  std::function<caf::expected<source_view>(const data_spec& data,
                                           const synthetic_spec& image)>
    resolve;
  /// On each worker node, once: opens split `which` of the resolved
  /// `data` (sizes, classes and fingerprint as the head found them). Must
  /// refuse, naming the path, a view other than the head's. The dataset is
  /// read from several threads at once.
  std::function<caf::expected<std::shared_ptr<const dataset>>(
    const data_spec& data, split which, const synthetic_spec& image)>
    open;
  /// Which implementation this is ("2", a date, a commit): the head's
  /// pipeline records it, and a node whose entry of that name has another
  /// version refuses to join. Change it when the entry's output changes.
  std::string version;
};

/// A model: a LibTorch module factory with its optimizer.
struct model_def {
  std::string name; ///< `trainer.model`
  size_t min_args = 0;
  size_t max_args = 0;
  std::string usage;
  /// On the head and in a local run, once the data is resolved:
  /// spec.model holds the image shape and class count. Unset: anything fits.
  std::function<caf::error(const entry_spec& entry, const trainer_spec& spec)>
    check;
  /// Builds the module on the trainer, before it is moved to its device:
  /// forward takes [N, C, H, W] float32 images and returns [N, classes]
  /// logits (trained with cross-entropy). Exceptions become the trainer's
  /// error.
  std::function<torch::nn::AnyModule(const entry_spec& entry,
                                     const trainer_spec& spec)>
    make;
  /// Its optimizer. Unset: trainer.optimizer with trainer.lr, momentum and
  /// weight-decay.
  std::function<std::unique_ptr<torch::optim::Optimizer>(
    std::vector<at::Tensor> parameters, const trainer_spec& spec)>
    optimizer;
  /// Which implementation this is ("2", a date, a commit): the head's
  /// pipeline records it, and a node whose entry of that name has another
  /// version refuses to join. Change it when the entry's output changes.
  std::string version;
};

/// The sources, transforms and models config files can name. Built before
/// the actor system and handed to run_node (node_main.hpp); every lookup
/// happens while a node sets up, so the registry is only read, never
/// changed, once a node runs. The built-in entries are registered the same
/// way (builtin_registry()).
class registry {
public:
  /// Adds an entry. Refuses (errc::invalid_config, naming it) an empty or
  /// taken name, one with other characters than letters, digits, '-', '_'
  /// and '.', a min_args above max_args, or a missing function (a
  /// transform's `apply`, a source's `resolve` and `open`, a model's
  /// `make`).
  caf::error add(source_def def);
  caf::error add(transform_def def);
  caf::error add(model_def def);

  /// The entry of that name, or null; valid until the next add().
  const source_def* source(std::string_view name) const;
  const transform_def* transform(std::string_view name) const;
  const model_def* model(std::string_view name) const;

  /// The names, in registration order: "a, b or c".
  std::string source_names() const;
  std::string transform_names() const;
  std::string model_names() const;

  /// Checks that `entry` names a registered entry and has an argument
  /// count it takes. Errors (errc::invalid_config) start with `key`.
  caf::error check_source(const entry_spec& entry) const;
  caf::error check_transform(const entry_spec& entry,
                             std::string_view key) const;
  caf::error check_model(const entry_spec& entry) const;

private:
  std::vector<source_def> sources_;
  std::vector<transform_def> transforms_;
  std::vector<model_def> models_;
};

/// A registry holding Stoker's own entries: the sources synthetic, idx,
/// image-folder and tar-shards; the transforms decode, resize, center-crop,
/// random-resized-crop, random-crop, horizontal-flip, trivial-augment-wide,
/// rand-augment, auto-augment, color-jitter, random-rotation, grayscale,
/// random-erasing, to-tensor, normalize and gaussian-blur, and the Python
/// stages python, python-pil and python-batch; the models vit and cnn.
/// Add yours to the copy this returns.
registry builtin_registry();

/// Records in each entry `pipeline` uses (source, both chains, model) the
/// version `reg` has for it: the head does this before it sends the
/// pipeline to its nodes. Entries `reg` lacks are left as they are.
void stamp_versions(pipeline_options& pipeline, const registry& reg);

/// The check a node makes when the head's pipeline reaches it: every
/// source, transform and model the pipeline names must be in `reg`, with
/// the version the head recorded. Otherwise errc::invalid_config names the
/// entry, where the pipeline uses it, and what this node has instead (it
/// runs another build than the head's).
caf::error check_pipeline_names(const registry& reg,
                                const pipeline_options& pipeline);

/// An error in an entry's arguments, in the form every transform uses:
/// `pipeline.transforms: "ENTRY": WHAT`.
caf::error transform_error(const entry_spec& entry, const std::string& what);

} // namespace stoker
