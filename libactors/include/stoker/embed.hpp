#pragma once

// stoker layer: node
//
// A Stoker node inside your own process, of any role, as stoker-node runs
// it (stoker-node is a thin layer over this), or with your loop as its
// trainer: the whole pipeline here (role local), or a trainer node that
// joins a head (role trainer), the trainer's step handed to the embedder
// (the Python package is a thin layer over that). Errors are values
// carrying the message the node says.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <caf/error.hpp>
#include <caf/expected.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "stoker/log.hpp"
#include "stoker/messages.hpp"
#include "stoker/node_options.hpp"
#include "stoker/registry.hpp"
#include "stoker/run_report.hpp"

namespace stoker {

/// What an embedded run's loop receives next (embedded_run::next).
struct loop_event {
  enum class kind_type {
    batch,     ///< a checked batch to train on (or, part test, evaluate)
    phase_end, ///< the phase (epoch, part) has no more batches
    finished,  ///< the run ended; `error` says how (none: as it should)
  };
  kind_type kind = kind_type::finished;
  /// kind batch: the batch (float32 CHW images, labels, ids, checksums).
  /// Its `data` is the loop's now: hand it to `buffer_home` (when set)
  /// once done with the memory, and the run fills it again.
  image_batch batch;
  std::function<void(std::vector<char>&&)> buffer_home;
  /// kind batch: the buffer is one the run's pool made (a worker filled it
  /// in place); false: it was copied on its way (a CAF message).
  bool pooled = false;
  uint64_t epoch = 0;        ///< kind phase_end
  split part = split::train; ///< kind phase_end
  caf::error error;          ///< kind finished: why the run failed
};

/// The data-parallel group an embedded trainer belongs to.
struct loop_group {
  uint32_t rank = 0;
  uint32_t world = 1;
  std::string node;
  std::string interface; ///< the address its collective traffic uses
  uint32_t generation = 0;
  /// A c10d Store over the head's actors (world > 1), for
  /// torch.distributed; null for a lone trainer.
  c10::intrusive_ptr<c10d::Store> store;
  std::chrono::milliseconds collective_timeout{0};
};

/// The run's shape: its source's epochs, batch size, dataset size and
/// test batches per epoch (a trainer's: the head's, once it sent them).
struct loop_shape {
  uint64_t epochs = 0;
  uint64_t batch_size = 0;
  uint64_t dataset_size = 0;
  uint64_t eval_batches = 0;
};

/// How to open an embedded run.
struct embed_options {
  /// stoker-node's flags (--role=local or --role=trainer, --config-file,
  /// --section.key=value ...).
  std::vector<std::string> args;
  /// Where the run's lines go (a node's lines, each once, on the thread
  /// that says it); empty: the standard streams as stoker-node writes them.
  log_sink::handler log;
  /// Called once on the run's thread when its actor system is down (no
  /// line is said after it); optional.
  std::function<void()> on_down;
  /// true: the trainer's step is the embedder's loop (roles local and
  /// trainer, one trainer; next() yields its batches). false: the node
  /// runs as stoker-node runs it (any role, its own trainers), and next()
  /// yields only `finished`.
  bool loop = true;
};

/// One run whose trainer is the embedder's loop. open() and start() on
/// the loop's thread; the run then has a thread of its own. next(),
/// release() and cursor() are the loop's (one thread); close(), join() and
/// the queries any. Shared: the run's thread holds it until it ends.
class embedded_run : public std::enable_shared_from_this<embedded_run> {
public:
  /// Reads the config from `options.args` against `reg`; errc::
  /// invalid_config names the key or value at fault (with a loop, the
  /// role must be local or trainer, one trainer on the node). Null (no
  /// error) when the args asked for --help, --long-help or --dump-config,
  /// which CAF printed.
  static caf::expected<std::shared_ptr<embedded_run>>
  open(embed_options options, registry reg);

  /// The run's settings, as read (a member's pipeline is the head's,
  /// which comes later).
  const run_config& config() const noexcept;

  ~embedded_run();
  embedded_run(const embedded_run&) = delete;
  embedded_run& operator=(const embedded_run&) = delete;

  /// What the node runs (node.role).
  role_kind role() const noexcept;

  /// Where the node's lines go (options.log, or the standard streams);
  /// shared, for what says a line after the run (a shutdown timer).
  std::shared_ptr<const log_sink> log() const noexcept;

  /// Starts the run; `cursor`: an earlier run's cursor() to go on from
  /// (errc::invalid_config if it is not one, or of another run), taken at
  /// rank `rank` of a group of `world`.
  caf::error start(std::optional<std::string> cursor, uint32_t rank,
                   uint32_t world);

  /// The next event, waiting up to `timeout`; nothing on a timeout.
  /// `release_first`: the batch the loop holds is done with (its step
  /// ends; one call per batch).
  std::optional<loop_event> next(std::chrono::milliseconds timeout,
                                 bool release_first = false);

  /// The batch the loop holds is done with, without asking for the next.
  void release();

  /// The data cursor of every batch taken so far (a checkpoint's bytes);
  /// nothing before the trainer started.
  std::optional<std::string> cursor() const;

  /// The loop leaves: the trainer stops with `reason`; `stopped` (on
  /// purpose) ends the run as stopped, with the steps the loop ended
  /// acknowledged; else as failed (unless it had ended).
  void close(const std::string& reason, bool stopped);

  /// The group, waiting up to `timeout`; nothing if it did not form in
  /// time or the run ended first.
  std::optional<loop_group> group(std::chrono::milliseconds timeout);

  /// Waits up to `timeout` for the run's actor system to be down.
  bool join(std::chrono::milliseconds timeout);

  /// The run's report (a local run's or a head's, once it ended with
  /// one; a member's is its head's).
  std::optional<run_report> report() const;

  /// The run's shape (zeros for a trainer before the head's pipeline).
  loop_shape shape() const;

  /// Training batches per epoch for each rank of a group of `world`.
  uint64_t steps_per_epoch(uint32_t world) const;

  /// Bytes of batches that reached the loop as copies (0: none).
  uint64_t bytes_copied() const noexcept;

  /// Whether the run has ended (its outcome is the next event).
  bool ended() const noexcept;

  struct state; // the run's insides (node/embedded_run.cpp)

private:
  struct private_tag {};

public:
  embedded_run(private_tag, std::unique_ptr<state> st); // open() makes it

private:
  void run();

  std::unique_ptr<state> state_;
};

/// stoker-node's exit code for a run that ended with `error` (the
/// finished event's): 0 none (ok, or stopped on purpose), 2 a setting
/// refused (errc::invalid_config), 1 any other failure.
int exit_code(const caf::error& error) noexcept;

/// Stoker's checksum of `n` bytes: what a worker stamps on each image
/// (image_batch::checksums), for a loop that checks what it got.
uint64_t sample_checksum(const void* data, size_t n) noexcept;

} // namespace stoker
