#pragma once

// A Python stage of the transform chain (`python(module:callable)`): the
// user's function runs in child processes, each an interpreter of its own
// (never the training loop's process, never its GIL), one call at a time
// each, so W worker threads run W calls at once. Why child processes and
// not an interpreter embedded in the node: a node runs one interpreter
// at most (one GIL for all its workers), and a function that crashes
// (a segfault, os._exit) takes only its own process down.
//
// The pixels cross through a shared-memory file both processes map
// (memfd): the worker writes the sample once, the function sees a tensor
// view of it (CHW over the HWC bytes: torchvision's layout), and its
// result is copied once into the same memory for the worker to take.

#include <chrono>
#include <cstdint>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <caf/expected.hpp>
#include <opencv2/core.hpp>

namespace stoker {

/// What a Python stage runs and where.
struct python_stage_options {
  /// "module:callable" (a dotted attribute path after the colon).
  std::string ref;
  /// The chain's entry, as messages name it: "python(REF)" when empty,
  /// or "python-batch(REF)", "python-pil(REF)".
  std::string entry;
  /// The function takes and returns a PIL image (python-pil(...)): 8-bit
  /// pixels of 1, 3 or 4 channels (modes L, RGB, RGBA) in, the same mode
  /// and size out. Otherwise a torch tensor (CHW).
  bool pil = false;
  /// Float32 images come as [0, 1] floats that stand for bytes (a fused
  /// pass's, where the unfused chain has 8-bit pixels): they cross as
  /// uint8 (x 255, rounded), converted straight into the shared memory,
  /// and come back 8-bit.
  bool bytes_from_floats = false;
  /// The interpreter (python.executable): one with torch, as the function
  /// needs.
  std::string executable = "/usr/bin/python3";
  /// Directories put first on the interpreter's sys.path (python.path).
  std::vector<std::string> path;
  /// How long the interpreter may take to start and import `ref`.
  std::chrono::milliseconds import_timeout{120'000};
  /// How long one call may take before its process is killed.
  std::chrono::milliseconds call_timeout{60'000};

  std::string entry_text() const {
    return entry.empty() ? "python(" + ref + ")" : entry;
  }
};

/// A whole batch for a per-batch stage (python-batch(...)): the caller's
/// memory, which the call overwrites with the function's result.
struct batch_view {
  float* images = nullptr; ///< n x c x h x w float32 (CHW per image)
  int64_t* labels = nullptr; ///< n; overwritten when the result is hard
  size_t n = 0;
  size_t c = 0;
  size_t h = 0;
  size_t w = 0;
  /// The width of soft labels the function may return (the dataset's
  /// classes).
  uint32_t classes = 0;

  size_t images_count() const noexcept { return n * c * h * w; }
};

/// One interpreter process running a Python stage's function. Not shared:
/// one thread calls it at a time (python_stage_pool hands them out). The
/// destructor ends the process (its socket closed, then SIGKILL after a
/// moment) and reaps it.
class python_stage_process {
public:
  /// Starts the interpreter and waits until it has imported `options.ref`.
  /// errc::invalid_config names the reference, the module's error and
  /// python.path when the module or the callable is not there;
  /// errc::io_failure when the interpreter cannot start.
  static caf::expected<std::unique_ptr<python_stage_process>>
  start(const python_stage_options& options);

  ~python_stage_process();
  python_stage_process(const python_stage_process&) = delete;
  python_stage_process& operator=(const python_stage_process&) = delete;

  /// The function applied to `image` (HWC, CV_8U or CV_32F, 1 to 4
  /// channels; any layout in memory) with torch's, random's and numpy's
  /// generators seeded with `seed` first. The result must be a tensor of
  /// the input's dtype and CHW shape (options.pil: a PIL image of its
  /// mode and size, from CV_8U of 1, 3 or 4 channels); it comes back as a
  /// new HWC Mat.
  /// Errors: errc::io_failure naming the exception (its type and message;
  /// `traceback` gets Python's traceback), a result of the wrong kind, or
  /// the process's end (then alive() is false).
  caf::expected<cv::Mat> call(const cv::Mat& image, uint64_t seed,
                              std::string* traceback = nullptr);

  /// call() on each of `images` with its seed (`seeds`, as many), in one
  /// exchange with the process: a worker's batch crosses once, not once a
  /// sample (waking a process on another core cost 100-300 us on this
  /// project's VMs). Each result is call()'s for that image (`tracebacks`,
  /// when given, gets one per image, empty where none). The outer error:
  /// the process ended, or one sample ran past call_timeout.
  caf::expected<std::vector<caf::expected<cv::Mat>>>
  call_many(const std::vector<cv::Mat>& images,
            const std::vector<uint64_t>& seeds,
            std::vector<std::string>* tracebacks = nullptr);

  /// The per-batch function applied to `batch` (images float32 NCHW and
  /// int64 labels, seeded with `seed` as call() is), which returns the
  /// pair (images, labels): the images overwrite `batch.images`; hard
  /// labels (int64, n) overwrite `batch.labels` and an empty vector comes
  /// back; soft ones (float32, n x classes) come back, row by row. Errors
  /// as call()'s, a result of the wrong kind named against what was
  /// expected.
  caf::expected<std::vector<float>> call_batch(const batch_view& batch,
                                               uint64_t seed,
                                               std::string* traceback
                                               = nullptr);

  /// Whether the process still answers (false once it died or timed out).
  bool alive() const noexcept { return alive_; }

  /// Whether a call ran past options.call_timeout (the process is then
  /// not alive either, and is killed when destroyed).
  bool timed_out() const noexcept { return timed_out_; }

  /// The process's id (for messages and tests).
  int pid() const noexcept { return pid_; }

  struct private_tag {};
  python_stage_process(private_tag, python_stage_options options, int pid,
                       int socket, int memory);

private:
  struct reply_words {
    uint64_t a = 0, b = 0, c = 0;
    std::string text;
  };
  // Sends a request's head (its data is in the memory already) and reads
  // the reply: its three words and text, or the error it names. The
  // deadline: call_timeout, from the last change of `*progress` (in the
  // memory: the samples done) where given.
  caf::expected<reply_words> exchange(const uint64_t (&head)[10],
                                      const char* what,
                                      std::string* traceback,
                                      const uint64_t* progress = nullptr);
  // The error of a call that failed with `status` and `text` (its first
  // line, then the traceback).
  caf::error call_error(uint64_t status, const std::string& text,
                        std::string* traceback) const;
  caf::error grow(size_t bytes);
  caf::error died(const std::string& while_doing);

  python_stage_options options_;
  int pid_ = -1;
  int socket_ = -1;
  int memory_ = -1;
  size_t mapped_ = 0;
  unsigned char* map_ = nullptr;
  bool alive_ = true;
  bool timed_out_ = false;
};

/// A node's processes for one Python stage, shared by its worker threads:
/// each call takes an idle process (starting one when none is idle, up to
/// `max_processes`, else waiting for one), so W threads run W calls at
/// once. A process that died inside the function is replaced and the call
/// tried once more on the new one; a second death fails the sample, named.
class python_stage_pool {
public:
  python_stage_pool(python_stage_options options, size_t max_processes);

  /// Starts every process now (max_processes, at once) and keeps them
  /// idle: the import's error (a module or callable that is not there)
  /// before any sample, and no interpreter starting mid-run.
  caf::error prime();

  /// python_stage_process::call on an idle process. Thread-safe.
  caf::expected<cv::Mat> call(const cv::Mat& image, uint64_t seed,
                              std::string* traceback = nullptr);

  /// python_stage_process::call_many on an idle process. Thread-safe.
  caf::expected<std::vector<caf::expected<cv::Mat>>>
  call_many(const std::vector<cv::Mat>& images,
            const std::vector<uint64_t>& seeds,
            std::vector<std::string>* tracebacks = nullptr);

  /// python_stage_process::call_batch on an idle process. Thread-safe.
  /// `batch` is left as it was if the first process dies in the call.
  caf::expected<std::vector<float>> call_batch(const batch_view& batch,
                                               uint64_t seed,
                                               std::string* traceback
                                               = nullptr);

  /// Processes started so far, replacements included (tests, the report).
  uint64_t started() const;

  const python_stage_options& options() const noexcept { return options_; }

private:
  // Runs `call` on an idle process (started if none is idle, up to
  // max_processes), once more on a new one if it died in the call.
  template <class Call>
  auto on_a_process(Call&& call)
    -> decltype(call(std::declval<python_stage_process&>()));

  python_stage_options options_;
  size_t max_processes_;
  mutable std::mutex mutex_;
  std::condition_variable idle_cv_;
  std::vector<std::unique_ptr<python_stage_process>> idle_;
  size_t running_ = 0; // processes alive, idle or in a call
  uint64_t started_ = 0;
};

/// The seed a Python stage's generators get for one sample: from the
/// sample's own generator (seed, epoch, sample id, position in the chain),
/// so every worker, and a hedged copy, draws the same values.
uint64_t python_stage_seed(uint32_t word0, uint32_t word1) noexcept;

} // namespace stoker
