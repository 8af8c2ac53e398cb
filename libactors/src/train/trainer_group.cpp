#include <algorithm>
#include <cstring>


#include "stoker/errors.hpp"
#include "data/epoch_plan.hpp"
#include "train/group_store.hpp"
#include "train/trainer_state.hpp"
#include "core/system_log.hpp"

// The trainer's data-parallel group (joining it, resuming it from rank 0's
// checkpoint) and its checkpoints, alone or as a group.

namespace stoker::detail {

checkpoint cursor_of(const trainer_state& s) {
  checkpoint c;
  c.run = s.run;
  c.step = s.stats.steps;
  c.done_below = s.consumed.watermark();
  c.done_ids = s.consumed.sparse();
  c.ledger_bits = s.ledger->pack();
  c.delivered = s.ledger->delivered();
  c.duplicates = s.ledger->duplicates();
  c.next_seq = s.next_seq;
  return c;
}

// Saves model, optimizer and data cursor; false (after quitting with the
// reason) if it cannot: going on would risk more than stopping.
bool save_checkpoint(trainer_ptr self, const router_actor& router) {
  auto& s = self->state;
  auto t0 = clock_type::now();
  auto engine_state = s.engine->save_state();
  if (!engine_state) {
    self->quit(engine_state.error());
    return false;
  }
  auto c = cursor_of(s);
  c.engine_state = std::move(*engine_state);
  if (auto err = write_checkpoint(c, s.checkpoint_dir)) {
    self->quit(err);
    return false;
  }
  // The router may forget the items acked so far: a restarted trainer
  // will not need them again.
  self->send(router, saved_atom::value);
  log_to(self->system())
    << s.line_start << "checkpoint: step " << c.step
    << " saved to "
    << checkpoint_path(s.checkpoint_dir) << " ("
    << ns_between(t0, clock_type::now()) / 1000000 << " ms)";
  return true;
}

// A group's checkpoint: every rank's cursor goes to every rank (a gloo
// all-gather); rank 0 writes them with the model and optimizer (the same
// on every rank) in one file, atomically, and tells the router how far
// each rank's sequence it holds. False (after quitting) if it cannot.
bool save_group_checkpoint(trainer_ptr self, const router_actor& router) {
  auto& s = self->state;
  auto t0 = clock_type::now();
  auto all = s.collective->all_gather_bytes(encode_checkpoint(cursor_of(s)));
  s.collective->take_wait_ns(); // saving is not a step's wait
  if (!all) {
    self->quit(all.error());
    return false;
  }
  if (s.group.rank != 0)
    return true;
  auto c = cursor_of(s);
  std::vector<uint64_t> next_seqs;
  for (auto& bytes : *all) {
    auto rank = decode_checkpoint(bytes, "a rank's cursor");
    if (!rank) {
      self->quit(rank.error());
      return false;
    }
    next_seqs.push_back(rank->next_seq);
  }
  c.ranks = std::move(*all);
  auto engine_state = s.engine->save_state();
  if (!engine_state) {
    self->quit(engine_state.error());
    return false;
  }
  c.engine_state = std::move(*engine_state);
  if (auto err = write_checkpoint(c, s.checkpoint_dir)) {
    self->quit(err);
    return false;
  }
  self->send(router, saved_atom::value, std::move(next_seqs));
  log_to(self->system())
    << s.line_start << "checkpoint: step " << c.step
    << " of "
    << s.group.world << " ranks saved to "
    << checkpoint_path(s.checkpoint_dir) << " ("
    << ns_between(t0, clock_type::now()) / 1000000 << " ms)";
  return true;
}

// When a group forms: rank 0 shares its checkpoint setting and, when the
// group resumes (rank 0 started with --resume, or the group formed again
// after a lost rank), its checkpoint; every rank takes the model, the
// optimizer and its own cursor from it. No checkpoint yet after a lost
// rank: the group starts over (the router put every item back). False
// (after quitting with the reason) if it cannot.
namespace {

bool resume_group(trainer_ptr self) {
  auto& s = self->state;
  std::string mine;
  if (s.group.rank == 0) {
    uint64_t every = s.checkpoint_dir.empty() ? 0 : s.checkpoint_every;
    mine.assign(reinterpret_cast<const char*>(&every), sizeof(every));
    bool resume = s.cfg.node.resume || s.group.generation > 0;
    if (resume && every > 0) {
      auto loaded = read_checkpoint(s.checkpoint_dir);
      if (loaded) {
        mine += encode_checkpoint(*loaded);
      } else if (s.cfg.node.resume && s.group.generation == 0) {
        self->quit(loaded.error()); // asked for, and none there
        return false;
      }
    }
  }
  auto shared = s.collective->broadcast_bytes(mine);
  if (!shared || shared->size() < sizeof(uint64_t)) {
    self->quit(shared ? make_error(errc::trainer_failure,
                                   "rank 0 sent no checkpoint setting")
                      : shared.error());
    return false;
  }
  std::memcpy(&s.group_checkpoint_every, shared->data(), sizeof(uint64_t));
  if (shared->size() == sizeof(uint64_t))
    return true; // a fresh start
  auto fail = [&](caf::error err) {
    self->quit(std::move(err));
    return false;
  };
  auto ckpt = decode_checkpoint(shared->substr(sizeof(uint64_t)),
                                "rank 0's checkpoint");
  if (!ckpt)
    return fail(ckpt.error());
  if (auto err = check_resumable(ckpt->run, s.run))
    return fail(err);
  if (ckpt->ranks.size() != s.group.world)
    return fail(make_error(
      errc::invalid_config,
      "--resume: rank 0's checkpoint holds " + std::to_string(
        ckpt->ranks.size())
        + " rank(s), the group has " + std::to_string(s.group.world)
        + "; expected the same trainers (trainer.count on every node)"));
  if (auto err = s.engine->load_state(ckpt->engine_state))
    return fail(err);
  auto mine_cursor = decode_checkpoint(ckpt->ranks[s.group.rank],
                                       "this rank's cursor");
  if (!mine_cursor)
    return fail(mine_cursor.error());
  auto& c = *mine_cursor;
  s.ledger->restore(c.ledger_bits, c.delivered, c.duplicates);
  s.consumed.restore(c.done_below, c.done_ids);
  s.stats.steps = c.step;
  s.stats.resumed_steps = c.step;
  s.stats.resumed_samples = c.delivered;
  // What the group trained before: every rank's cursor (ranks train
  // disjoint samples), not this rank's alone.
  uint64_t group_before = 0;
  for (auto& text : ckpt->ranks)
    if (auto other = decode_checkpoint(text, "a rank's cursor"))
      group_before += other->delivered - std::min(other->delivered,
                                                   other->duplicates);
  s.next_seq = c.next_seq;
  s.hello.resumed = true;
  s.hello.resume_seq = c.next_seq;
  s.hello.done_below = c.done_below;
  s.hello.done_ids = c.done_ids;
  log_to(self->system())
    << "trainer: rank " << s.group.rank << " resumed from the "
    << "group's checkpoint at step " << c.step << " ("
    << group_before << " samples trained before by the group of "
    << ckpt->ranks.size() << ", "
    << s.ledger->unique() - s.ledger->skipped()
    << " of them by this rank)";
  return true;
}

// A group whose loops resume from their state_dict()s (no rank 0 file:
// each rank has its own cursor) goes on only if every rank does, from the
// same step: a rank ahead or behind would pair other batches in the
// collective. Every rank calls it (one small all-gather); false (after
// quitting with what differs) if they do not agree.
bool agree_on_loop_resume(trainer_ptr self) {
  auto& s = self->state;
  auto mine = s.loop_resume ? std::to_string(s.stats.steps) : std::string{};
  auto all = s.collective->all_gather_bytes(mine);
  if (!all) {
    self->quit(all.error());
    return false;
  }
  bool any = std::any_of(all->begin(), all->end(),
                         [](auto& x) { return !x.empty(); });
  bool same = std::all_of(all->begin(), all->end(),
                          [&](auto& x) { return x == all->front(); });
  if (!any || same)
    return true;
  std::string ranks;
  for (size_t r = 0; r < all->size(); ++r)
    ranks += (r > 0 ? ", rank " : "rank ") + std::to_string(r)
             + ((*all)[r].empty() ? " with no state_dict()"
                                  : " at step " + (*all)[r]);
  self->quit(make_error(errc::invalid_config,
                        "the group's loops resume from state_dict()s of "
                        "different steps: "
                          + ranks
                          + "; expected every rank given its own "
                            "state_dict(), all saved after the same step"));
  return false;
}

} // namespace

// Joins the group the spec names (world > 1: blocks this trainer's own
// thread until every rank is there), then says hello to the router with
// its rank. False (after quitting with the reason) if it cannot join.
bool join_group(trainer_ptr self, group_spec g) {
  auto& s = self->state;
  auto& cfg = s.cfg;
  auto& p = cfg.pipeline;
  s.group = g;
  s.grouped = true;
  s.stats.rank = g.rank;
  s.stats.node = g.node;
  s.stats.grouped = true;
  epoch_plan plan{p.source, g.world};
  s.spec.total_steps = plan.total_steps();
  // A lone trainer may run its batches out of order: the gate counts the
  // samples of each phase (the repeats of `pad` included, the dropped
  // tail not).
  s.gate.emplace(p.source.dataset_size - plan.dropped_per_epoch()
                   + plan.padded_per_epoch(),
                 p.source.eval_size, s.gate_resumed);
  s.evaluates = p.source.eval_size > 0 && g.rank == 0;
  c10::intrusive_ptr<c10d::Store> store;
  if (g.world > 1) {
    // Resumed from a loop's state_dict(): it must be this rank's of a
    // group of this size.
    if (auto& at = s.loop_resume; at && (at->world != g.world
                                         || at->rank != g.rank)) {
      self->quit(make_error(
        errc::invalid_config,
        "trainer on node '" + g.node + "' resumes from the state_dict() of "
          + (at->world == 1 ? std::string{"a lone trainer"}
                            : "rank " + std::to_string(at->rank)
                                + " of a group of "
                                + std::to_string(at->world))
          + ", but is rank " + std::to_string(g.rank) + " of a group of "
          + std::to_string(g.world)
          + "; expected each trainer given its own rank's state_dict() of "
            "a group of the same size"));
      return false;
    }
    collective_options o;
    o.rank = g.rank;
    o.world = g.world;
    o.store = make_actor_store(self->system(),
                               caf::actor_cast<store_actor>(g.store),
                               p.trainer.collective_timeout);
    o.store_where = cfg.node.role == role_kind::local
                      ? "this process's store"
                      : "the head's store (over its CAF connection)";
    o.interface = cfg.node.cluster.bind;
    o.backend = p.trainer.backend;
    o.timeout = p.trainer.collective_timeout;
    o.generation = g.generation;
    log_to(self->system()) << "trainer: rank " << g.rank << " of " << g.world
                           << " joining the group at " << o.store_where;
    auto joined = collective_group::join(o);
    if (!joined) {
      self->quit(joined.error());
      return false;
    }
    s.collective = std::move(*joined);
    if (auto err = s.engine->join_group(s.collective)) {
      self->quit(err);
      return false;
    }
    if (!agree_on_loop_resume(self) || !resume_group(self))
      return false;
    s.collective->take_wait_ns(); // joining is start-up, not a step's wait
    store = o.store;
  } else if (s.resume_missing) {
    // A lone trainer started with --resume needs its own checkpoint.
    self->quit(s.resume_missing);
    return false;
  } else if (s.lone_resume_refused) {
    self->quit(s.lone_resume_refused);
    return false;
  }
  s.engine->group_formed(g, std::move(store));
  s.hello.rank = g.rank;
  s.hello.world = g.world;
  s.hello.node = g.node;
  self->send(s.router, credit_atom::value,
             caf::actor_cast<trainer_actor>(self), s.hello);
  return true;
}

} // namespace stoker::detail
