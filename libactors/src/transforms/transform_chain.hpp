#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include <caf/expected.hpp>
#include <opencv2/core.hpp>

#include "stoker/log.hpp"
#include "stoker/node_options.hpp"
#include "stoker/registry.hpp"
#include "kernels/image_ops.hpp"

namespace stoker {

class python_stage_pool;

/// Checks a chain against `reg` (known names and argument counts, each
/// transform's own checks, a decoding transform first when the source
/// gives files, a fixed output size) and returns the shape that comes out
/// of it for inputs of `input`. Errors name the entry and what was
/// expected.
caf::expected<image_shape> check_chain(const std::vector<transform_spec>& chain,
                                       image_shape input, bool files,
                                       const registry& reg);

/// The evaluation chain derived from a training chain: each entry's `eval`
/// form (flips and blurs dropped, random-crop(S, P) becomes center-crop(S),
/// random-resized-crop(S, ...) becomes resize(S) then center-crop(S)).
/// Names `reg` lacks are kept as they are (check_chain refuses them).
std::vector<transform_spec>
eval_chain_of(const std::vector<transform_spec>& train, const registry& reg);

/// What a chain cost one worker thread: files decoded, the time inside
/// the decoder, and the pixels it made against the files' full size (the
/// fused start decodes a JPEG only where its crop lies, at M/8); and each
/// stage's samples and time (the fused start as one stage, named by its
/// entries joined with " + "). The caller owns it and sums it; never
/// shared between threads.
struct chain_tally {
  uint64_t files = 0;
  uint64_t ns = 0;
  uint64_t decoded_pixels = 0;
  uint64_t file_pixels = 0;
  std::vector<stage_time> stages;
};

/// What a chain's python(MODULE:CALLABLE) entries run on (python_stage.hpp):
/// the node's python settings and how many processes each may have (one
/// per worker thread of the node); `log`, where each entry's first
/// exception's whole traceback goes (a warning, once; the report counts
/// them all). Null: not logged.
struct python_binding {
  python_spec spec;
  size_t processes = 1;
  std::shared_ptr<const log_sink> log;
};

/// One sample of a batch for transform_chain::apply_many(): its input and
/// key in, apply()'s result out. A job whose result is an error when it
/// goes in (a file that could not be read) is left as it is.
struct chain_job {
  sample_input input;
  draw_key key;
  caf::expected<cv::Mat> result{cv::Mat{}};
};

/// A checked chain bound to its transforms' definitions (copies: it does
/// not refer to the registry), so a worker looks nothing up per sample.
/// Immutable: one chain serves every worker thread of a node at once.
class transform_chain {
public:
  transform_chain() = default;

  /// Binds `chain`; an entry `reg` lacks is errc::invalid_config, named.
  /// `decode_region` (pipeline.decode-region): a chain that starts with
  /// decode then random-resized-crop, or decode, resize(S) and
  /// center-crop, runs those entries fused on a JPEG (fused_entries()).
  /// `python`: each python(...) entry gets a pool of processes, the first
  /// started now, so a module that does not import is refused here
  /// (errc::invalid_config naming python.path); without it such an entry
  /// fails every sample. The pools end with the last copy of the chain.
  static caf::expected<transform_chain>
  bind(const std::vector<transform_spec>& chain, const registry& reg,
       bool decode_region = true, const python_binding* python = nullptr);

  /// Runs the chain on one sample on the calling thread and returns HWC
  /// float32 pixels. Entry k draws from the generator of (key, stage
  /// transforms + k). A transform's error (a file that does not decode:
  /// errc::io_failure) comes back as it is. The fused start takes a JPEG
  /// libjpeg decodes as stored (1 or 3 components, no EXIF turn): the same
  /// crop box from the same generator, only the rows and columns it needs
  /// decoded at the largest M/8 that keeps it three times the output size,
  /// resampled straight to float (kernels/jpeg_region.hpp); other files
  /// run the entries one by one. `tally`, when given, counts the decode step
  /// and times each stage.
  caf::expected<cv::Mat> apply(sample_input input, const draw_key& key,
                               chain_tally* tally = nullptr) const;

  /// As apply(), but where the fused start is the whole chain and takes
  /// this file, its pass writes the image straight into `chw` (float32
  /// planes of the chain's output shape, the caller's memory: a batch's)
  /// and returns an empty Mat; otherwise the HWC image, `chw` untouched.
  caf::expected<cv::Mat> apply_planes(sample_input input, const draw_key& key,
                                      float* chw,
                                      chain_tally* tally = nullptr) const;

  /// apply() on every job, the same results bit for bit, but each bound
  /// Python entry called once for all the jobs that reach it (one
  /// exchange with a stage process a batch, not one a sample): the jobs
  /// run entry by entry up to it, then on. On the calling thread.
  void apply_many(std::vector<chain_job>& jobs,
                  chain_tally* tally = nullptr) const;

  /// Whether a Python entry is bound (apply_many() then saves crossings).
  bool has_python_stage() const noexcept { return !python_.empty(); }

  /// Runs the chain's per-batch entry (python-batch(...), bound with a
  /// node's python settings) on `batch`, float32 CHW images of samples
  /// that came out of apply_planes(): the images are replaced, the labels
  /// too if the function changed them, and soft labels (`classes` wide)
  /// set if it returned them; the checksums are cleared (the worker stamps
  /// them again). Its generator is the batch's first sample's (`seed`,
  /// its epoch) at the entry's place, so any worker, and a hedged copy,
  /// draws the same. errc::transform_failure naming the entry and the
  /// function's error: the batch is left as it was. Nothing to do without
  /// such an entry or samples. `tally` times it as a stage.
  caf::error apply_batch(image_batch& batch, uint64_t seed, uint32_t classes,
                         chain_tally* tally = nullptr) const;

  /// Whether the chain ends with a per-batch entry.
  bool has_batch_entry() const noexcept { return !batch_entry_.name.empty(); }

  bool empty() const noexcept { return specs_.empty(); }

  /// How many entries at the start run fused on a JPEG: decode and the
  /// crop (2 or 3), then horizontal-flip, to-tensor and normalize where
  /// they come next, in the resampling pass; 0: none.
  size_t fused_entries() const noexcept { return fused_; }

private:
  // Entry k (a python(...) entry) gets a pool of processes; its first
  // started now.
  caf::error bind_python(size_t k, const python_binding& python);

  // The fused start on `input`: true when it ran (the pixels are set),
  // false for a file it does not take.
  caf::expected<bool> apply_fused(sample_input& input, const draw_key& key,
                                  chain_tally* tally, float* chw) const;

  // The start of apply_planes(): the fused entries or the decode, timed.
  // The entry to go on from, or specs_.size() where the planes are
  // written into `chw` already.
  caf::expected<size_t> apply_start(sample_input& input, const draw_key& key,
                                    float* chw, chain_tally* tally) const;

  // Entries [k, end) of the chain on one sample, each timed.
  caf::error apply_entries(sample_input& input, const draw_key& key,
                           size_t k, size_t end, chain_tally* tally) const;

  // A bound Python entry: its place, its processes, its first traceback
  // logged yet.
  struct python_entry {
    size_t index = 0;
    std::shared_ptr<python_stage_pool> pool;
    std::shared_ptr<std::atomic<bool>> told;
  };
  std::vector<python_entry> python_; // by index, ascending

  // A bound python(...) or python-pil(...) entry on the jobs that reach it
  // (`live`: their indices), in one call of its pool a group.
  void apply_python(const python_entry& entry, std::vector<chain_job>& jobs,
                    const std::vector<size_t>& live,
                    chain_tally* tally) const;

  // The per-batch entry taken off the end of the chain (python-batch), its
  // place in the chain (its generator's), and its processes.
  transform_spec batch_entry_;
  size_t batch_index_ = 0;
  std::shared_ptr<python_stage_pool> batch_pool_;
  std::shared_ptr<std::atomic<bool>> batch_told_; // its first traceback
  std::shared_ptr<const log_sink> log_;

  std::vector<transform_spec> specs_;
  std::vector<transform_def> defs_;
  std::string fused_name_; // the fused start's stage: its entries' texts
  size_t fused_ = 0;
  size_t crop_entries_ = 0;  // decode and the crop: 2 or 3
  size_t flip_entry_ = 0;    // 0: no flip in the fused start
  size_t normalize_entry_ = 0; // 0: none
};

/// The source a sample skipped for a transform's failure (errc::
/// transform_failure) is counted under in the run's skips: "transform " and
/// the entry its message starts with ("transform python(my_aug:boom)").
std::string transform_failure_source(const std::string& message);

/// Whether a skipped sample's source is a transform's (as made above),
/// not a file's or a shard's: what pipeline.max-failed-share counts.
bool is_transform_failure_source(const std::string& source) noexcept;

/// The entry such a source names ("python(my_aug:boom)").
std::string failed_transform_of(const std::string& source);

/// Binds and runs `chain` once: for tools and tests (a worker binds once).
caf::expected<cv::Mat> apply_chain(const std::vector<transform_spec>& chain,
                                   sample_input input, const draw_key& key,
                                   const registry& reg,
                                   bool decode_region = true);

} // namespace stoker
