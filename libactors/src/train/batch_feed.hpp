#pragma once

// The hand-over between a trainer and a training loop on another thread
// (a Python loop: the stoker package): the trainer's feed engine hands each
// batch over, one ahead of the loop, and the trainer acks it when the loop
// is done with it, so the ack says what it says for a C++ step.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>

#include <caf/error.hpp>

#include "stoker/messages.hpp"
#include "core/batch_id_set.hpp"
#include "train/checkpoint.hpp"
#include "train/delivery_ledger.hpp"
#include "train/step_engine.hpp"
#include "transport/buffer_pool.hpp"

namespace stoker {

/// What the loop gets from a feed, in the trainer's order.
struct feed_event {
  enum class kind_type {
    batch,     ///< a checked batch to train on (or, part test, evaluate)
    phase_end, ///< the trainer's phase (epoch, part) is complete
    finished,  ///< the run ended; `error` says how (none: every item acked)
  };
  kind_type kind = kind_type::finished;
  /// kind batch: the batch; its buffer (`data`) is the loop's now, and goes
  /// back to `pool` (when set) once the loop is done with the memory.
  image_batch batch;
  std::shared_ptr<buffer_pool> pool;
  uint64_t epoch = 0; ///< kind phase_end
  split part = split::train; ///< kind phase_end
  caf::error error; ///< kind finished
};

/// One trainer's batches, handed from its thread (the producer: the feed
/// engine inside step() and evaluate()) to one loop thread (the consumer).
/// At most two batches are out at a time: the one the loop holds and the
/// next, ready when the loop asks (so asking costs the loop no wait for the
/// trainer's thread). A batch's step ends when the loop asks for the next
/// event (or closes): the feed keeps the ended steps in order with the
/// loop's timing (ended()) and calls the notifier, and the trainer acks
/// then, so the router's window, hedging and re-leases work as for a C++
/// trainer. The consumer side also keeps the data cursor
/// (every batch the loop took, as a checkpoint would say) so that a loop
/// can save it beside its model at any point (the trainer actor's own state
/// is its thread's only). Thread-safe: one producer, one consumer, and
/// finish()/close() from any thread.
class batch_feed {
public:
  /// `run`, `dataset_size` and `epochs`: the run's (the cursor's shape);
  /// `resumed`: the cursor this run goes on from, or nullptr.
  batch_feed(run_identity run, uint64_t dataset_size, uint32_t epochs,
             const checkpoint* resumed);

  // -- the trainer's thread -------------------------------------------------

  /// Hands `batch` over (its buffer moves out to the loop; `pool` is where
  /// the loop gives it back), first waiting while two are out (the loop
  /// holds one, the next waits for it). Its step ends later (ended()). An
  /// error (the reason close() gave: errc::trainer_failure, or
  /// errc::stopped for a loop that ended the run on purpose) once the loop
  /// closed: the batch is not trained.
  caf::error hand_over(image_batch& batch, std::shared_ptr<buffer_pool> pool);

  /// The oldest handed batch whose step ended and that ended() has not
  /// given yet (the loop's wait for it inside next(), and its step: take to
  /// release), or nothing; once the loop closed, the steps it ended before
  /// that, then the reason.
  caf::expected<std::optional<ended_step>> ended();

  /// Called (on the loop's thread, or close()'s) each time a step ends or
  /// the loop closes; set before the first hand_over().
  void set_notifier(std::function<void()> notify);

  /// The trainer completed the phase (`epoch`, `part`).
  void end_phase(uint64_t epoch, split part);

  /// The trainer's group formed: its rank and size, and (world > 1) the
  /// group's store.
  void set_group(const group_spec& g, c10::intrusive_ptr<c10d::Store> store);

  // -- any thread -----------------------------------------------------------

  /// The run ended; `err` is none when every item was acknowledged.
  /// Events still queued come first.
  void finish(caf::error err);

  /// The loop leaves (an exception, Ctrl-C, close() before the end):
  /// queued batches are dropped and the trainer waiting in hand_over() is
  /// let go with `why`, as is any later hand_over().
  void close(caf::error why);

  // -- the loop's thread ----------------------------------------------------

  /// The loop is done with the batch it holds (none: nothing happens): its
  /// step ends (the notifier tells the trainer, whose ack goes out).
  void release();

  /// The next event, waiting up to `timeout`; nothing on a timeout. A batch
  /// taken here counts in cursor() at once (the loop trains on it next, and
  /// a cursor saved after that step must not lease it again).
  std::optional<feed_event> next(std::chrono::milliseconds timeout);

  /// Every batch the loop took, as a lone trainer's checkpoint cursor
  /// (no engine state: the loop saves its model itself).
  checkpoint cursor() const;

  /// The group, once it formed (set_group), waiting up to `timeout`;
  /// nothing before that or when the run finished first.
  struct group_info {
    group_spec spec;
    c10::intrusive_ptr<c10d::Store> store;
  };
  std::optional<group_info> group(std::chrono::milliseconds timeout) const;

  /// Training batches the loop took (its steps), resumed ones included.
  uint64_t steps() const noexcept { return steps_; }

  /// At most this many batches are handed and not ended.
  static constexpr size_t max_out = 2;

private:
  using clock_type = std::chrono::steady_clock;

  void take(const image_batch& batch);

  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  std::deque<feed_event> events_;
  size_t out_ = 0;    // handed, not ended (queued or held)
  bool held_ = false; // the loop holds a batch
  std::deque<ended_step> ended_;
  std::function<void()> notify_;
  // The loop's clock: since when it waits for a batch (its first next()
  // call since it took the last one), since when it holds one.
  std::optional<clock_type::time_point> asked_at_;
  clock_type::time_point taken_at_;
  uint64_t wait_ns_ = 0; // the held batch's wait
  bool first_taken_ = false; // waiting for the first is start-up, not idle
  caf::error closed_;
  bool finished_ = false;
  std::optional<group_info> group_;
  // The consumer's cursor (its thread only).
  run_identity run_;
  delivery_ledger ledger_;
  batch_id_set consumed_;
  uint64_t steps_ = 0;
  uint64_t next_seq_ = 0;
};

/// A step engine whose steps are a loop's: step() and evaluate() hand the
/// batch to `feed` and return it pending; the step ends when the loop is
/// done with it (next_ended(); no loss: the loop computes its own). It runs the trainer's phases in order (epoch e's
/// training, its test, then e+1) and tells the feed where each ends.
/// device() is "python". `pool`: where the loop gives buffers back.
std::unique_ptr<step_engine>
make_feed_engine(std::shared_ptr<batch_feed> feed,
                 std::shared_ptr<buffer_pool> pool);

} // namespace stoker
