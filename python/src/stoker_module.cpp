// The stoker Python package's native part (_stoker): a Stoker run inside
// the Python process whose trainer is the Python loop. Glue over
// run_local/member_role_main and batch_feed (libactors); the Python side
// (stoker/__init__.py) turns it into DataLoader and Trainer.
//
// Threads: the run has a thread of its own (the actor system's, which
// also runs every worker and the trainer as C++ threads) that never takes
// the GIL. The loop's thread calls next(), which waits with the GIL
// released, and gets each batch as a tensor over the buffer the worker (or
// the batch stream) filled: torch::from_blob with a deleter that gives the
// buffer back to the run's pool (no copy anywhere).

#include <torch/extension.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <caf/actor_system.hpp>

#include "stoker/errors.hpp"
#include "stoker/log.hpp"
#include "stoker/node_main.hpp"
#include "config/run_config.hpp"
#include "core/checksum.hpp"
#include "core/run_report.hpp"
#include "data/epoch_plan.hpp"
#include "node/local_role.hpp"
#include "node/node_config.hpp"
#include "node/node_links.hpp"
#include "node/roles.hpp"
#include "node/run_outcome.hpp"
#include "train/batch_feed.hpp"
#include "train/checkpoint.hpp"
#include "train/group_store.hpp"
#include "train/trainer_actor.hpp"

namespace py = pybind11;
using namespace stoker;

namespace {

// A buffer the loop holds as a tensor; back to its pool when freed.
struct pooled_buffer {
  std::vector<char> data;
  std::shared_ptr<buffer_pool> pool;
  ~pooled_buffer() {
    if (pool)
      pool->release(std::move(data));
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

/// One Stoker run whose trainer is this process's Python loop: the whole
/// pipeline here (role local: stoker.DataLoader), or a trainer node that
/// joins a head (role trainer: stoker.Trainer). Made on the loop's thread;
/// start() gives the run its own thread; next(), release() and cursor()
/// are the loop's (one thread); close() and join() any.
class session : public std::enable_shared_from_this<session> {
public:
  /// Loads the config from node flags (what stoker-node takes); throws
  /// std::invalid_argument (ValueError) with the node's message.
  explicit session(std::vector<std::string> args)
    : registry_(builtin_registry()) {
    auto loaded = node_config_.load(args, registry_);
    if (!loaded)
      throw std::invalid_argument(describe(loaded.error()));
    if (!*loaded)
      throw std::invalid_argument(
        "--help, --long-help and --dump-config print and exit; expected "
        "a run's settings");
    cfg_ = **loaded;
    // Every line of the run goes to Python's logging (logger "stoker"),
    // none to the process's standard streams.
    node_config_.log = std::make_shared<const log_sink>(
      log_origin{cfg_.node.name, to_string(cfg_.node.role)},
      cfg_.node.log.level, [lines = lines_](const log_record& r) {
        lines->put(r.level, r.text);
      });
    if (cfg_.node.role != role_kind::local
        && cfg_.node.role != role_kind::trainer)
      throw std::invalid_argument(
        "node.role = \"" + to_string(cfg_.node.role)
        + "\": a Python loop is the trainer of a local run "
          "(stoker.DataLoader) or of a trainer node (stoker.Trainer); "
          "expected \"local\" or \"trainer\"");
    if (auto n = trainers_on_node(cfg_.node.trainer); n != 1)
      throw std::invalid_argument(
        "trainer.count = " + std::to_string(n)
        + ": one loader feeds one loop; expected 1 (a data-parallel group "
          "is one stoker.Trainer process per rank)");
    if (local()) {
      epoch_plan plan{cfg_.pipeline.source, 1};
      if (auto err = plan.check())
        throw std::invalid_argument(describe(err));
    }
  }

  bool local() const noexcept {
    return cfg_.node.role == role_kind::local;
  }

  /// The run's thread holds the session too (it may outlive the loop's
  /// reference: CAF's shutdown can wait on a peer that vanished), so this
  /// runs when both let go, on whichever thread let go last.
  ~session() {
    lines_->close();
    if (runner_.joinable()) {
      if (runner_.get_id() == std::this_thread::get_id())
        runner_.detach(); // the run's own thread, at its very end
      else
        runner_.join(); // it ended: it held a reference until then
    }
  }

  /// Starts the run; `state`: a cursor from an earlier loader's cursor()
  /// to go on from (throws std::invalid_argument if it is not one), taken
  /// at rank `rank` of a group of `world`.
  void start(std::optional<std::string> state, uint32_t rank,
             uint32_t world) {
    if (runner_.joinable())
      throw std::logic_error("the run has started already");
    std::shared_ptr<const checkpoint> resumed;
    if (state) {
      auto c = decode_checkpoint(*state, "the state_dict's cursor");
      if (!c)
        throw std::invalid_argument(describe(c.error()));
      if (local())
        if (auto err = check_resumable(c->run, identity_of(cfg_)))
          throw std::invalid_argument(describe(err));
      resumed = std::make_shared<const checkpoint>(std::move(*c));
    }
    hooks_.resume_from = resumed;
    hooks_.resume_rank = rank;
    hooks_.resume_world = world;
    // The feed is made with the trainer, when the run's pipeline is known
    // (a member's comes from the head).
    hooks_.make_engine = [this, resumed](const run_config& run, uint32_t,
                                         std::shared_ptr<buffer_pool> pool)
      -> caf::expected<std::unique_ptr<step_engine>> {
      auto& src = run.pipeline.source;
      auto feed = std::make_shared<batch_feed>(identity_of(run),
                                               src.dataset_size, src.epochs,
                                               resumed.get());
      {
        std::lock_guard<std::mutex> guard{mutex_};
        run_source_ = src; // a member's: the head's
        collective_timeout_ = run.pipeline.trainer.collective_timeout;
        feed_ = feed;
        if (closing_)
          feed->close(closing_error());
      }
      return make_feed_engine(std::move(feed), std::move(pool));
    };
    auto links = node_links::open(cfg_.node, node_config_.log);
    if (!links)
      throw std::invalid_argument(describe(links.error()));
    links_ = std::move(*links);
    runner_ = std::thread([self = shared_from_this()] { self->run(); });
  }

  /// The next event as a tuple, waiting up to `timeout_ms` with the GIL
  /// released, after releasing the batch the loop holds if `release_first`
  /// (one call per batch): ("batch", images, labels, BatchInfo),
  /// ("phase_end", epoch, part) or ("finished", error or None); None on a
  /// timeout (the caller checks for Ctrl-C and asks again).
  py::object next(int64_t timeout_ms, bool release_first) {
    std::optional<feed_event> e;
    auto feed = current_feed();
    if (feed && release_first) // the loop is done with the batch it holds
      feed->release();
    if (!feed) { // the trainer is not there yet (joining the head)
      if (done_) {
        std::lock_guard<std::mutex> guard{mutex_};
        return py::make_tuple("finished", failure_text_.empty()
                                            ? py::object(py::none())
                                            : py::object(py::str(
                                              failure_text_)));
      }
      py::gil_scoped_release unlocked;
      std::this_thread::sleep_for(
        std::chrono::milliseconds(std::min<int64_t>(timeout_ms, 20)));
      return py::none();
    }
    // One that is there already is taken without giving up the GIL (a
    // release and a take cost the loop more than the rest of this call).
    e = feed->next(std::chrono::milliseconds(0));
    if (!e) {
      py::gil_scoped_release unlocked;
      e = feed->next(std::chrono::milliseconds(timeout_ms));
    }
    if (!e)
      return py::none();
    const char* part = e->part == split::train ? "train" : "test";
    switch (e->kind) {
      case feed_event::kind_type::phase_end:
        return py::make_tuple("phase_end", e->epoch, part);
      case feed_event::kind_type::finished:
        if (e->error)
          return py::make_tuple("finished", describe(e->error));
        return py::make_tuple("finished", py::none());
      case feed_event::kind_type::batch:
        break;
    }
    auto& b = e->batch;
    part = b.part == split::train ? "train" : "test";
    if (b.type != dtype::float32 || b.order != layout::chw)
      throw std::runtime_error("a batch came as " + to_string(b.type) + " "
                               + to_string(b.order)
                               + "; expected float32 CHW (decoded)");
    auto n = static_cast<int64_t>(b.size());
    auto holder = std::make_shared<pooled_buffer>();
    holder->data = std::move(b.data);
    holder->pool = e->pool;
    void* images_at = holder->data.data();
    // Proof of no copy: the buffer a worker (or the batch stream) took
    // from the run's pool and filled is the one the tensor spans. One from
    // elsewhere (a copied message) is counted.
    if (!holder->data.empty()
        && (!holder->pool || !holder->pool->made(images_at)))
      bytes_copied_ += holder->data.size();
    auto images = torch::from_blob(
      images_at,
      {n, static_cast<int64_t>(b.channels), static_cast<int64_t>(b.height),
       static_cast<int64_t>(b.width)},
      [holder](void*) mutable { holder.reset(); },
      torch::TensorOptions().dtype(torch::kFloat32));
    auto labels_holder = std::make_shared<std::vector<int64_t>>(
      std::move(b.labels));
    auto labels = torch::from_blob(
      labels_holder->data(), {static_cast<int64_t>(labels_holder->size())},
      [labels_holder](void*) mutable { labels_holder.reset(); },
      torch::TensorOptions().dtype(torch::kInt64));
    auto meta = std::make_unique<batch_meta>();
    meta->epoch = b.epoch;
    meta->batch_id = b.batch_id;
    meta->part = part;
    meta->sample_ids = std::move(b.sample_ids);
    meta->checksums = std::move(b.checksums);
    return py::make_tuple("batch", images, labels, std::move(meta));
  }

  void release() {
    if (auto feed = current_feed())
      feed->release();
  }

  /// The cursor (encode_checkpoint's bytes) of every batch taken so far;
  /// None before the trainer started.
  py::object cursor() const {
    auto feed = current_feed();
    if (!feed)
      return py::none();
    return py::bytes(encode_checkpoint(feed->cursor()));
  }

  /// The loop leaves: the trainer stops with `reason`, so the run ends:
  /// `stopped` (the loop closed its loader on purpose) as stopped, with
  /// the steps the loop ended acked; else failed (unless it had ended).
  void close(const std::string& reason, bool stopped) {
    std::lock_guard<std::mutex> guard{mutex_};
    closing_ = reason;
    closing_stopped_ = stopped;
    if (feed_)
      feed_->close(closing_error());
  }

  /// The group (rank, world, node, interface, generation, store: a c10d
  /// Store for torch.distributed or None, and the run's
  /// trainer.collective-timeout in seconds), waiting up to `seconds` with
  /// the GIL released; None if it did not form in time or the run ended.
  py::object group(double seconds) {
    auto deadline = std::chrono::steady_clock::now()
                    + std::chrono::milliseconds(
                      static_cast<int64_t>(seconds * 1000));
    std::optional<batch_feed::group_info> g;
    {
      py::gil_scoped_release unlocked;
      for (;;) {
        auto feed = current_feed();
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
        if (feed) {
          g = feed->group(std::max(left, std::chrono::milliseconds(0)));
          break;
        }
        if (done_ || left.count() <= 0)
          break;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
    if (!g)
      return py::none();
    py::object store = py::none();
    if (g->store)
      store = py::cast(g->store);
    auto where = g->spec.interface.empty() ? cfg_.node.cluster.bind
                                           : g->spec.interface;
    double timeout_s = 0;
    {
      std::lock_guard<std::mutex> guard{mutex_};
      timeout_s = static_cast<double>(collective_timeout_.count()) / 1000.0;
    }
    return py::make_tuple(g->spec.rank, g->spec.world, g->spec.node, where,
                          g->spec.generation, store, timeout_s);
  }

  /// Waits up to `seconds` for the run's thread (GIL released); true when
  /// it has ended.
  bool join(double seconds) {
    py::gil_scoped_release unlocked;
    return join_for(std::chrono::milliseconds(
      static_cast<int64_t>(seconds * 1000)));
  }

  /// The run report as JSON (empty until the run ended with one).
  std::string report_json() const {
    std::lock_guard<std::mutex> guard{mutex_};
    return report_json_;
  }

  /// The run's shape: this config's for a local run; a member's once the
  /// head sent its pipeline (zeros before).
  py::dict shape() const {
    std::lock_guard<std::mutex> guard{mutex_};
    py::dict d;
    if (!local() && !feed_)
      return d; // the head has not sent its pipeline yet
    auto& src = local() ? cfg_.pipeline.source : run_source_;
    d["epochs"] = src.epochs;
    d["batch_size"] = src.batch_size;
    d["dataset_size"] = src.dataset_size;
    d["eval_batches"] = epoch_plan{src, 1}.eval_batches();
    return d;
  }

  /// Training batches per epoch of each rank of a group of `world`.
  uint64_t steps_per_epoch(uint32_t world) const {
    std::lock_guard<std::mutex> guard{mutex_};
    auto& src = local() || !feed_ ? cfg_.pipeline.source : run_source_;
    return epoch_plan{src, std::max(1u, world)}.steps();
  }

  uint64_t bytes_copied() const noexcept { return bytes_copied_; }

  /// Whether the run has ended (its outcome is the next event).
  bool ended() const noexcept { return done_; }

  /// Where the run's lines wait for Python's logging.
  std::shared_ptr<line_queue> lines() const { return lines_; }

private:
  std::shared_ptr<batch_feed> current_feed() const {
    std::lock_guard<std::mutex> guard{mutex_};
    return feed_;
  }

  void run() {
    auto sys = std::make_unique<caf::actor_system>(node_config_);
    auto failure = local() ? run_here(*sys) : run_member(*sys);
    // The loop learns the outcome now: the actor system's shutdown waits
    // for detached workers and may wait on network peers (stoker-node
    // bounds it with bound_shutdown; here the process is Python's, and
    // join() is bounded).
    finish(std::move(failure));
    // torch.distributed keeps the group's store until the interpreter
    // exits: a call after this must not reach a destroyed actor system.
    if (auto feed = current_feed())
      if (auto g = feed->group(std::chrono::milliseconds(0)); g && g->store)
        close_actor_store(*g->store);
    sys.reset();
    down_ = true;
    lines_->close(); // nothing more to say
  }

  // A local run; its error, or why its report is not exactly once.
  caf::error run_here(caf::actor_system& sys) {
    auto report = run_local(sys, cfg_, registry_, links_->tls(), &hooks_);
    if (!report)
      return std::move(report.error());
    std::lock_guard<std::mutex> guard{mutex_};
    report_json_ = to_json(*report);
    if (!cfg_.node.report_path.empty()) // --report, as stoker-node
      if (auto err = write_report(*report, cfg_.node.report_path))
        return err;
    // The verdict stoker-node's exit code says (node/run_outcome).
    auto judged = judge_run(*report);
    if (judged.verdict == run_verdict::failed)
      return make_error(errc::trainer_failure, judged.reason);
    return caf::none;
  }

  // A trainer node of a cluster; the run's report is the head's.
  caf::error run_member(caf::actor_system& sys) {
    std::string why;
    auto code = member_role_main(sys, cfg_, registry_, *links_, &hooks_,
                                 &why);
    if (code == 0)
      return caf::none;
    if (!why.empty()) // the reason the node said, as the exception's text
      return make_error(errc::run_failure,
                        "trainer node '" + cfg_.node.name + "': " + why);
    return make_error(errc::run_failure,
                      "trainer node '" + cfg_.node.name
                        + "' ended with exit code " + std::to_string(code)
                        + " (the head's report says why)");
  }

  void finish(caf::error failure) {
    {
      std::lock_guard<std::mutex> guard{mutex_};
      if (failure)
        failure_text_ = describe(failure);
      if (feed_)
        feed_->finish(std::move(failure));
    }
    done_ = true;
  }

  // Whether the run's actor system is down within `limit` (the thread
  // itself is joined by the destructor).
  bool join_for(std::chrono::milliseconds limit) {
    if (!runner_.joinable())
      return true;
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (!down_ && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return down_;
  }

  std::shared_ptr<line_queue> lines_ = std::make_shared<line_queue>();
  registry registry_;
  node_config node_config_;
  run_config cfg_;
  source_spec run_source_; // a member's run, from the head (under mutex_)
  // trainer.collective-timeout of the run (the head's; under mutex_).
  std::chrono::milliseconds collective_timeout_{0};
  std::shared_ptr<batch_feed> feed_; // made with the trainer (under mutex_)
  std::optional<std::string> closing_; // close() came before the feed
  bool closing_stopped_ = false;       // and it was on purpose

  // The reason close() gave, as the feed's error (under mutex_).
  caf::error closing_error() const {
    return make_error(closing_stopped_ ? errc::stopped : errc::trainer_failure,
                      closing_.value_or("the training loop closed its "
                                        "loader"));
  }
  std::string failure_text_;
  trainer_hooks hooks_;
  std::unique_ptr<node_links> links_;
  std::thread runner_;
  std::atomic<bool> done_{false}; // the loop knows the outcome
  std::atomic<bool> down_{false}; // the actor system is down too
  mutable std::mutex mutex_;
  std::string report_json_;
  uint64_t bytes_copied_ = 0;
};

// Stoker's checksum (core/checksum.hpp) of each image of a contiguous
// float32 (N, ...) tensor: what the worker stamped on it, recomputed here.
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
    out.push_back(checksum64(at + static_cast<size_t>(i) * bytes, bytes));
  return out;
}

} // namespace


PYBIND11_MODULE(_stoker, m) {
  m.doc() = "Stoker's native part: a run whose trainer is this process's "
            "Python loop (use the stoker package, not this module)";
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
  py::class_<line_queue, std::shared_ptr<line_queue>>(
    m, "LineQueue",
    "A run's lines on their way to the logger 'stoker' (the package's "
    "pump thread takes them)")
    .def("take", &line_queue::take, py::arg("timeout_ms"));
  py::class_<session, std::shared_ptr<session>>(m, "Session")
    .def(py::init<std::vector<std::string>>(), py::arg("args"))
    .def("start", &session::start, py::arg("state") = py::none(),
         py::arg("rank") = 0, py::arg("world") = 1)
    .def("next", &session::next, py::arg("timeout_ms"),
         py::arg("release_first") = false)
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
