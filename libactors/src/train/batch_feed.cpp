#include "train/batch_feed.hpp"

#include <algorithm>
#include <limits>

#include "stoker/errors.hpp"

namespace stoker {

batch_feed::batch_feed(run_identity run, uint64_t dataset_size,
                       uint32_t epochs, const checkpoint* resumed)
  : run_(run), ledger_(dataset_size, epochs) {
  if (resumed) {
    ledger_.restore(resumed->ledger_bits, resumed->delivered,
                    resumed->duplicates);
    consumed_.restore(resumed->done_below, resumed->done_ids);
    steps_ = resumed->step;
    next_seq_ = resumed->next_seq;
  }
}

caf::error batch_feed::hand_over(image_batch& batch,
                                 std::shared_ptr<buffer_pool> pool) {
  std::unique_lock<std::mutex> guard{mutex_};
  // No deadline: the loop's step takes what it takes (as a model's step
  // would here); close() lets the trainer go when the loop is gone.
  changed_.wait(guard, [this] { return out_ < max_out || closed_; });
  if (closed_)
    return closed_;
  feed_event e;
  e.kind = feed_event::kind_type::batch;
  // The buffer moves to the loop; the rest (ids, labels, checksums: a few
  // hundred bytes) is copied, as the trainer still records the batch when
  // its step ends.
  auto images = std::move(batch.data);
  batch.data = {};
  e.batch = batch;
  e.batch.data = std::move(images);
  e.pool = std::move(pool);
  events_.push_back(std::move(e));
  ++out_;
  changed_.notify_all();
  return caf::none;
}

caf::expected<std::optional<ended_step>> batch_feed::ended() {
  std::lock_guard<std::mutex> guard{mutex_};
  // Steps the loop ended before it closed are its steps: the trainer acks
  // them first (a closed loop's last two steps went uncounted).
  if (ended_.empty() && closed_)
    return closed_;
  if (ended_.empty())
    return std::optional<ended_step>{};
  auto e = ended_.front();
  ended_.pop_front();
  return std::optional<ended_step>{e};
}

void batch_feed::set_notifier(std::function<void()> notify) {
  std::lock_guard<std::mutex> guard{mutex_};
  notify_ = std::move(notify);
}

void batch_feed::end_phase(uint64_t epoch, split part) {
  std::lock_guard<std::mutex> guard{mutex_};
  feed_event e;
  e.kind = feed_event::kind_type::phase_end;
  e.epoch = epoch;
  e.part = part;
  events_.push_back(std::move(e));
  changed_.notify_all();
}

void batch_feed::set_group(const group_spec& g,
                           c10::intrusive_ptr<c10d::Store> store) {
  std::lock_guard<std::mutex> guard{mutex_};
  group_ = group_info{g, std::move(store)};
  changed_.notify_all();
}

std::optional<batch_feed::group_info>
batch_feed::group(std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> guard{mutex_};
  changed_.wait_for(guard, timeout,
                    [this] { return group_.has_value() || finished_; });
  return group_;
}

void batch_feed::finish(caf::error err) {
  std::lock_guard<std::mutex> guard{mutex_};
  if (finished_)
    return;
  finished_ = true;
  feed_event e;
  e.kind = feed_event::kind_type::finished;
  e.error = std::move(err);
  events_.push_back(std::move(e));
  changed_.notify_all();
}

void batch_feed::close(caf::error why) {
  std::deque<feed_event> dropped; // freed after the lock is dropped
  std::function<void()> notify;
  {
    std::lock_guard<std::mutex> guard{mutex_};
    if (!closed_)
      closed_ = why ? std::move(why)
                    : make_error(errc::trainer_failure,
                                 "the training loop closed its loader");
    dropped.swap(events_);
    out_ = 0;
    changed_.notify_all();
    notify = notify_;
  }
  if (notify)
    notify(); // the trainer learns it from ended()
}

void batch_feed::release() {
  std::function<void()> notify;
  {
    std::lock_guard<std::mutex> guard{mutex_};
    if (!held_)
      return;
    held_ = false;
    ended_step e;
    e.wait_ns = wait_ns_;
    e.step_ns = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(clock_type::now()
                                                           - taken_at_)
        .count());
    ended_.push_back(e);
    if (out_ > 0)
      --out_;
    changed_.notify_all();
    notify = notify_;
  }
  if (notify)
    notify(); // outside the lock: it sends the trainer a message
}

std::optional<feed_event> batch_feed::next(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> guard{mutex_};
  if (!asked_at_)
    asked_at_ = clock_type::now();
  if (events_.empty()
      && !changed_.wait_for(guard, timeout,
                            [this] { return !events_.empty(); }))
    return std::nullopt;
  auto e = std::move(events_.front());
  events_.pop_front();
  if (e.kind == feed_event::kind_type::batch) {
    held_ = true;
    taken_at_ = clock_type::now();
    // Waiting for the first batch is start-up (the pipeline filling), as
    // for a C++ trainer; each later wait is the loop's idle time.
    wait_ns_ = first_taken_
                 ? static_cast<uint64_t>(
                   std::chrono::duration_cast<std::chrono::nanoseconds>(
                     taken_at_ - *asked_at_)
                     .count())
                 : 0;
    first_taken_ = true;
    asked_at_.reset();
    guard.unlock();
    take(e.batch);
  }
  return e;
}

void batch_feed::take(const image_batch& batch) {
  // What run_batch records once the step is done (trainer_actor.cpp): the
  // id of every batch run (test batches too: not leased again), and for a
  // training batch a step (a group rank's empty share is one too) and its
  // samples, but not the padded tail's repeats; skipped files count as
  // handled.
  consumed_.insert(batch.batch_id);
  next_seq_ = std::max(next_seq_, batch.slot.seq + 1);
  if (batch.part != split::train)
    return;
  ++steps_;
  auto counted = batch.sample_ids.size()
                 - std::min<size_t>(batch.sample_ids.size(),
                                    batch.slot.padded);
  for (size_t i = 0; i < counted; ++i)
    ledger_.record(batch.epoch, batch.sample_ids[i]);
  for (auto id : batch.skipped_ids)
    ledger_.record_skipped(batch.epoch, id);
}

checkpoint batch_feed::cursor() const {
  checkpoint c;
  c.run = run_;
  c.step = steps_;
  c.done_below = consumed_.watermark();
  c.done_ids = consumed_.sparse();
  c.ledger_bits = ledger_.pack();
  c.delivered = ledger_.delivered();
  c.duplicates = ledger_.duplicates();
  c.next_seq = next_seq_;
  return c;
}

namespace {

class feed_engine final : public step_engine {
public:
  feed_engine(std::shared_ptr<batch_feed> feed,
              std::shared_ptr<buffer_pool> pool)
    : feed_(std::move(feed)), pool_(std::move(pool)) {
    // nop
  }

  caf::expected<step_result> step(image_batch& batch) override {
    if (auto err = feed_->hand_over(batch, pool_))
      return err;
    step_result r;
    r.loss = std::numeric_limits<double>::quiet_NaN();
    r.pending = true;
    return r;
  }

  caf::error join_group(std::shared_ptr<collective_group>) override {
    // The loop joins its own process group (torch.distributed over the
    // group's store); the trainer's group still saves checkpoints together.
    return caf::none;
  }

  caf::expected<eval_result> evaluate(image_batch& batch) override {
    if (auto err = feed_->hand_over(batch, pool_))
      return err;
    eval_result r;
    r.loss_sum = std::numeric_limits<double>::quiet_NaN();
    r.pending = true;
    return r;
  }

  void on_step_ended(std::function<void()> notify) override {
    feed_->set_notifier(std::move(notify));
  }

  caf::expected<std::optional<ended_step>> next_ended() override {
    return feed_->ended();
  }

  void set_learning_rate(double) override {
    // the loop's optimizer has its own schedule
  }

  std::string device() const override {
    return "python";
  }

  bool simulated() const override {
    return false;
  }

  bool loop_driven() const override {
    return true;
  }

  void end_phase(uint64_t epoch, split part) override {
    feed_->end_phase(epoch, part);
  }

  void group_formed(const group_spec& g,
                    c10::intrusive_ptr<c10d::Store> store) override {
    feed_->set_group(g, std::move(store));
  }

  caf::expected<std::string> save_state() override {
    return std::string{}; // the loop saves its model beside the cursor
  }

  caf::error load_state(const std::string& state) override {
    if (!state.empty())
      return make_error(errc::invalid_config,
                        "the checkpoint holds a C++ trainer's model ("
                          + std::to_string(state.size())
                          + " bytes); a Python loop resumes from its own "
                            "state_dict() cursor");
    return caf::none;
  }

private:
  std::shared_ptr<batch_feed> feed_;
  std::shared_ptr<buffer_pool> pool_;
};

} // namespace

std::unique_ptr<step_engine>
make_feed_engine(std::shared_ptr<batch_feed> feed,
                 std::shared_ptr<buffer_pool> pool) {
  return std::make_unique<feed_engine>(std::move(feed), std::move(pool));
}

} // namespace stoker
