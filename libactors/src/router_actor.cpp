#include <chrono>
#include <deque>
#include <map>
#include <unordered_set>

#include <caf/actor_ostream.hpp>
#include <caf/stateful_actor.hpp>

#include "stoker/actors.hpp"
#include "stoker/errors.hpp"
#include "stoker/routing.hpp"

namespace stoker {

namespace {

using clock_type = std::chrono::steady_clock;

struct router_state {
  routing_table table{routing_policy::least_loaded};
  source_actor source;
  std::vector<worker_actor> workers;
  std::map<caf::actor_addr, size_t> worker_index;
  trainer_actor trainer;
  uint32_t credits = 0; // batches the trainer can still take
  uint32_t window = 1;
  std::deque<work_item> pending; // pulled from the source, not yet leased
  bool fetching = false;
  bool source_done = false;
  std::unordered_set<uint64_t> leases; // batch ids leased, not yet acked
  router_summary summary;
  clock_type::time_point started = clock_type::now();
  caf::typed_response_promise<router_summary> run_promise;
  bool run_requested = false;
  caf::error failure;
  static constexpr const char* name = "stoker.router";
};

using router_ptr = router_actor::stateful_pointer<router_state>;

void maybe_finish(router_ptr self) {
  auto& st = self->state;
  if (!st.run_requested || !st.run_promise.pending())
    return;
  if (st.failure) {
    st.run_promise.deliver(st.failure);
    return;
  }
  if (st.source_done && st.pending.empty() && st.leases.empty()) {
    st.summary.wall_ns = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(clock_type::now()
                                                           - st.started)
        .count());
    st.run_promise.deliver(st.summary);
  }
}

void dispatch(router_ptr self);

void fetch(router_ptr self) {
  auto& st = self->state;
  if (st.fetching || st.source_done)
    return;
  st.fetching = true;
  // Pull a window's worth at a time: few messages, O(window) memory.
  self->request(st.source, caf::infinite, next_atom::value, st.window)
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

void dispatch(router_ptr self) {
  auto& st = self->state;
  // Nothing moves before `run`: workers that join first would otherwise get
  // the first leases before the others have joined.
  if (!st.run_requested)
    return;
  while (st.credits > 0 && st.leases.size() < st.window
         && !st.workers.empty() && st.trainer) {
    if (st.pending.empty()) {
      fetch(self);
      return;
    }
    auto item = std::move(st.pending.front());
    st.pending.pop_front();
    auto samples = static_cast<uint32_t>(item.sample_ids.size());
    auto index = *st.table.pick(samples);
    st.table.on_lease(index, samples);
    st.leases.insert(item.batch_id);
    --st.credits;
    ++st.summary.batches_leased;
    self->send(st.workers[index], std::move(item), st.trainer);
  }
}

router_actor::behavior_type router_fn(router_ptr self, source_actor source,
                                      routing_policy policy, uint32_t window,
                                      uint64_t expected_samples) {
  auto& st = self->state;
  st.table = routing_table{policy};
  st.source = std::move(source);
  st.window = window;
  st.summary.policy = to_string(policy);
  st.summary.samples_expected = expected_samples;
  // A worker or trainer that dies ends the run with its reason (re-leasing
  // to survivors is the fault-tolerance feature's job).
  self->set_down_handler([=](caf::down_msg& msg) {
    auto& s = self->state;
    std::string who = "an actor";
    if (msg.source == caf::actor_cast<caf::actor_addr>(s.trainer))
      who = "the trainer";
    else if (auto i = s.worker_index.find(msg.source);
             i != s.worker_index.end())
      who = "worker '" + s.table.workers()[i->second].name + "'";
    if (!s.failure)
      s.failure = make_error(errc::run_failure,
                             who + " exited before the run ended"
                               + (msg.reason ? ": " + describe(msg.reason)
                                             : std::string{}));
    maybe_finish(self);
  });
  return {
    [=](join_atom, worker_actor& worker, std::string& name) {
      auto& s = self->state;
      self->monitor(worker);
      s.worker_index.emplace(caf::actor_cast<caf::actor_addr>(worker),
                             s.table.add_worker(std::move(name)));
      s.workers.push_back(std::move(worker));
      dispatch(self);
    },
    [=](credit_atom, trainer_actor& trainer, uint32_t n) {
      auto& s = self->state;
      if (!s.trainer) {
        s.trainer = std::move(trainer);
        self->monitor(s.trainer);
      }
      s.credits += n;
      dispatch(self);
    },
    [=](ack_atom, uint64_t batch_id) {
      auto& s = self->state;
      if (s.leases.erase(batch_id) > 0)
        ++s.summary.batches_acked;
      ++s.credits; // consuming a batch frees one buffer slot
      dispatch(self);
      maybe_finish(self);
    },
    [=](done_atom, const worker_actor& worker, const worker_report& report) {
      auto& s = self->state;
      auto i = s.worker_index.find(caf::actor_cast<caf::actor_addr>(worker));
      if (i != s.worker_index.end())
        s.table.on_done(i->second, report.samples, report.busy_ns,
                        report.mailbox_depth);
    },
    [=](run_atom) -> caf::result<router_summary> {
      auto& s = self->state;
      s.started = clock_type::now();
      s.run_promise = self->template make_response_promise<router_summary>();
      s.run_requested = true;
      dispatch(self);
      maybe_finish(self);
      return s.run_promise;
    },
  };
}

} // namespace

router_actor spawn_router(caf::actor_system& sys, source_actor source,
                          routing_policy policy, uint32_t window,
                          uint64_t expected_samples) {
  return sys.spawn(router_fn, std::move(source), policy, window,
                   expected_samples);
}

} // namespace stoker
