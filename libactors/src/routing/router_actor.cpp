#include "routing/router_actor.hpp"

#include <algorithm>


#include "stoker/errors.hpp"
#include "routing/router_state.hpp"
#include "core/system_log.hpp"

// The router actor: glue over the lease book (which item is where), the
// routing table (which worker), the in-flight window (how many) and the
// offload controller (CPU or GPU blur). What the console asks of it lives
// in router_console.cpp; the state both use in router_state.hpp.

namespace stoker::detail {

// Long enough for a few acks and worker items at the article's rates.
constexpr uint64_t placement_period_ns = 1'000'000'000;

uint64_t ns_of(std::chrono::milliseconds d) {
  return static_cast<uint64_t>(
    std::chrono::duration_cast<std::chrono::nanoseconds>(d).count());
}

router_summary router_state::current_summary() const {
  auto out = summary;
  auto& c = book.counters();
  out.lease_to_ack_ms_p50 = lease_to_ack.percentile_ms(50);
  out.lease_to_ack_ms_p99 = lease_to_ack.percentile_ms(99);
  out.batches_leased = c.leased;
  out.batches_acked = c.acked;
  out.batches_hedged = c.hedged;
  out.batches_released = c.released;
  out.batches_resumed = c.resumed;
  out.batches_gpu_blur = c.gpu_blur;
  out.samples_acked = c.acked_samples;
  out.policy = to_string(table.policy());
  out.ranks.clear();
  for (auto& t : trainers)
    out.ranks.push_back(rank_summary{t.node, t.acked});
  if (window) { // the group's: every rank's
    auto& w = *window;
    out.window = w.size();
    out.window_max = w.max();
    out.window_changes = w.changes();
    out.window_last_change = w.last_change();
  }
  return out;
}

void router_state::offer_series(bool last) {
  auto t = std::chrono::duration<double>(clock_type::now() - run_started);
  uint64_t busy = 0;
  for (auto b : busy_total)
    busy += b;
  series.offer(t.count(), book.counters().acked_samples, total_wait_ns,
               total_step_ns, window ? window->size() : 0, busy, last);
}

bool router_state::group_complete() const {
  return !trainers.empty()
         && std::all_of(trainers.begin(), trainers.end(),
                        [](auto& t) { return static_cast<bool>(t.actor); });
}

void router_state::open_window() {
  if (window || !group_complete())
    return;
  auto l = limits;
  l.ranks = world();
  for (auto& t : trainers)
    l.min = std::max(l.min, t.prefetch);
  window.emplace(l);
}

bool router_state::all_gpu() const {
  return !trainers.empty()
         && std::all_of(trainers.begin(), trainers.end(),
                        [](auto& t) { return t.gpu; });
}

std::optional<uint32_t>
router_state::rank_of(const caf::actor_addr& addr) const {
  for (uint32_t r = 0; r < trainers.size(); ++r)
    if ((trainers[r].actor
         && caf::actor_cast<caf::actor_addr>(trainers[r].actor) == addr)
        || (trainers[r].given && trainers[r].given == addr))
      return r;
  return std::nullopt;
}

void send_leases(router_ptr self, std::vector<lease_order> orders) {
  auto& st = self->state;
  for (auto& order : orders) {
    auto rank = order.item.slot.rank;
    // Straight from the worker to the trainer of the item's rank.
    auto to = rank < st.trainers.size() ? st.trainers[rank].actor
                                        : trainer_actor{};
    self->send(st.workers[order.worker], std::move(order.item), to);
  }
}

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
  signals.trainer_gpu = st.all_gpu();
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
    log_to(self->system()) << "router: placement: " << *change;
    st.summary.placement_changes = st.offload.changes();
    st.summary.placement_last_change = *change;
    st.summary.gpu_share = st.offload.share();
  }
  st.summary.placement_reason = st.offload.last_reason();
  if (st.period.acks < st.offload.limits().min_acks && st.all_gpu())
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
  bool stopped = !st.stopping.empty() && (st.book.drained() || st.stop_now);
  if (!st.book.done() && !stopped)
    return;
  if (stopped)
    st.summary.stopped_by = st.stopping;
  if (st.trace) { // a trace still recording when the run ends is kept
    auto done = finish_trace(self);
    log_to(self->system())
      << "router: " << (done ? *done : describe(done.error()));
  }
  st.offer_series(true);
  st.summary.finished = true;
  auto summary = st.current_summary();
  summary.series = st.series.points();
  summary.wall_ns = static_cast<uint64_t>(
    std::chrono::duration_cast<std::chrono::nanoseconds>(clock_type::now()
                                                         - st.run_started)
      .count());
  st.journal.start.finished = true; // nothing left to resume
  write_journal(self, true);
  st.run_promise.deliver(summary);
}

void write_journal(router_ptr self, bool now) {
  auto& st = self->state;
  if (st.journal.dir.empty() || (!now && !st.journal_dirty))
    return;
  auto t = st.now_ns();
  if (!now && t - st.journal_written_ns < 1'000'000'000)
    return;
  auto& j = st.journal.start;
  j.acked_below = st.acked.watermark();
  j.acked_ids = st.acked.sparse();
  j.run_ns = st.journal_run_ns
             + (st.run_requested
                  ? static_cast<uint64_t>(
                    std::chrono::duration_cast<std::chrono::nanoseconds>(
                      clock_type::now() - st.run_started)
                      .count())
                  : 0);
  if (auto err = write_head_journal(st.journal.dir, j)) {
    // The run goes on; only a restart of this head would miss it.
    log_to(self->system(), log_level::warning)
      << "router: " << describe(err)
      << " (the run goes on; a head started again could not "
         "resume it)";
  }
  st.journal_dirty = false;
  st.journal_written_ns = t;
}

void fetch(router_ptr self) {
  auto& st = self->state;
  if (st.fetching || st.book.source_done())
    return;
  st.fetching = true;
  // Pull a window's worth per rank at a time: few messages, O(window)
  // memory.
  uint32_t n = st.world() * (st.window ? st.window->size() : st.spec.window);
  self->request(st.source, caf::infinite, next_atom::value,
                std::max<uint32_t>(n, 1))
    .then(
      [=](std::vector<work_item>& items) {
        self->state.fetching = false;
        self->state.book.add_pending(std::move(items));
        dispatch(self);
        maybe_finish(self);
      },
      [=](caf::error& err) {
        self->state.failure = make_error(
          errc::run_failure, "the source failed: " + describe(err));
        maybe_finish(self);
      });
}

void dispatch(router_ptr self) {
  auto& st = self->state;
  // Orphans first: they are leased already, waiting for a live worker.
  send_leases(self, st.book.relay_orphans(st.table, st.now_ns()));
  // Nothing moves before `run`: workers that join first would otherwise get
  // the first leases before the others have joined.
  // Nor before every rank is here: a batch for a rank no trainer holds
  // would wait, and the others would wait for it at their barrier.
  if (!st.run_requested || !st.group_complete() || st.paused
      || !st.stopping.empty())
    return;
  std::vector<rank_budget> budgets;
  auto window = st.window ? st.window->size() : st.spec.window;
  for (auto& t : st.trainers)
    budgets.push_back(rank_budget{
      window,
      t.measured ? static_cast<uint64_t>(t.period_ns) : uint64_t{0}});
  auto leased = st.book.lease(st.table, budgets, st.now_ns(), [&st] {
    return st.all_gpu() && st.offload.next_on_trainer();
  });
  send_leases(self, std::move(leased.orders));
  if (leased.needs_items)
    fetch(self);
}

// Fails the run (once) for `what` did not happen within
// cluster.join-timeout.
void fail_after_join_timeout(router_ptr self, const std::string& what) {
  auto& st = self->state;
  if (st.failure)
    return;
  st.failure = make_error(errc::run_failure,
                          what + " within cluster.join-timeout ("
                            + std::to_string(st.spec.no_worker_timeout.count())
                            + " ms)");
  maybe_finish(self);
}

// Workers silent past cluster.heartbeat-timeout (beyond their current
// item) are lost, as if they had died: a hung process keeps its connection
// open, so no down message would come. With no live worker for
// cluster.join-timeout, or no trainer back that long, the run fails.
void check_heartbeats(router_ptr self) {
  auto& st = self->state;
  auto now = st.now_ns();
  auto limit = ns_of(st.spec.heartbeat_timeout);
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
  auto timeout = ns_of(st.spec.no_worker_timeout);
  auto lost_at = st.book.trainer_lost_at();
  if (lost_at && now - *lost_at > timeout)
    fail_after_join_timeout(self, "the trainer exited before the run ended "
                                  "and none rejoined");
  if (st.table.alive_workers() > 0) {
    st.no_workers_since.reset();
    return;
  }
  bool none_yet = st.workers.empty();
  if (none_yet && st.scope == router_scope::local)
    return; // a local run registers its own workers
  if (st.scope == router_scope::local) { // no worker can join a local run
    if (!st.failure)
      st.failure = make_error(errc::run_failure,
                              "every worker was lost; a local run has no "
                              "other to wait for");
    maybe_finish(self);
    return;
  }
  // A cluster whose plan has no worker node (a discovered cluster of GPU
  // hosts only, before trainer hosts ran their own) waited here for ever
  // without a word.
  if (!st.no_workers_since) {
    st.no_workers_since = now;
    log_to(self->system(), log_level::warning)
      << (none_yet ? "router: no CPU worker has joined yet; waiting up to "
                   : "router: no live worker left; waiting up to ")
      << st.spec.no_worker_timeout.count()
      << " ms (cluster.join-timeout) for one to join";
  } else if (now - *st.no_workers_since > timeout) {
    fail_after_join_timeout(
      self, none_yet ? "no CPU worker joined (nothing makes batches: "
                       "cluster.nodes names no worker node, and none came "
                       "on its own)"
                     : "every worker was lost and none joined");
  }
}

router_actor::behavior_type router_fn(router_ptr self, source_actor source,
                                      router_spec spec,
                                      uint64_t expected_samples,
                                      uint64_t batch_bytes,
                                      router_scope scope,
                                      router_journal journal) {
  auto& st = self->state;
  st.spec = spec;
  st.scope = scope;
  st.journal = std::move(journal);
  if (st.journal.resumed) {
    st.acked.restore(st.journal.start.acked_below,
                     st.journal.start.acked_ids);
    st.journal_run_ns = st.journal.start.run_ns;
  }
  st.table = routing_table{spec.policy, ns_of(3 * spec.report_interval), 0};
  st.limits.initial = spec.window;
  st.limits.max_bytes = spec.max_inflight_bytes;
  st.limits.batch_bytes = batch_bytes;
  st.limits.idle_target = spec.idle_target;
  st.source = std::move(source);
  st.offload = offload_controller{spec.placement};
  st.summary.placement = to_string(spec.placement);
  st.summary.gpu_share = st.offload.share();
  st.summary.placement_reason = st.offload.last_reason();
  st.summary.samples_expected = expected_samples;
  st.summary.plan.samples_expected = expected_samples;
  st.trainers.resize(1); // a group of one until `world` says otherwise
  // A worker that dies loses its leases to the others; a trainer that dies
  // ends the run with its reason (or waits for it to resume).
  self->set_down_handler([=](caf::down_msg& msg) {
    auto& s = self->state;
    if (s.run_requested && !s.run_promise.pending())
      return; // the run is over: actors exiting now are the shutdown
    if (auto i = s.worker_index.find(msg.source); i != s.worker_index.end()) {
      worker_exited(self, i->second, msg.reason);
      dispatch(self);
      maybe_finish(self);
      return;
    }
    if (s.retired.erase(msg.source) > 0)
      return; // stopped on purpose when the group went back
    auto why = msg.reason ? describe(msg.reason) : std::string{};
    if (auto rank = s.rank_of(msg.source)) {
      lose_trainer(self, *rank, why);
      maybe_finish(self);
      return;
    }
    if (!s.failure)
      s.failure = make_error(errc::run_failure,
                             "an actor exited before the run ended"
                               + (why.empty() ? why : ": " + why));
    maybe_finish(self);
  });
  return {
    [=](worker_join& join) {
      auto& s = self->state;
      self->monitor(join.worker);
      s.worker_index.emplace(caf::actor_cast<caf::actor_addr>(join.worker),
                             s.table.add_worker(std::move(join.name),
                                                std::move(join.host),
                                                s.now_ns()));
      s.workers.push_back(std::move(join.worker));
      s.worker_memory.push_back(join.memory_bytes);
      s.busy_total.resize(s.workers.size(), 0);
      s.busy_at_period.resize(s.workers.size(), 0);
      s.last_counts.resize(s.workers.size());
      s.joined_ns.resize(s.workers.size(), s.now_ns());
      dispatch(self);
    },
    [=](credit_atom, trainer_actor& trainer, const trainer_hello& hello) {
      trainer_joined(self, std::move(trainer), hello);
    },
    [=](const group_spec& g, const trainer_actor& trainer) {
      auto& s = self->state;
      auto addr = caf::actor_cast<caf::actor_addr>(trainer);
      if (g.rank >= s.trainers.size() || !trainer
          || s.trainers[g.rank].given == addr)
        return; // its hello came first: watched already
      // Joining the group can fail before any hello (a rank that never
      // comes, a checkpoint that is not there): the router must hear of it.
      self->monitor(trainer);
      s.trainers[g.rank].given = addr;
      s.trainers[g.rank].node = g.node;
    },
    [=](const node_silent& quiet) {
      auto& s = self->state;
      if (s.run_requested && !s.run_promise.pending())
        return; // the run is over
      for (uint32_t rank = 0; rank < s.trainers.size(); ++rank) {
        auto& t = s.trainers[rank];
        if (t.node != quiet.node || (!t.actor && !t.given))
          continue;
        // It cannot say so itself: its exit, if it ever comes, is expected.
        auto addr = t.actor ? caf::actor_cast<caf::actor_addr>(t.actor)
                            : t.given;
        s.retired.insert(addr);
        if (t.actor)
          self->send_exit(t.actor, caf::exit_reason::user_shutdown);
        lose_trainer(self, rank,
                     "its node has not answered the head for "
                       + std::to_string(quiet.silent_ms)
                       + " ms, over cluster.heartbeat-timeout ("
                       + std::to_string(s.spec.heartbeat_timeout.count())
                       + " ms): hung, stopped or cut off",
                     "stopped answering");
        if (s.trainers[rank].given == addr) // a group that fails keeps it
          s.trainers[rank].given = caf::actor_addr{};
      }
      maybe_finish(self);
    },
    [=](const batch_ack& ack) { on_ack(self, ack); },
    [=](done_atom, const worker_actor& worker, const worker_report& report) {
      on_report(self, worker, report);
    },
    [=](status_atom) { return status_of(self); },
    [=](const steer_command& cmd) { return steer(self, cmd); },
    [=](const loop_stopped& m) {
      // The loop will take no more batches: the run ends here, stopped;
      // in-flight leases are never acked (not trained, not lost).
      auto& s = self->state;
      if (!s.stopping.empty() && s.stop_now)
        return;
      s.stopping = m.why;
      s.stop_now = true;
      log_to(self->system())
        << "router: trainer rank " << m.rank << ": " << m.why
        << "; the run ends, stopped";
      maybe_finish(self);
    },
    [=](const policy_change& change) { return set_policy(self, change); },
    [=](const window_change& change) { return set_window(self, change); },
    [=](saved_atom) {
      auto& s = self->state;
      for (auto& t : s.trainers) // a group of one: checkpoints only there
        t.heard_ns = s.now_ns();
      s.book.saved(); // all acked so far is in the checkpoint
      ++s.journal.start.checkpoints;
      s.journal_dirty = true;
    },
    [=](saved_atom, const std::vector<uint64_t>& next_seq) {
      auto& s = self->state;
      for (auto& t : s.trainers)
        t.heard_ns = s.now_ns();
      s.book.saved(next_seq); // rank 0 wrote the group's checkpoint
      ++s.journal.start.checkpoints;
      s.journal_dirty = true;
    },
    [=](world_atom, uint32_t world) -> caf::result<group_plan> {
      auto& s = self->state;
      if (s.run_requested)
        return make_error(errc::run_failure,
                          "the group's size came after the run started");
      auto rp = self->template make_response_promise<group_plan>();
      self->request(s.source, caf::infinite, world_atom::value, world)
        .then(
          [=](group_plan& plan) mutable {
            auto& s2 = self->state;
            s2.trainers.resize(world);
            s2.summary.samples_expected = plan.samples_expected;
            s2.summary.plan = plan;
            rp.deliver(std::move(plan));
          },
          [=](caf::error& err) mutable { rp.deliver(std::move(err)); });
      return rp;
    },
    [=](tick_atom) {
      auto& s = self->state;
      if (!s.run_promise.pending())
        return; // the run is over: stop ticking
      check_heartbeats(self);
      write_journal(self);
      s.offer_series();
      send_leases(self,
                  s.book.hedge(s.table, s.now_ns(), s.spec.hedge_factor));
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
                          uint64_t batch_bytes, router_scope scope,
                          router_journal journal) {
  return sys.spawn(detail::router_fn, std::move(source), spec,
                   expected_samples, batch_bytes, scope, std::move(journal));
}

} // namespace stoker
