// The stoker Python package's native part (_stoker): a Stoker run inside
// the Python process whose trainer is the Python loop. A thin layer over
// the embedding API (stoker/embed.hpp), which stoker-node's roles share;
// the Python side (stoker/__init__.py) turns it into DataLoader and
// Trainer. Only Stoker's public headers are included here.
//
// Threads: the run has a thread of its own (the actor system's, which
// also runs every worker and the trainer as C++ threads) that never takes
// the GIL. The loop's thread calls next(), which waits with the GIL
// released, and gets each batch as a tensor over the buffer the worker (or
// the batch stream) filled: torch::from_blob with a deleter that gives the
// buffer back to the run's pool (no copy anywhere).

#include <torch/extension.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "stoker/embed.hpp"
#include "stoker/errors.hpp"
#include "stoker/log.hpp"
#include "stoker/registry.hpp"

namespace py = pybind11;
using namespace stoker;

namespace {

// A buffer the loop holds as a tensor; back to the run when freed.
struct held_buffer {
  std::vector<char> data;
  std::function<void(std::vector<char>&&)> home;
  ~held_buffer() {
    if (home)
      home(std::move(data));
  }
};

/// Where a batch came from (stoker.BatchInfo): made per batch, its lists
/// only when asked for (64-element lists per batch would cost the loop
/// more than the rest of next() together).
struct batch_meta {
  uint64_t epoch = 0;
  uint64_t batch_id = 0;
  std::string part;
  std::vector<uint64_t> sample_ids;
  std::vector<uint64_t> checksums;
};

/// The loop's events (the package's _run turns them into iteration):
/// a batch to train on or evaluate (BatchEvent: images, labels, info, a
/// struct sequence as os.stat_result is: a typed object that costs the
/// loop what a tuple does, where a pybind11 class cost it microseconds a
/// batch in type lookups, an instance registry and a dispatched call per
/// field: perf's samples of the loop thread, issue 46),
/// the end of a phase, the run's end.
py::object make_batch_event_type() {
  PyStructSequence_Field fields[] = {
    {"images", "float32 (batch, channels, height, width), over the "
               "worker's buffer"},
    {"labels", "int64 (batch,), or float32 (batch, classes): a per-batch "
               "stage's soft labels"},
    {"info", "its BatchInfo"},
    {nullptr, nullptr}};
  PyStructSequence_Desc desc{"stoker._stoker.BatchEvent",
                             "A batch for the loop: images, labels and its "
                             "BatchInfo",
                             fields, 3};
  auto* type = PyStructSequence_NewType(&desc);
  if (!type)
    throw py::error_already_set();
  return py::reinterpret_steal<py::object>(reinterpret_cast<PyObject*>(type));
}

struct phase_end_event {
  uint64_t epoch = 0;
  std::string part; // "train" or "test"
};

struct run_ended_event {
  std::optional<std::string> error; // None: the run ended as it should
};

std::chrono::milliseconds millis(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

/// A run's lines on their way to Python's logging: the node's sink puts
/// them here from any thread; the package's pump thread takes them (take,
/// the GIL released while it waits) and hands them to the logger
/// "stoker". Closed when the run's actor system is down or its session
/// is gone; lines past max_lines waiting are counted, not kept (a pump
/// that stopped must not grow the process without bound).
class line_queue {
public:
  static constexpr size_t max_lines = 10000;

  /// Python's logging level of `level` (logging.DEBUG ... logging.ERROR).
  static int python_level(log_level level) {
    switch (level) {
      case log_level::debug:
        return 10;
      case log_level::info:
        return 20;
      case log_level::warning:
        return 30;
      case log_level::error:
        break;
    }
    return 40;
  }

  void put(log_level level, std::string_view text) {
    std::lock_guard<std::mutex> guard{mutex_};
    if (lines_.size() >= max_lines) {
      ++dropped_;
      return;
    }
    lines_.emplace_back(python_level(level), std::string{text});
    ready_.notify_one();
  }

  void close() {
    std::lock_guard<std::mutex> guard{mutex_};
    closed_ = true;
    ready_.notify_all();
  }

  /// The lines waiting, after up to `timeout_ms` for one (GIL released),
  /// and whether more may come: ([(level, text), ...], open).
  py::tuple take(int64_t timeout_ms) {
    std::deque<std::pair<int, std::string>> lines;
    bool open = true;
    {
      py::gil_scoped_release unlocked;
      std::unique_lock<std::mutex> guard{mutex_};
      ready_.wait_for(guard, std::chrono::milliseconds(timeout_ms),
                      [this] { return !lines_.empty() || closed_; });
      lines.swap(lines_);
      if (dropped_ > 0) {
        lines.emplace_back(
          python_level(log_level::warning),
          "stoker: " + std::to_string(dropped_)
            + " line(s) left out: the logging thread fell "
            + std::to_string(max_lines) + " lines behind");
        dropped_ = 0;
      }
      open = !closed_;
    }
    py::list out;
    for (auto& [level, text] : lines)
      out.append(py::make_tuple(level, text));
    return py::make_tuple(out, open);
  }

private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::pair<int, std::string>> lines_;
  uint64_t dropped_ = 0;
  bool closed_ = false;
};

/// A run whose trainer is this process's Python loop (embedded_run), as
/// the package's DataLoader and Trainer use it: events as tuples, batches
/// as tensors, every wait with the GIL released, the run's lines queued
/// for the logger "stoker". Made on the loop's thread.
class session {
public:
  /// Loads the config from node flags (what stoker-node takes); throws
  /// std::invalid_argument (ValueError) with the node's message.
  explicit session(std::vector<std::string> args) {
    embed_options options;
    options.args = std::move(args);
    options.log = [lines = lines_](const log_record& r) {
      lines->put(r.level, r.text);
    };
    options.on_down = [lines = lines_] { lines->close(); };
    auto opened = embedded_run::open(std::move(options), builtin_registry());
    if (!opened)
      throw std::invalid_argument(describe(opened.error()));
    if (*opened == nullptr)
      throw std::invalid_argument(
        "--help, --long-help and --dump-config print and exit; expected "
        "a run's settings");
    run_ = std::move(*opened);
  }

  ~session() { lines_->close(); }

  bool local() const noexcept { return run_->role() == role_kind::local; }

  /// Starts the run; `state`: a cursor from an earlier loader's cursor()
  /// to go on from (throws std::invalid_argument if it is not one), taken
  /// at rank `rank` of a group of `world`.
  void start(std::optional<std::string> state, uint32_t rank,
             uint32_t world) {
    if (auto err = run_->start(std::move(state), rank, world))
      throw std::invalid_argument(describe(err));
  }

  /// The next event, waiting up to `timeout_ms` with the GIL released,
  /// after releasing the batch the loop holds if `release_first` (one
  /// call per batch): a BatchEvent (of `batch_event_type`), PhaseEnd or
  /// RunEnded; None on a timeout (the caller checks for Ctrl-C and asks
  /// again).
  py::object next(int64_t timeout_ms, bool release_first,
                  const py::object& batch_event_type) {
    // One that is there already is taken without giving up the GIL (a
    // release and a take cost the loop more than the rest of this call).
    auto e = run_->next(std::chrono::milliseconds(0), release_first);
    if (!e) {
      py::gil_scoped_release unlocked;
      e = run_->next(std::chrono::milliseconds(timeout_ms));
    }
    if (!e)
      return py::none();
    switch (e->kind) {
      case loop_event::kind_type::phase_end:
        return py::cast(phase_end_event{
          e->epoch, e->part == split::train ? "train" : "test"});
      case loop_event::kind_type::finished: {
        run_ended_event ended;
        if (e->error)
          ended.error = describe(e->error);
        return py::cast(std::move(ended));
      }
      case loop_event::kind_type::batch:
        break;
    }
    auto& b = e->batch;
    if (b.type != dtype::float32 || b.order != layout::chw)
      throw std::runtime_error("a batch came as " + to_string(b.type) + " "
                               + to_string(b.order)
                               + "; expected float32 CHW (decoded)");
    auto n = static_cast<int64_t>(b.size());
    auto holder = std::make_shared<held_buffer>();
    holder->data = std::move(b.data);
    holder->home = std::move(e->buffer_home);
    auto images = torch::from_blob(
      holder->data.data(),
      {n, static_cast<int64_t>(b.channels), static_cast<int64_t>(b.height),
       static_cast<int64_t>(b.width)},
      [holder](void*) mutable { holder.reset(); },
      torch::TensorOptions().dtype(torch::kFloat32));
    torch::Tensor labels;
    if (b.soft_labels.empty()) {
      auto held = std::make_shared<std::vector<int64_t>>(std::move(b.labels));
      labels = torch::from_blob(
        held->data(), {static_cast<int64_t>(held->size())},
        [held](void*) mutable { held.reset(); },
        torch::TensorOptions().dtype(torch::kInt64));
    } else { // a per-batch stage's soft labels: (batch, classes) float32
      auto held = std::make_shared<std::vector<float>>(
        std::move(b.soft_labels));
      labels = torch::from_blob(
        held->data(), {n, static_cast<int64_t>(b.label_classes)},
        [held](void*) mutable { held.reset(); },
        torch::TensorOptions().dtype(torch::kFloat32));
    }
    auto meta = std::make_unique<batch_meta>();
    meta->epoch = b.epoch;
    meta->batch_id = b.batch_id;
    meta->part = b.part == split::train ? "train" : "test";
    meta->sample_ids = std::move(b.sample_ids);
    meta->checksums = std::move(b.checksums);
    auto event = py::reinterpret_steal<py::object>(PyStructSequence_New(
      reinterpret_cast<PyTypeObject*>(batch_event_type.ptr())));
    if (!event)
      throw py::error_already_set();
    // SetItem steals each reference.
    PyStructSequence_SetItem(event.ptr(), 0, py::cast(images).release().ptr());
    PyStructSequence_SetItem(event.ptr(), 1, py::cast(labels).release().ptr());
    PyStructSequence_SetItem(event.ptr(), 2,
                             py::cast(std::move(meta)).release().ptr());
    return event;
  }

  void release() { run_->release(); }

  /// The cursor (a checkpoint's bytes) of every batch taken so far; None
  /// before the trainer started.
  py::object cursor() const {
    auto c = run_->cursor();
    if (!c)
      return py::none();
    return py::bytes(*c);
  }

  /// The loop leaves (embedded_run::close).
  void close(const std::string& reason, bool stopped) {
    run_->close(reason, stopped);
  }

  /// The group (rank, world, node, interface, generation, store: a c10d
  /// Store for torch.distributed or None, and the run's
  /// trainer.collective-timeout in seconds), waiting up to `seconds` with
  /// the GIL released; None if it did not form in time or the run ended.
  py::object group(double seconds) {
    std::optional<loop_group> g;
    {
      py::gil_scoped_release unlocked;
      g = run_->group(millis(seconds));
    }
    if (!g)
      return py::none();
    py::object store = py::none();
    if (g->store)
      store = py::cast(g->store);
    return py::make_tuple(
      g->rank, g->world, g->node, g->interface, g->generation, store,
      static_cast<double>(g->collective_timeout.count()) / 1000.0);
  }

  /// Waits up to `seconds` for the run's thread (GIL released); true when
  /// it has ended.
  bool join(double seconds) {
    py::gil_scoped_release unlocked;
    return run_->join(millis(seconds));
  }

  /// The run report as JSON (empty until the run ended with one).
  std::string report_json() const {
    auto r = run_->report();
    return r ? to_json(*r) : std::string{};
  }

  /// The run's shape: this config's for a local run; a member's once the
  /// head sent its pipeline (empty before).
  py::dict shape() const {
    auto s = run_->shape();
    py::dict d;
    if (s.epochs == 0)
      return d; // the head has not sent its pipeline yet
    d["epochs"] = s.epochs;
    d["batch_size"] = s.batch_size;
    d["dataset_size"] = s.dataset_size;
    d["eval_batches"] = s.eval_batches;
    return d;
  }

  uint64_t steps_per_epoch(uint32_t world) const {
    return run_->steps_per_epoch(world);
  }

  uint64_t bytes_copied() const noexcept { return run_->bytes_copied(); }

  bool ended() const noexcept { return run_->ended(); }

  /// Where the run's lines wait for Python's logging.
  std::shared_ptr<line_queue> lines() const { return lines_; }

private:
  std::shared_ptr<line_queue> lines_ = std::make_shared<line_queue>();
  std::shared_ptr<embedded_run> run_;
};

// Stoker's checksum of each image of a contiguous float32 (N, ...)
// tensor: what the worker stamped on it, recomputed here.
std::vector<uint64_t> image_checksums(const torch::Tensor& images) {
  if (images.scalar_type() != torch::kFloat32 || !images.is_contiguous()
      || images.dim() < 1)
    throw std::invalid_argument("image_checksums: expected a contiguous "
                                "float32 tensor of images (N, ...)");
  std::vector<uint64_t> out;
  auto n = images.size(0);
  if (n == 0)
    return out;
  auto bytes = static_cast<size_t>(images.numel() / n) * sizeof(float);
  auto* at = static_cast<const char*>(images.data_ptr());
  for (int64_t i = 0; i < n; ++i)
    out.push_back(sample_checksum(at + static_cast<size_t>(i) * bytes, bytes));
  return out;
}

} // namespace


PYBIND11_MODULE(_stoker, m) {
  m.doc() = "Stoker's native part: a run whose trainer is this process's "
            "Python loop (use the stoker package, not this module)";
  m.attr("__version__") = STOKER_VERSION;
  py::class_<batch_meta>(m, "BatchInfo",
                         "Where the batch a loop got last came from: its "
                         "epoch, its batch id (unique over the run), its "
                         "sample ids and one Stoker checksum per image as "
                         "the worker stamped it")
    .def_readonly("epoch", &batch_meta::epoch)
    .def_readonly("batch_id", &batch_meta::batch_id)
    .def_readonly("part", &batch_meta::part)
    .def_readonly("sample_ids", &batch_meta::sample_ids)
    .def_readonly("checksums", &batch_meta::checksums)
    .def("__repr__", [](const batch_meta& meta) {
      return "BatchInfo(epoch=" + std::to_string(meta.epoch) + ", batch_id="
             + std::to_string(meta.batch_id) + ", "
             + std::to_string(meta.sample_ids.size()) + " samples)";
    });
  auto batch_event_type = make_batch_event_type();
  m.attr("BatchEvent") = batch_event_type;
  py::class_<phase_end_event>(m, "PhaseEnd",
                              "The phase (epoch, part) has no more batches")
    .def_readonly("epoch", &phase_end_event::epoch)
    .def_readonly("part", &phase_end_event::part);
  py::class_<run_ended_event>(m, "RunEnded",
                              "The run ended; error: why it failed, or None")
    .def_readonly("error", &run_ended_event::error);
  py::class_<line_queue, std::shared_ptr<line_queue>>(
    m, "LineQueue",
    "A run's lines on their way to the logger 'stoker' (the package's "
    "pump thread takes them)")
    .def("take", &line_queue::take, py::arg("timeout_ms"));
  py::class_<session, std::shared_ptr<session>>(m, "Session")
    .def(py::init<std::vector<std::string>>(), py::arg("args"))
    .def("start", &session::start, py::arg("state") = py::none(),
         py::arg("rank") = 0, py::arg("world") = 1)
    .def("next",
         [batch_event_type](session& s, int64_t timeout_ms,
                            bool release_first) {
           return s.next(timeout_ms, release_first, batch_event_type);
         },
         py::arg("timeout_ms"), py::arg("release_first") = false)
    .def("release", &session::release)
    .def("cursor", &session::cursor)
    .def("close", &session::close, py::arg("reason"),
         py::arg("stopped") = false)
    .def("join", &session::join, py::arg("seconds"))
    .def("report_json", &session::report_json)
    .def("group", &session::group, py::arg("seconds"))
    .def("shape", &session::shape)
    .def("steps_per_epoch", &session::steps_per_epoch, py::arg("world"))
    .def_property_readonly("local", &session::local)
    .def_property_readonly("bytes_copied", &session::bytes_copied)
    .def_property_readonly("ended", &session::ended)
    .def("lines", &session::lines);
  m.def("image_checksums", &image_checksums, py::arg("images"),
        "Stoker's checksum of each image of a float32 (N, ...) tensor");
}
