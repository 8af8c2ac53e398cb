// A trainer's batches: each checked one run when its phase and its turn
// come, finished (recorded, acknowledged) in order, phases closed and
// checkpoints saved on the way (trainer_actor.cpp is the actor around
// them, trainer_group.cpp the group and the checkpoints).

#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>
#include <map>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <optional>
#include <sstream>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include "stoker/actors.hpp"
#include "stoker/errors.hpp"
#include "config/run_config.hpp"
#include "core/batch_id_set.hpp"
#include "core/machine.hpp"
#include "data/epoch_plan.hpp"
#include "kernels/blur.hpp"
#include "train/checkpoint.hpp"
#include "train/collective.hpp"
#include "train/delivery_ledger.hpp"
#include "train/epoch_gate.hpp"
#include "train/step_engine.hpp"
#include "train/trainer_state.hpp"
#include "transport/batch_check.hpp"
#include "transport/batch_codec.hpp"
#include "core/system_log.hpp"

namespace stoker::detail {

namespace {

void log_progress(trainer_ptr self) {
  auto& st = self->state;
  if (st.group.rank != 0) { // a group's lines come from rank 0 (its steps
    st.window_step_ns = st.window_wait_ns = 0; // are every rank's)
    return;
  }
  double busy = static_cast<double>(st.window_step_ns);
  double waited = static_cast<double>(st.window_wait_ns);
  // As in the article, a step's time runs from one step to the next, so
  // waiting for data shows in it; the compute part is printed beside it.
  double per_step_s = 1e-9 / st.log_every;
  std::ostringstream line;
  line << "Iteration " << st.stats.steps << ": avg time per step "
       << std::fixed << std::setprecision(4) << (busy + waited) * per_step_s
       << " s (compute " << busy * per_step_s << " s), accelerator idle "
       << std::setprecision(1) << 100.0 * waited / std::max(1.0, busy + waited)
       << "%";
  if (st.engine->simulated())
    line << " [simulated accelerator]";
  else if (!st.engine->loop_driven()) // a loop prints its own loss
    line << ", loss " << std::setprecision(4) << st.stats.last_loss;
  log_to(self->system()) << line.str();
  st.window_step_ns = st.window_wait_ns = 0;
}

constexpr size_t max_skipped_examples = 10;

// The skip tally's key for a phase.
uint64_t skip_phase(uint64_t epoch, split part) {
  return epoch * 2 + (part == split::test ? 1 : 0);
}

// The end of a phase: prints the epoch's figures and keeps them for the
// report (train_loss after training, test_accuracy after evaluating);
// -1 where the simulated accelerator measured nothing.
void close_phase(trainer_ptr self, uint64_t epoch, split part) {
  auto& s = self->state;
  // Every rank says what it skipped: ranks see different samples.
  for (auto& text : s.skips.take_epoch_lines(skip_phase(epoch, part)))
    log_to(self->system()) << s.line_start << "epoch " << epoch + 1
                           << (part == split::test ? " (test)" : "") << ": "
                           << text;
  auto& e = s.epochs[epoch];
  bool measured = !s.engine->simulated() && !s.engine->loop_driven();
  auto shown = [](double x) {
    std::ostringstream text;
    if (x < 0)
      text << "n/a";
    else
      text << std::fixed << std::setprecision(4) << x;
    return text.str();
  };
  std::ostringstream line;
  line << "epoch " << epoch + 1 << ": ";
  if (part == split::train) {
    double loss = measured && e.steps > 0
                    ? e.loss / static_cast<double>(e.steps)
                    : -1.0;
    s.stats.epoch_train_loss.push_back(loss);
    line << "train_loss " << shown(loss);
    if (s.evaluates)
      return; // printed with the test accuracy
  } else {
    double acc = measured && e.evaluated > 0
                   ? static_cast<double>(e.correct)
                       / static_cast<double>(e.evaluated)
                   : -1.0;
    s.stats.epoch_test_accuracy.push_back(acc);
    line << "train_loss "
         << shown(s.stats.epoch_train_loss.empty()
                    ? -1.0
                    : s.stats.epoch_train_loss.back())
         << ", test_accuracy " << shown(acc) << " (" << e.evaluated
         << " test samples)";
  }
  if (!measured)
    line << " [simulated accelerator]";
  // A group's epochs: every rank's are rank 0's; a loop prints its own.
  if (s.group.rank == 0 && !s.engine->loop_driven())
    log_to(self->system()) << s.line_start << line.str();
  s.epochs.erase(epoch);
}

// Gives a batch's buffer back to the listener that filled it, if any.
void recycle(trainer_state& s, image_batch& batch) {
  if (s.pool)
    s.pool->release(std::move(batch.data));
}

// The accelerator's idle time before a batch that starts at `start`.
uint64_t account_wait(trainer_ptr self, clock_type::time_point start) {
  auto& s = self->state;
  // Waiting for the very first batch is start-up (nodes joining, the
  // pipeline filling), not a data shortage; it is not counted as idle. A
  // loop's idle time is its own (time blocked asking for a batch: the
  // ended step says it), not the trainer's.
  auto waited = s.stats.steps + s.stats.rejected_batches == 0
                    || s.engine->loop_driven()
                  ? uint64_t{0}
                  : ns_between(s.idle_since, std::max(s.idle_since, start));
  s.stats.wait_ns += waited;
  s.window_wait_ns += waited;
  return waited;
}

// Records a batch that ran (`o`: its step or evaluation) and acks it, then
// ends its phase and saves a checkpoint where one is due. False if the
// trainer had to quit.
bool finish_batch(trainer_ptr self, image_batch& batch,
                  clock_type::time_point start, uint64_t waited,
                  const step_outcome& o, const router_actor& router) {
  auto& s = self->state;
  auto& sums = s.epochs[batch.epoch];
  uint64_t collective_ns = 0;
  if (o.evaluated) {
    sums.correct += o.eval.correct;
    sums.evaluated += batch.size();
  }
  if (o.stepped) {
    s.stats.steps += 1;
    collective_ns = o.step.collective_ns;
    s.stats.collective_ns += collective_ns;
    if (!o.step.pending
        && (std::isfinite(o.step.loss) || s.engine->simulated())) {
      s.stats.last_loss = o.step.loss;
      sums.loss += o.step.loss;
      sums.steps += 1;
    }
  }
  if (batch.part == split::train) {
    // The last `padded` samples repeat the epoch's first ones (last-batch
    // = pad): trained on, but each sample counts once.
    auto counted = batch.sample_ids.size()
                   - std::min<size_t>(batch.sample_ids.size(),
                                      batch.slot.padded);
    for (size_t i = 0; i < counted; ++i)
      s.ledger->record(batch.epoch, batch.sample_ids[i]);
    s.stats.padded_samples += batch.sample_ids.size() - counted;
    for (auto id : batch.skipped_ids) // handled once: skipped, not lost
      s.ledger->record_skipped(batch.epoch, id);
  }
  s.consumed.insert(batch.batch_id);
  auto end = clock_type::now();
  uint64_t step_ns = 0;
  if (o.ended) {
    // A loop's step: its own clock says how long it waited for the batch
    // (blocked asking for it) and how long it took.
    step_ns = batch.sample_ids.empty() ? 0 : o.ended->step_ns;
    waited += o.ended->wait_ns;
    s.stats.wait_ns += o.ended->wait_ns;
    s.window_wait_ns += o.ended->wait_ns;
  } else {
    // A step or an evaluation kept the accelerator busy; skipped files
    // only did not.
    step_ns = batch.sample_ids.empty() ? 0 : ns_between(start, end);
    // Waiting for the other ranks is neither compute nor data wait: it is
    // shown on its own (a slow rank holds the group at the collective).
    step_ns -= std::min(step_ns, collective_ns);
    if (auto device_ns = s.engine->last_device_ns();
        device_ns && !batch.sample_ids.empty()) {
      // On CUDA the device's own clock says how busy it was: the host's
      // share of the step (launches, the GPU blur's copies) is idle time.
      auto idle = step_ns - std::min(step_ns, *device_ns);
      waited += idle;
      s.stats.wait_ns += idle;
      s.window_wait_ns += idle;
      step_ns -= idle;
    }
  }
  uint64_t backlog = self->mailbox().size(); // batches that waited
  s.stats.step_ns += step_ns;
  s.window_step_ns += step_ns;
  s.idle_since = end;
  batch_ack ack;
  ack.batch_id = batch.batch_id;
  ack.wait_ns = waited;
  ack.step_ns = step_ns;
  ack.backlog = backlog;
  ack.rank = s.group.rank;
  ack.collective_ns = collective_ns;
  self->send(router, ack);
  // One rank's phases end at the batch its slot marks; a lone trainer's
  // when the epoch gate has counted the phase's samples (its batches may
  // run out of order).
  bool phase_done = s.collective
                      ? batch.slot.phase_end
                      : s.gate->finish(batch.epoch, batch.part,
                                       batch.size()
                                         + batch.skipped_ids.size());
  if (phase_done) {
    close_phase(self, batch.epoch, batch.part);
    s.engine->end_phase(batch.epoch, batch.part);
  }
  if (o.stepped) {
    if (s.log_every > 0 && s.stats.steps % s.log_every == 0)
      log_progress(self);
    if (s.collective) {
      // A group saves together, as rank 0 says (its setting, shared when
      // the group formed): every rank at the same step.
      if (s.group_checkpoint_every > 0
          && s.stats.steps % s.group_checkpoint_every == 0)
        return save_group_checkpoint(self, router);
    } else if (!s.checkpoint_dir.empty()
               && s.stats.steps % s.checkpoint_every == 0) {
      return save_checkpoint(self, router);
    }
  }
  return true;
}

// The loop's feed says it closed: on purpose (errc::stopped, after the
// steps it ended were acked), the trainer tells the router that the run
// ends, stopped, and stays to answer for the report; otherwise it quits
// with the reason.
void stop_or_quit(trainer_ptr self, const caf::error& err) {
  auto& s = self->state;
  if (!is(err, errc::stopped)) {
    self->quit(err);
    return;
  }
  if (s.loop_stopped)
    return;
  s.loop_stopped = true;
  for (auto& u : s.unfinished) // handed to the loop, never ended: untrained
    recycle(s, u.batch);
  s.unfinished.clear();
  loop_stopped m;
  m.rank = s.group.rank;
  m.why = describe(err);
  self->send(s.router, std::move(m));
}

// Runs one checked batch whose phase has come: a training step, or an
// evaluation of a test batch. Finished (recorded, acked) at once, or, when
// the engine's step goes on after it returns (a loop's) or one before it
// does, in order once that ended (finish_ended). False if the trainer had
// to quit.
bool run_batch(trainer_ptr self, image_batch& batch,
               clock_type::time_point start, const router_actor& router) {
  auto& s = self->state;
  if (s.loop_stopped) {
    recycle(s, batch);
    return false;
  }
  auto waited = account_wait(self, start);
  decode_batch(batch, s.pool.get()); // to float32, if it came as 16-bit
  if (batch.order == layout::hwc) { // leased for the GPU blur (placement)
    if (auto err = s.gpu_blur->run(s.blur, batch)) {
      self->quit(err);
      return false;
    }
    ++s.stats.gpu_blurred_batches;
  }
  for (size_t i = 0; i < batch.skipped_names.size()
                     && s.stats.skipped_examples.size() < max_skipped_examples;
       ++i)
    s.stats.skipped_examples.push_back(batch.skipped_names[i]);
  s.stats.skipped_samples += batch.skipped_ids.size();
  for (size_t i = 0; i < batch.skipped_ids.size(); ++i)
    s.skips.add(skip_phase(batch.epoch, batch.part),
                i < batch.skipped_sources.size() ? batch.skipped_sources[i]
                                                 : "(unnamed)",
                i < batch.skipped_names.size() ? batch.skipped_names[i]
                                               : "no reason given");
  if (!s.failures)
    s.failures.emplace(s.cfg.pipeline.data.max_failed_share);
  if (auto err = s.failures->add(batch.sample_ids.size(),
                                 batch.skipped_sources,
                                 batch.skipped_names)) {
    self->quit(err); // a transform that fails too often: the run fails
    return false;
  }
  step_outcome o;
  bool pending = false;
  if (batch.part == split::test) {
    if (!batch.sample_ids.empty()) {
      auto result = s.engine->evaluate(batch);
      if (!result) {
        if (is(result.error(), errc::stopped)) {
          recycle(s, batch);
          finish_ended(self);
          return false;
        }
        self->quit(result.error());
        return false;
      }
      o.evaluated = true;
      o.eval = *result;
      pending = result->pending;
    }
  } else if (!batch.sample_ids.empty() || s.collective) {
    // In a group every rank steps every global step, with or without
    // samples of its own: the others wait for it in the collective.
    s.engine->set_learning_rate(learning_rate_at(s.spec, s.stats.steps));
    auto result = s.engine->step(batch);
    if (!result) {
      if (is(result.error(), errc::stopped)) {
        // Not trained: ack what the loop did end, then stop.
        recycle(s, batch);
        finish_ended(self);
        return false;
      }
      self->quit(result.error());
      return false;
    }
    o.stepped = true;
    o.step = *result;
    pending = result->pending;
  }
  if (!pending && s.unfinished.empty())
    return finish_batch(self, batch, start, waited, o, router);
  recycle(s, batch); // what the engine left of it is not needed
  unfinished_batch u;
  u.batch = std::move(batch);
  u.start = start;
  u.waited = waited;
  u.outcome = o;
  u.pending = pending;
  s.unfinished.push_back(std::move(u));
  return true;
}

// A group rank's batches that came, run in slot order, each one when its
// turn comes (earlier ones may still be on their way). A phase ends when
// its last batch is finished: the next phase's batches wait while that is
// pending (a loop's), so the loop hears of the phase's end before them.
void run_ahead(trainer_ptr self, clock_type::time_point start) {
  auto& s = self->state;
  for (auto next = s.ahead.find(s.next_seq); next != s.ahead.end();
       next = s.ahead.find(s.next_seq)) {
    if (std::any_of(s.unfinished.begin(), s.unfinished.end(),
                    [](auto& u) { return u.batch.slot.phase_end; }))
      return;
    auto b = std::move(next->second);
    s.ahead.erase(next);
    ++s.next_seq;
    if (!run_batch(self, b, start, s.router))
      return;
    recycle(s, b);
    start = clock_type::now();
  }
}

// A checked batch of a group of several ranks (run_ahead).
void run_in_order(trainer_ptr self, image_batch&& batch,
                  clock_type::time_point start) {
  auto& s = self->state;
  auto seq = batch.slot.seq;
  if (seq < s.next_seq) {
    recycle(s, batch); // cannot happen: one copy per id reaches here
    return;
  }
  s.ahead.emplace(seq, std::move(batch));
  run_ahead(self, start);
}

// A lone trainer's batches that waited for their phase: those whose phase
// has come run, in order (phases may pass as they run).
void run_held(trainer_ptr self) {
  auto& s = self->state;
  for (bool ran = true; ran;) {
    ran = false;
    for (auto i = s.held.begin(); i != s.held.end(); ++i)
      if (s.gate->ready(i->epoch, i->part)) {
        auto next = std::move(*i);
        s.held.erase(i);
        if (!run_batch(self, next, clock_type::now(), s.router))
          return;
        recycle(s, next);
        ran = true;
        break;
      }
  }
}

// A checked batch of a lone trainer: its phase decides (the epoch gate);
// batches of one phase run as they arrive.
void run_when_ready(trainer_ptr self, image_batch&& batch,
                    clock_type::time_point start) {
  auto& s = self->state;
  if ((s.evaluates || s.engine->loop_driven())
      && !s.gate->ready(batch.epoch, batch.part)) {
    // Ahead of its phase (the next epoch before this one's test, say):
    // it waits; its buffer comes back when it runs.
    s.held.push_back(std::move(batch));
    return;
  }
  if (!run_batch(self, batch, start, s.router))
    return;
  recycle(s, batch);
  run_held(self);
}

} // namespace

// Steps of the engine's that ended (a loop's): finished in order, with the
// batches that ran behind them, then what waited for a phase they ended.
void finish_ended(trainer_ptr self) {
  auto& s = self->state;
  while (!s.unfinished.empty()) {
    auto& front = s.unfinished.front();
    if (front.pending) {
      auto e = s.engine->next_ended();
      if (!e) {
        stop_or_quit(self, e.error());
        return;
      }
      if (!*e)
        break; // the loop is still at it
      front.outcome.ended = **e;
      front.pending = false;
    }
    auto u = std::move(front);
    s.unfinished.pop_front();
    if (!finish_batch(self, u.batch, u.start, u.waited, u.outcome, s.router))
      return;
  }
  if (s.unfinished.empty()) {
    // Nothing pending: the notice may say the loop left.
    if (auto e = s.engine->next_ended(); !e) {
      stop_or_quit(self, e.error());
      return;
    }
  }
  if (s.collective)
    run_ahead(self, clock_type::now());
  else
    run_held(self);
}

void on_batch(trainer_ptr self, image_batch& batch) {
  auto& s = self->state;
  if (s.loop_stopped) { // the run is ending, stopped: nothing is trained
    recycle(s, batch);
    return;
  }
  ++s.stats.batches_received;
  s.stats.bytes_received += batch.data.size();
  auto same = [&](auto& h) { return h.batch_id == batch.batch_id; };
  bool copy = s.consumed.contains(batch.batch_id)
              || std::any_of(s.held.begin(), s.held.end(), same)
              || std::any_of(s.unfinished.begin(), s.unfinished.end(),
                             [&](auto& u) { return same(u.batch); })
              || std::any_of(s.ahead.begin(), s.ahead.end(),
                             [&](auto& kv) { return same(kv.second); });
  if (copy) {
    // The slower copy of a hedged batch: the faster one was trained on.
    // Acknowledged all the same (no step): a router started after this
    // trainer trained it may have leased it again, and waits for the ack.
    ++s.stats.dropped_copies;
    std::string first;
    if (auto equal = s.copies.same(batch, &first); equal && !*equal) {
      ++s.stats.copy_mismatches;
      log_to(self->system(), log_level::warning)
        << s.line_start << "trainer: batch " << batch.batch_id
        << ": its second copy (from " << batch.producer
        << ") is not the bits of the first (from " << first
        << "), which was trained on: the chain is not deterministic (a "
           "stage drawing from a generator Stoker does not seed?)";
    }
    batch_ack ack;
    ack.batch_id = batch.batch_id;
    ack.rank = s.group.rank;
    ack.backlog = self->mailbox().size();
    self->send(s.router, ack);
    recycle(s, batch);
    return;
  }
  s.copies.taken(batch);
  auto start = clock_type::now();
  auto faults_before = thread_minor_faults();
  auto expect = s.expect;
  if (s.gpu_blur && batch.order == layout::hwc)
    expect.order = layout::hwc; // the GPU blur's input (placement)
  if (auto err = check_batch(batch, expect)) {
    // Not trained on, not counted as delivered: the report shows it.
    ++s.stats.rejected_batches;
    if (s.stats.first_error.empty())
      s.stats.first_error = describe(err);
    log_to(self->system(), log_level::warning)
      << s.line_start << "trainer: rejected " << describe(err);
    if (s.collective) {
      // The other ranks wait for this rank's step: it takes part with no
      // samples (they are missing from the ledger, and the report says
      // so), in its turn, and that ends the lease like any ack.
      batch.sample_ids.clear();
      batch.labels.clear();
      batch.skipped_ids.clear();
      batch.skipped_names.clear();
      batch.checksums.clear();
      batch.slot.padded = 0;
      batch.type = expect.type;
      batch.order = layout::chw;
      run_in_order(self, std::move(batch), start);
      return;
    }
    batch_ack ack; // the lease ends: a copy would fail the same way
    ack.batch_id = batch.batch_id;
    ack.wait_ns = account_wait(self, start);
    ack.backlog = self->mailbox().size();
    ack.rank = s.group.rank;
    self->send(s.router, ack);
    recycle(s, batch);
    s.idle_since = clock_type::now();
    return;
  }
  if (s.collective)
    run_in_order(self, std::move(batch), start);
  else
    run_when_ready(self, std::move(batch), start);
  if (s.stats.steps > warmup_batches) { // the steady state
    s.stats.steady_faults += thread_minor_faults() - faults_before;
    ++s.stats.steady_batches;
  }
}

} // namespace stoker::detail
