#include "routing/router_actor.hpp"

#include <algorithm>

#include <caf/actor_ostream.hpp>

#include "stoker/errors.hpp"
#include "routing/router_state.hpp"

// The router actor: leasing, windows, failures. What the console asks of
// it lives in router_console.cpp; the state both use in
// detail/router_state.hpp.

namespace stoker::detail {

constexpr size_t hedge_history = 32; // batch times the median is taken over
// Long enough for a few acks and worker items at the article's rates.
constexpr uint64_t placement_period_ns = 1'000'000'000;

// Judges the placement period if it is over: the least busy live worker's
// share of it, the trainer's acks; a change is logged and kept.
void judge_placement(router_ptr self) {
  auto& st = self->state;
  if (st.spec.placement != blur_placement::automatic)
    return;
  auto now = st.now_ns();
  auto length = now - std::min(now, st.period_started_ns);
  if (length < placement_period_ns)
    return;
  auto signals = st.period;
  signals.trainer_gpu = st.trainer_gpu;
  signals.min_worker_busy = -1.0;
  auto& workers = st.table.workers();
  for (size_t i = 0; i < workers.size(); ++i) {
    if (!workers[i].alive || workers[i].draining)
      continue;
    double busy = static_cast<double>(st.busy_total[i]
                                      - std::min(st.busy_total[i],
                                                 st.busy_at_period[i]))
                  / static_cast<double>(length);
    signals.min_worker_busy = signals.min_worker_busy < 0
                                ? busy
                                : std::min(signals.min_worker_busy, busy);
  }
  if (auto change = st.offload.decide(signals)) {
    caf::aout(self) << "router: placement: " << *change << std::endl;
    st.summary.placement_changes = st.offload.changes();
    st.summary.placement_last_change = *change;
    st.summary.gpu_share = st.offload.share();
  }
  st.summary.placement_reason = st.offload.last_reason();
  if (st.period.acks < st.offload.limits().min_acks && st.trainer_gpu)
    return; // too little seen: the period goes on
  st.period = offload_signals{};
  st.period_started_ns = now;
  st.busy_at_period = st.busy_total;
}

void maybe_finish(router_ptr self) {
  auto& st = self->state;
  if (!st.run_requested || !st.run_promise.pending())
    return;
  if (st.failure) {
    st.run_promise.deliver(st.failure);
    return;
  }
  bool drained = st.leases.empty() && st.orphans.empty();
  if (!st.stopping.empty() && drained)
    st.summary.stopped_by = st.stopping;
  if ((st.source_done && st.pending.empty() && drained && !st.trainer_lost_at)
      || (!st.stopping.empty() && drained)) {
    if (st.trace) { // a trace still recording when the run ends is kept
      auto done = finish_trace(self);
      caf::aout(self) << "router: "
                      << (done ? *done : describe(done.error())) << std::endl;
    }
    st.summary.wall_ns = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(clock_type::now()
                                                           - st.run_started)
        .count());
    if (st.window) {
      st.summary.window = st.window->size();
      st.summary.window_max = st.window->max();
      st.summary.window_changes = st.window->changes();
      st.summary.window_last_change = st.window->last_change();
    }
    st.run_promise.deliver(st.summary);
  }
}

void fetch(router_ptr self) {
  auto& st = self->state;
  if (st.fetching || st.source_done)
    return;
  st.fetching = true;
  // Pull a window's worth at a time: few messages, O(window) memory.
  self->request(st.source, caf::infinite, next_atom::value,
                st.window ? st.window->size() : st.spec.window)
    .then(
      [=](std::vector<work_item>& items) {
        auto& s = self->state;
        s.fetching = false;
        if (items.empty())
          s.source_done = true;
        for (auto& item : items)
          s.pending.push_back(std::move(item));
        dispatch(self);
        maybe_finish(self);
      },
      [=](caf::error& err) {
        self->state.failure = make_error(
          errc::run_failure, "the source failed: " + describe(err));
        maybe_finish(self);
      });
}

// Sends `item`, still leased under its batch id, to a live worker other
// than `exclude`; parks it as an orphan if there is none.
void relay(router_ptr self, work_item item, size_t exclude) {
  auto& st = self->state;
  auto samples = static_cast<uint32_t>(item.sample_ids.size());
  auto now = st.now_ns();
  auto other = st.table.pick(samples, now, exclude);
  auto l = st.leases.find(item.batch_id);
  if (l == st.leases.end())
    return; // acknowledged meanwhile: nothing to do
  if (!other) {
    l->second.worker = routing_table::none;
    st.orphans.push_back(std::move(item));
    return;
  }
  st.table.on_lease(*other, samples);
  l->second.worker = *other;
  l->second.leased_ns = now;
  ++st.summary.batches_released;
  self->send(st.workers[*other], std::move(item), st.trainer);
}

// A worker died or hung: nothing more goes to it, and every batch it held
// goes to another worker at once. If its batch still reaches the trainer
// (sent before it died), the trainer trains on the first copy and drops
// the other by batch id.
void lose_worker(router_ptr self, size_t index, const std::string& why) {
  auto& st = self->state;
  if (!st.table.workers()[index].alive)
    return;
  st.table.remove_worker(index);
  st.summary.lost_workers.push_back(st.table.workers()[index].name);
  std::vector<work_item> held;
  for (auto& [id, l] : st.leases)
    if (l.worker == index)
      held.push_back(l.item);
  caf::aout(self) << "router: worker '" << st.table.workers()[index].name
                  << "' lost (" << why << "); re-leasing " << held.size()
                  << " batch(es)" << std::endl;
  for (auto& item : held)
    relay(self, std::move(item), index);
}

void dispatch(router_ptr self) {
  auto& st = self->state;
  // Orphans first: they are leased already, waiting for a live worker.
  for (size_t n = st.orphans.size(); n > 0 && st.table.alive_workers() > 0;
       --n) {
    auto item = std::move(st.orphans.front());
    st.orphans.pop_front();
    relay(self, std::move(item), routing_table::none);
  }
  // Nothing moves before `run`: workers that join first would otherwise get
  // the first leases before the others have joined.
  if (!st.run_requested || !st.trainer || !st.window || st.paused
      || !st.stopping.empty())
    return;
  while (st.leases.size() < st.window->size()) {
    if (st.pending.empty()) {
      fetch(self);
      return;
    }
    if (st.resumed.contains(st.pending.front().batch_id)) {
      st.pending.pop_front(); // the checkpoint has it: already trained on
      ++st.summary.batches_resumed;
      continue;
    }
    auto samples = static_cast<uint32_t>(st.pending.front().sample_ids.size());
    auto now = st.now_ns();
    auto index = st.table.pick(samples, now);
    if (!index)
      return; // no worker qualifies (none joined; local-only: none local)
    auto item = std::move(st.pending.front());
    st.pending.pop_front();
    st.table.on_lease(*index, samples);
    ++st.summary.batches_leased;
    item.blur_on_trainer = st.trainer_gpu && st.offload.next_on_trainer();
    if (item.blur_on_trainer)
      ++st.summary.batches_gpu_blur;
    self->send(st.workers[*index], item, st.trainer);
    st.leases.emplace(item.batch_id,
                      lease{std::move(item), *index, now, false});
  }
}

// Leases again, to another worker, every batch older than hedge-factor
// times the median of recent batch times. The first copy to reach the
// trainer is trained on; it drops the other by batch id.
void hedge_stragglers(router_ptr self) {
  auto& st = self->state;
  if (st.spec.hedge_factor <= 0.0 || st.recent_ns.size() < 8
      || st.workers.size() < 2)
    return;
  std::vector<uint64_t> sorted{st.recent_ns.begin(), st.recent_ns.end()};
  std::nth_element(sorted.begin(), sorted.begin() + sorted.size() / 2,
                   sorted.end());
  auto limit = static_cast<uint64_t>(st.spec.hedge_factor
                                     * static_cast<double>(
                                       sorted[sorted.size() / 2]));
  auto now = st.now_ns();
  for (auto& [id, l] : st.leases) {
    if (l.hedged || l.worker == routing_table::none
        || now - l.leased_ns <= limit)
      continue;
    auto samples = static_cast<uint32_t>(l.item.sample_ids.size());
    auto other = st.table.pick(samples, now, l.worker);
    if (!other)
      continue;
    l.hedged = true;
    st.table.on_lease(*other, samples);
    ++st.summary.batches_hedged;
    self->send(st.workers[*other], l.item, st.trainer);
  }
}

// The trainer died. One that checkpoints may come back with --resume:
// everything it had not saved (in flight, or acked since its last
// checkpoint) goes back to the front of the queue, and nothing moves until
// a trainer says hello. Otherwise the run ends with the reason.
void lose_trainer(router_ptr self, const std::string& why) {
  auto& st = self->state;
  if (!st.trainer_checkpoints) {
    if (!st.failure)
      st.failure = make_error(errc::run_failure,
                              "the trainer exited before the run ended"
                                + (why.empty() ? "" : ": " + why));
    return;
  }
  std::vector<work_item> redo;
  for (auto& [id, item] : st.unsaved)
    redo.push_back(std::move(item));
  for (auto& [id, l] : st.leases)
    redo.push_back(std::move(l.item));
  for (auto& item : st.orphans)
    redo.push_back(std::move(item));
  st.unsaved.clear();
  st.leases.clear();
  st.orphans.clear();
  st.recent_ns.clear();
  std::sort(redo.begin(), redo.end(), [](auto& a, auto& b) {
    return a.batch_id < b.batch_id;
  });
  st.pending.insert(st.pending.begin(), std::make_move_iterator(redo.begin()),
                    std::make_move_iterator(redo.end()));
  st.trainer = nullptr;
  st.window.reset();
  st.trainer_lost_at = st.now_ns();
  caf::aout(self) << "router: the trainer exited before the run ended"
                  << (why.empty() ? "" : ": " + why) << "; " << redo.size()
                  << " batch(es) not in its checkpoint wait for it; waiting up "
                     "to "
                  << st.spec.no_worker_timeout.count()
                  << " ms (cluster.join-timeout) for a trainer started with "
                     "--resume"
                  << std::endl;
}

// Workers silent past cluster.heartbeat-timeout (beyond their current
// item) are lost, as if they had died: a hung process keeps its connection
// open, so no down message would come. With no live worker for
// cluster.join-timeout, the run fails.
void check_heartbeats(router_ptr self) {
  auto& st = self->state;
  auto now = st.now_ns();
  auto limit = static_cast<uint64_t>(
    std::chrono::duration_cast<std::chrono::nanoseconds>(
      st.spec.heartbeat_timeout)
      .count());
  for (size_t i = 0; i < st.table.workers().size(); ++i) {
    if (!st.table.workers()[i].alive)
      continue;
    auto silent = st.table.silence_ns(i, now);
    if (silent > limit)
      lose_worker(self, i,
                  "silent for " + std::to_string(silent / 1000000)
                    + " ms beyond its current item, over "
                      "cluster.heartbeat-timeout ("
                    + std::to_string(st.spec.heartbeat_timeout.count())
                    + " ms)");
  }
  auto timeout_ns = static_cast<uint64_t>(
    std::chrono::duration_cast<std::chrono::nanoseconds>(
      st.spec.no_worker_timeout)
      .count());
  if (st.trainer_lost_at && now - *st.trainer_lost_at > timeout_ns
      && !st.failure) {
    st.failure = make_error(errc::run_failure,
                            "the trainer exited before the run ended and "
                            "none rejoined within cluster.join-timeout ("
                              + std::to_string(
                                st.spec.no_worker_timeout.count())
                              + " ms)");
    maybe_finish(self);
  }
  if (st.table.alive_workers() > 0 || st.workers.empty()) {
    st.no_workers_since.reset();
    return;
  }
  if (!st.no_workers_since) {
    st.no_workers_since = now;
    caf::aout(self) << "router: no live worker left; waiting up to "
                    << st.spec.no_worker_timeout.count()
                    << " ms (cluster.join-timeout) for one to join"
                    << std::endl;
  } else if (now - *st.no_workers_since > timeout_ns && !st.failure) {
    st.failure = make_error(errc::run_failure,
                            "every worker was lost and none joined within "
                            "cluster.join-timeout ("
                              + std::to_string(
                                st.spec.no_worker_timeout.count())
                              + " ms)");
    maybe_finish(self);
  }
}

router_actor::behavior_type router_fn(router_ptr self, source_actor source,
                                      router_spec spec,
                                      uint64_t expected_samples,
                                      uint64_t batch_bytes) {
  auto& st = self->state;
  st.spec = spec;
  auto stale_after = std::chrono::duration_cast<std::chrono::nanoseconds>(
    3 * spec.report_interval);
  st.table = routing_table{spec.policy,
                           static_cast<uint64_t>(stale_after.count()), 0};
  st.limits.initial = spec.window;
  st.limits.max_bytes = spec.max_inflight_bytes;
  st.limits.batch_bytes = batch_bytes;
  st.limits.idle_target = spec.idle_target;
  st.source = std::move(source);
  st.summary.policy = to_string(spec.policy);
  st.offload = offload_controller{spec.placement};
  st.summary.placement = to_string(spec.placement);
  st.summary.gpu_share = st.offload.share();
  st.summary.placement_reason = st.offload.last_reason();
  st.summary.samples_expected = expected_samples;
  // A worker that dies loses its leases to the others; a trainer that dies
  // ends the run with its reason.
  self->set_down_handler([=](caf::down_msg& msg) {
    auto& s = self->state;
    if (s.run_requested && !s.run_promise.pending())
      return; // the run is over: actors exiting now are the shutdown
    if (auto i = s.worker_index.find(msg.source); i != s.worker_index.end()) {
      lose_worker(self, i->second,
                  msg.reason ? "it exited: " + describe(msg.reason)
                             : std::string{"it exited"});
      dispatch(self);
      maybe_finish(self);
      return;
    }
    auto why = msg.reason ? describe(msg.reason) : std::string{};
    if (msg.source == caf::actor_cast<caf::actor_addr>(s.trainer)) {
      lose_trainer(self, why);
      maybe_finish(self);
      return;
    }
    std::string who = "an actor";
    if (!s.failure)
      s.failure = make_error(errc::run_failure,
                             who + " exited before the run ended"
                               + (msg.reason ? ": " + describe(msg.reason)
                                             : std::string{}));
    maybe_finish(self);
  });
  return {
    [=](join_atom, worker_actor& worker, std::string& name,
        std::string& host) {
      auto& s = self->state;
      self->monitor(worker);
      s.worker_index.emplace(caf::actor_cast<caf::actor_addr>(worker),
                             s.table.add_worker(std::move(name),
                                                std::move(host), s.now_ns()));
      s.workers.push_back(std::move(worker));
      s.busy_total.resize(s.workers.size(), 0);
      s.busy_at_period.resize(s.workers.size(), 0);
      dispatch(self);
    },
    [=](credit_atom, trainer_actor& trainer, trainer_hello& hello) {
      auto& s = self->state;
      if (s.trainer)
        return; // one trainer per run (see docs/architecture.md)
      if (s.trainer_lost_at && !hello.resumed) {
        // Its empty ledger would count everything trained before as
        // missing, and its model never saw it: refuse, keep waiting.
        caf::aout(self) << "router: a trainer joined without --resume "
                           "after the first one was lost; refused (start "
                           "it with --resume and the same "
                           "trainer.checkpoint-dir)"
                        << std::endl;
        self->send_exit(trainer, caf::exit_reason::user_shutdown);
        return;
      }
      if (s.trainer_lost_at)
        caf::aout(self) << "router: a trainer rejoined from its checkpoint "
                           "(batches below "
                        << hello.done_below << " and "
                        << hello.done_ids.size() << " more trained)"
                        << std::endl;
      s.trainer_lost_at.reset();
      s.trainer_checkpoints = hello.checkpoints;
      s.trainer_gpu = hello.gpu_blur;
      if (s.spec.placement != blur_placement::cpu)
        caf::aout(self) << "router: pipeline.placement = "
                        << to_string(s.spec.placement) << "; the trainer "
                        << (hello.gpu_blur ? "blurs on its GPU"
                                           : "has no CUDA blur stage: the "
                                             "workers blur everything")
                        << std::endl;
      s.trainer = std::move(trainer);
      s.trainer_heard_ns = s.now_ns();
      self->monitor(s.trainer);
      s.table.set_trainer_host(hello.host);
      s.resumed.restore(hello.done_below, hello.done_ids);
      s.limits.min = hello.prefetch;
      s.window.emplace(s.limits);
      dispatch(self);
    },
    [=](ack_atom, uint64_t batch_id, uint64_t wait_ns, uint64_t step_ns,
        uint64_t backlog) {
      auto& s = self->state;
      s.trainer_heard_ns = s.now_ns();
      auto i = s.leases.find(batch_id);
      if (i == s.leases.end())
        return; // a late answer for a batch already acknowledged
      s.recent_ns.push_back(s.now_ns() - i->second.leased_ns);
      if (s.recent_ns.size() > hedge_history)
        s.recent_ns.pop_front();
      if (s.trace) {
        auto now = s.now_ns();
        auto step_start = now - std::min(now, step_ns);
        s.trace->span("trainer", "data wait",
                      step_start - std::min(step_start, wait_ns), wait_ns,
                      batch_id);
        s.trace->span("trainer", "step", step_start, step_ns, batch_id);
      }
      if (s.trainer_checkpoints) // until its next checkpoint has it
        s.unsaved.emplace(batch_id, std::move(i->second.item));
      s.leases.erase(i);
      ++s.summary.batches_acked;
      s.period.wait_ns += wait_ns;
      s.period.step_ns += step_ns;
      ++s.period.acks;
      uint64_t queued = 0;
      for (auto& w : s.table.workers())
        queued += w.outstanding_items;
      if (s.window)
        s.window->on_ack(wait_ns, step_ns, queued, backlog);
      dispatch(self);
      maybe_finish(self);
    },
    [=](done_atom, const worker_actor& worker, const worker_report& report) {
      auto& s = self->state;
      auto i = s.worker_index.find(caf::actor_cast<caf::actor_addr>(worker));
      if (i == s.worker_index.end() || !s.table.workers()[i->second].alive)
        return; // unknown, or lost already: its work went elsewhere
      s.busy_total[i->second] = report.busy_total_ns;
      if (report.samples > 0) {
        auto now = s.now_ns();
        s.table.on_done(i->second, report.samples, report.busy_ns,
                        report.mailbox_depth, now);
        if (s.trace)
          s.trace->span(s.table.workers()[i->second].name, "batch",
                        now - std::min(now, report.busy_ns), report.busy_ns,
                        report.batch_id);
      }
      else
        s.table.on_report(i->second, report.mailbox_depth, s.now_ns());
      dispatch(self); // local-only may have been waiting for a worker
    },
    [=](status_atom) { return status_of(self); },
    [=](set_atom, const std::string& key, const std::string& value) {
      return set_option(self, key, value);
    },
    [=](control_atom, const std::string& what, const std::string& arg) {
      return control(self, what, arg);
    },
    [=](saved_atom) {
      self->state.trainer_heard_ns = self->state.now_ns();
      self->state.unsaved.clear(); // all acked so far is in the checkpoint
    },
    [=](tick_atom) {
      auto& s = self->state;
      if (!s.run_promise.pending())
        return; // the run is over: stop ticking
      check_heartbeats(self);
      hedge_stragglers(self);
      judge_placement(self);
      dispatch(self);
      self->delayed_send(self, s.spec.report_interval, tick_atom::value);
    },
    [=](run_atom) -> caf::result<router_summary> {
      auto& s = self->state;
      s.run_started = clock_type::now();
      s.run_promise = self->template make_response_promise<router_summary>();
      s.run_requested = true;
      s.period_started_ns = s.now_ns();
      self->delayed_send(self, s.spec.report_interval, tick_atom::value);
      dispatch(self);
      maybe_finish(self);
      return s.run_promise;
    },
  };
}

} // namespace stoker::detail

namespace stoker {

router_actor spawn_router(caf::actor_system& sys, source_actor source,
                          const router_spec& spec, uint64_t expected_samples,
                          uint64_t batch_bytes) {
  return sys.spawn(detail::router_fn, std::move(source), spec,
                   expected_samples, batch_bytes);
}

} // namespace stoker
