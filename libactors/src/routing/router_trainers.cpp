#include <algorithm>


#include "stoker/errors.hpp"
#include "routing/router_state.hpp"
#include "core/system_log.hpp"

// The router's trainers: each rank's hello, its acks, and what losing one
// does to the run (router_actor.cpp is the rest of the router).

namespace stoker::detail {

// A trainer died. A lone one that checkpoints may come back with --resume
// (the book puts what it had not saved back in the queue, and nothing
// moves until a trainer says hello); otherwise the run ends with the
// reason. In a group of several ranks the others cannot step without it:
// the run ends at once, naming it, before they time out in a collective.
void lose_trainer(router_ptr self, uint32_t rank, const std::string& why,
                  const std::string& event) {
  auto& st = self->state;
  auto& slot = st.trainers[rank];
  if (st.world() > 1 && st.scope == router_scope::cluster
      && st.book.trainer_checkpoints()) {
    // The group goes back to its last checkpoint: every rank forms it
    // again (the others are stopped: they would wait in a collective), and
    // everything the checkpoint does not hold waits for them.
    for (uint32_t r = 0; r < st.trainers.size(); ++r) {
      auto& t = st.trainers[r];
      if (t.actor && r != rank) {
        st.retired.insert(caf::actor_cast<caf::actor_addr>(t.actor));
        self->send_exit(t.actor, caf::exit_reason::user_shutdown);
      }
      t.actor = nullptr;
      t.given = caf::actor_addr{};
      t.resume_seq = 0;
    }
    st.window.reset();
    auto waiting = st.book.lose_trainer(st.now_ns());
    log_to(self->system(), log_level::warning)
      << "router: trainer rank " << rank << " on node '"
      << slot.node << "' " << event
      << (why.empty() ? std::string{} : " (" + why + ")")
      << "; the group of " << st.world()
      << " goes back to its last checkpoint: " << waiting
      << " batch(es) wait; waiting up to "
      << st.spec.no_worker_timeout.count()
      << " ms (cluster.join-timeout) for every rank (start "
         "the lost trainer's node again, with --resume)";
    return;
  }
  if (st.world() > 1) {
    if (!st.failure)
      st.failure = make_error(
        errc::run_failure,
        "trainer rank " + std::to_string(rank) + " on node '" + slot.node
          + "' " + event
          + (why.empty() ? std::string{} : " (" + why + ")") + "; the other "
          + std::to_string(st.world() - 1)
          + " rank(s) of the data-parallel group cannot step without it");
    log_to(self->system(), log_level::error)
      << "router: " << describe(st.failure);
    return;
  }
  auto reason = "the trainer " + event
                + (why.empty() ? std::string{} : ": " + why);
  if (st.scope == router_scope::local) {
    // Nothing can restart it in this process (a restarted local run with
    // --resume continues from its checkpoint).
    if (!st.failure)
      st.failure = make_error(errc::run_failure, reason);
    return;
  }
  if (!st.book.trainer_checkpoints()) {
    if (!st.failure)
      st.failure = make_error(errc::run_failure, reason);
    return;
  }
  auto waiting = st.book.lose_trainer(st.now_ns());
  slot.actor = nullptr;
  slot.given = caf::actor_addr{};
  st.window.reset();
  log_to(self->system())
    << "router: " << reason << "; " << waiting
    << " batch(es) not in its checkpoint wait for it; waiting "
       "up to "
    << st.spec.no_worker_timeout.count()
    << " ms (cluster.join-timeout) for a trainer started with "
       "--resume";
}

// A trainer said hello: one of each rank, or (a group of one) one
// restarted with --resume after the first was lost.
void trainer_joined(router_ptr self, trainer_actor trainer,
                    const trainer_hello& hello) {
  auto& st = self->state;
  if (hello.world != st.world() || hello.rank >= st.world()) {
    log_to(self->system(), log_level::warning)
      << "router: refused a trainer of node '" << hello.node
      << "' as rank " << hello.rank << " of " << hello.world
      << "; expected a rank below the group's size "
      << st.world();
    self->send_exit(trainer, caf::exit_reason::user_shutdown);
    return;
  }
  auto& slot = st.trainers[hello.rank];
  if (slot.actor)
    return; // that rank is taken (a second hello: ignored)
  if (st.world() == 1 && st.book.trainer_lost_at() && !hello.resumed) {
    // Its empty ledger would count everything trained before as missing,
    // and its model never saw it: refuse, keep waiting.
    log_to(self->system(), log_level::warning)
      << "router: a trainer joined without --resume after "
         "the first one was lost; refused (start it with "
         "--resume and the same trainer.checkpoint-dir)";
    self->send_exit(trainer, caf::exit_reason::user_shutdown);
    return;
  }
  if (st.journal.resumed && st.journal.start.acked_batches > 0
      && hello.done_below == 0 && hello.done_ids.empty()) {
    // The run's journal says batches were trained: a trainer that trained
    // none would count them missing, and its model never saw them.
    log_to(self->system(), log_level::warning)
      << "router: refused trainer of node '" << hello.node
      << "': the run in cluster.state-dir = "
      << st.journal.dir << " has "
      << st.journal.start.acked_batches
      << " acknowledged batch(es) and this trainer trained "
         "none; expected the trainer that ran them (or one "
         "started with --resume from its checkpoint)";
    self->send_exit(trainer, caf::exit_reason::user_shutdown);
    return;
  }
  if (st.journal.resumed && hello.resumed)
    log_to(self->system()) << "router: trainer of node '" << hello.node
                           << "' is back (batches below " << hello.done_below
                           << " and " << hello.done_ids.size()
                           << " more trained): the run goes on";
  if (st.world() == 1 && st.book.trainer_lost_at())
    log_to(self->system())
      << "router: a trainer rejoined from its checkpoint "
         "(batches below "
      << hello.done_below << " and " << hello.done_ids.size()
      << " more trained)";
  if (st.world() == 1)
    st.book.trainer_joined(hello.checkpoints, hello.done_below,
                           hello.done_ids);
  slot.checkpoints = hello.checkpoints;
  slot.resume_seq = hello.resume_seq;
  st.book.set_trainer_host(hello.rank, hello.host);
  slot.gpu = hello.gpu_blur;
  slot.node = hello.node;
  slot.host = hello.host;
  if (st.spec.placement != blur_placement::cpu)
    log_to(self->system()) << "router: pipeline.placement = "
                           << to_string(st.spec.placement) << "; the trainer "
                           << (hello.gpu_blur ? "blurs on its GPU"
                                              : "has no CUDA blur stage: the "
                                                "workers blur everything");
  slot.actor = std::move(trainer);
  slot.heard_ns = st.now_ns();
  if (slot.given != caf::actor_cast<caf::actor_addr>(slot.actor))
    self->monitor(slot.actor); // not watched since its group_spec
  slot.given = caf::actor_cast<caf::actor_addr>(slot.actor);
  std::vector<std::string> hosts;
  for (auto& t : st.trainers)
    hosts.push_back(t.host);
  st.table.set_trainer_hosts(std::move(hosts));
  slot.prefetch = hello.prefetch;
  st.open_window();
  if (st.world() > 1) {
    log_to(self->system())
      << "router: trainer rank " << hello.rank << " of "
      << st.world() << " (node '" << hello.node << "') is here"
      << (hello.resumed ? " from the group's checkpoint" : "");
    if (st.group_complete()) {
      // Rank 0's checkpoints are the group's (it writes them).
      std::vector<uint64_t> resume_seq;
      for (auto& t : st.trainers)
        resume_seq.push_back(t.resume_seq);
      st.book.group_joined(st.trainers[0].checkpoints, std::move(resume_seq));
    }
  }
  dispatch(self);
}

void on_ack(router_ptr self, const batch_ack& ack) {
  auto& st = self->state;
  auto now = st.now_ns();
  if (ack.rank >= st.trainers.size())
    return; // not of this group
  auto& slot = st.trainers[ack.rank];
  slot.heard_ns = now;
  auto samples_before = st.book.counters().acked_samples;
  auto took = st.book.ack(ack.batch_id, now);
  if (!took)
    return; // a late answer for a batch acknowledged already
  ++slot.acked;
  st.lease_to_ack.add(*took);
  if (st.summary.first_ack_ns == 0 && st.run_requested) {
    st.summary.first_ack_ns = std::max<uint64_t>(
      1, static_cast<uint64_t>(
           std::chrono::duration_cast<std::chrono::nanoseconds>(
             clock_type::now() - st.run_started)
             .count()));
    st.summary.first_ack_samples = st.book.counters().acked_samples
                                   - samples_before;
  }
  if (!st.journal.dir.empty() && st.acked.insert(ack.batch_id)) {
    ++st.journal.start.acked_batches;
    st.journal.start.acked_samples += st.book.counters().acked_samples
                                      - samples_before;
    st.journal_dirty = true;
  }
  if (ack.step_ns > 0) { // trained on (not rejected)
    // The same weight as the routing table's rates: a few steps settle it.
    auto mix = [&](double& avg, uint64_t x) {
      avg = slot.measured ? routing_table::rate_smoothing
                                * static_cast<double>(x)
                              + (1.0 - routing_table::rate_smoothing) * avg
                          : static_cast<double>(x);
    };
    mix(slot.period_ns, ack.step_ns + ack.collective_ns);
    mix(slot.wait_ns, ack.wait_ns);
    mix(slot.collective_ns, ack.collective_ns);
    slot.measured = true;
  }
  if (st.trace) {
    auto lane = st.world() > 1 ? "trainer " + std::to_string(ack.rank)
                             : std::string{"trainer"};
    auto step_start = now - std::min(now, ack.step_ns);
    st.trace->span(lane, "data wait",
                   step_start - std::min(step_start, ack.wait_ns),
                   ack.wait_ns, ack.batch_id);
    st.trace->span(lane, "step", step_start, ack.step_ns, ack.batch_id);
  }
  st.period.wait_ns += ack.wait_ns;
  st.period.step_ns += ack.step_ns;
  st.total_wait_ns += ack.wait_ns;
  st.total_step_ns += ack.step_ns;
  ++st.period.acks;
  auto queued = st.table.outstanding_items(); // O(1): an ack per batch
  if (st.window) {
    window_ack seen;
    seen.wait_ns = ack.wait_ns;
    seen.step_ns = ack.step_ns;
    seen.collective_ns = ack.collective_ns;
    seen.queued_items = queued;
    seen.trainer_backlog = ack.backlog;
    seen.live_workers = st.table.alive_workers();
    seen.rank = ack.rank;
    st.window->on_ack(seen);
  }
  dispatch(self);
  maybe_finish(self);
}

} // namespace stoker::detail
