#include "node/membership_actor.hpp"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <iostream>
#include <map>

#include <caf/stateful_actor.hpp>

#include "stoker/errors.hpp"
#include "node/membership.hpp"
#include "core/system_log.hpp"

namespace stoker {

namespace {

struct membership_state {
  pipeline_options pipeline; // what every node runs
  std::chrono::milliseconds ping_interval{1000}; // to every node's control
  router_actor router;
  bool resumable = false; // the head journals (cluster.state-dir)
  membership members{{}};
  roster current;
  std::map<std::string, node_info> hellos; // by node name: what it said
  std::map<caf::actor_addr, std::string> names; // control -> node name
  std::vector<caf::actor> worker_controls;      // told of new trainers
  std::vector<node_row> rows;                   // every node seen
  std::vector<trainer_endpoint> trainers;
  uint32_t world = 0; // the group's size once formed (0: not yet)
  store_actor store; // where a group of several meets
  // Each rank's (node, trainer index), fixed when the group formed, and
  // the forming (generation) it last joined: a rank that comes back after
  // its group lost a rank joins the next one.
  std::vector<std::pair<std::string, uint32_t>> ranks;
  std::vector<uint32_t> rank_generation;
  uint32_t generation = 0;
  // Worker nodes wait for a trainer to connect to; `wait` for everyone.
  std::vector<caf::typed_response_promise<welcome>> waiting_for_trainer;
  std::vector<caf::typed_response_promise<roster>> waiting_for_all;
  static constexpr const char* name = "stoker.membership";
};

using membership_ptr = membership_actor::stateful_pointer<membership_state>;

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
           std::chrono::steady_clock::now().time_since_epoch())
    .count();
}

welcome welcome_of(membership_ptr self) {
  welcome w;
  w.pipeline = self->state.pipeline;
  w.router = self->state.router;
  w.trainers = self->state.trainers;
  w.resumable = self->state.resumable;
  return w;
}

void joined(membership_ptr self, const std::string& node) {
  auto& st = self->state;
  if (auto err = st.members.join(node, now_ms())) {
    log_to(self->system()) << "head: " << describe(err);
    return;
  }
  st.current.nodes.push_back(node);
  for (auto i = st.rows.rbegin(); i != st.rows.rend(); ++i)
    if (i->name == node) {
      i->state = "joined";
      break;
    }
  // Straight to stdout (not through CAF's printer actor) so the line comes
  // before the head's own "running".
  log_to(self->system()) << "head: node '" << node << "' joined";
  if (st.members.complete()) {
    for (auto& promise : st.waiting_for_all)
      promise.deliver(st.current);
    st.waiting_for_all.clear();
  }
}

membership_actor::behavior_type
membership_fn(membership_ptr self, run_config cfg, router_actor router) {
  auto& st = self->state;
  std::vector<std::string> expected;
  for (auto& node : cfg.node.cluster.nodes)
    expected.push_back(node.name);
  st.members = membership{std::move(expected)};
  st.resumable = !cfg.node.cluster.state_dir.empty();
  st.pipeline = std::move(cfg.pipeline);
  st.ping_interval = std::max(std::chrono::milliseconds{50},
                              st.pipeline.router.heartbeat_timeout / 5);
  self->delayed_send(self, st.ping_interval, tick_atom::value);
  st.router = std::move(router);
  self->set_down_handler([=](caf::down_msg& msg) {
    auto& s = self->state;
    auto i = s.names.find(msg.source);
    if (i == s.names.end())
      return;
    auto name = i->second;
    s.names.erase(i);
    s.members.leave(name);
    auto& n = s.current.nodes;
    n.erase(std::remove(n.begin(), n.end(), name), n.end());
    for (auto* c : {&s.current.controls, &s.worker_controls})
      c->erase(std::remove_if(c->begin(), c->end(),
                              [&](auto& x) {
                                return x.address() == msg.source;
                              }),
               c->end());
    auto& t = s.trainers;
    for (size_t k = t.size(); k-- > 0;)
      if (t[k].node == name) { // every trainer of the node
        auto at = static_cast<std::ptrdiff_t>(k);
        t.erase(t.begin() + at);
        s.current.trainers.erase(s.current.trainers.begin() + at);
        s.current.trainer_places.erase(s.current.trainer_places.begin()
                                       + at);
      }
    for (auto r = s.rows.rbegin(); r != s.rows.rend(); ++r)
      if (r->name == name) {
        r->state = "left";
        break;
      }
    log_to(self->system()) << "head: node '" << name << "' left";
  });
  return {
    [=](hello_atom, node_info& info) -> caf::result<welcome> {
      auto& s = self->state;
      if (s.members.contains(info.name))
        return make_error(errc::invalid_config,
                          "a node named '" + info.name
                            + "' has already joined; expected a unique "
                              "--node.name per node");
      bool worker = info.role == role_kind::worker;
      log_to(self->system())
        << "head: hello from " << to_string(info.role) << " '"
        << info.name << "' (" << info.cores << " cores"
        << (worker ? ", " + std::to_string(info.workers) + " workers"
                   : ", device " + info.device)
        << ")";
      s.hellos[info.name] = info;
      node_row row;
      row.name = info.name;
      row.role = info.role;
      row.host = info.host;
      row.cores = info.cores;
      row.workers = info.workers;
      row.device = info.device;
      row.joined_unix_s = static_cast<int64_t>(std::time(nullptr));
      row.state = "joining";
      s.rows.push_back(std::move(row));
      if (info.control) {
        // When its process goes, its name is free again (a restarted
        // trainer rejoins under the same name).
        self->monitor(info.control);
        s.names[info.control.address()] = info.name;
        if (worker)
          s.worker_controls.push_back(info.control);
        s.current.controls.push_back(std::move(info.control));
      }
      if (worker && s.trainers.empty()) {
        s.waiting_for_trainer.push_back(
          self->template make_response_promise<welcome>());
        return s.waiting_for_trainer.back();
      }
      return welcome_of(self);
    },
    [=](join_atom, std::string& node, std::vector<worker_actor>& workers) {
      auto& s = self->state;
      auto& hello = s.hellos[node];
      for (size_t i = 0; i < workers.size(); ++i) {
        worker_join join;
        join.worker = workers[i];
        join.name = node + "/" + std::to_string(i);
        join.host = hello.host;
        join.memory_bytes = hello.memory_bytes;
        self->send(s.router, std::move(join));
        s.current.workers.push_back(workers[i]);
      }
      joined(self, node);
    },
    [=](join_atom, std::string& node, std::vector<trainer_actor>& trainers,
        std::vector<trainer_endpoint>& places) {
      auto& s = self->state;
      for (size_t i = 0; i < trainers.size() && i < places.size(); ++i) {
        // A trainer its node started again replaces the one that stopped.
        auto& tp = s.current.trainer_places;
        auto old = std::find_if(tp.begin(), tp.end(), [&](auto& p) {
          return p.node == node && p.index == places[i].index;
        });
        if (old != tp.end()) {
          auto k = old - tp.begin();
          s.current.trainers.erase(s.current.trainers.begin() + k);
          tp.erase(old);
          s.trainers.erase(s.trainers.begin() + k);
        }
        s.current.trainers.push_back(trainers[i]);
        s.current.trainer_places.push_back(places[i]);
        // Worker nodes that joined before connect to it too (a trainer
        // restarted with --resume comes back on new ports).
        for (auto& control : s.worker_controls)
          caf::anon_send(control, places[i]);
        s.trainers.push_back(places[i]);
        if (s.world == 1) {
          // The run is on and its group is one rank: this is that rank
          // back (--resume); the router takes it or says why not.
          group_spec g;
          g.node = node;
          caf::anon_send(s.router, g, trainers[i]);
          caf::anon_send(trainers[i], std::move(g));
        } else if (s.world > 1) {
          // A rank of a group back (its node restarted it, or was
          // restarted): the same rank, in the group's next forming.
          auto at = std::find(s.ranks.begin(), s.ranks.end(),
                              std::make_pair(node, places[i].index));
          if (at == s.ranks.end()) {
            log_to(self->system())
              << "head: trainer " << node << "/" << places[i].index
              << " is not a rank of the group; it gets no work";
            continue;
          }
          auto rank = static_cast<uint32_t>(at - s.ranks.begin());
          if (s.rank_generation[rank] == s.generation)
            ++s.generation;
          s.rank_generation[rank] = s.generation;
          group_spec g;
          g.rank = rank;
          g.world = s.world;
          g.store = caf::actor_cast<caf::actor>(s.store);
          g.node = node;
          g.generation = s.generation;
          log_to(self->system())
            << "head: rank " << rank << " (" << node << "/"
            << places[i].index << ") rejoins the group (forming "
            << s.generation << ")";
          caf::anon_send(s.router, g, trainers[i]);
          caf::anon_send(trainers[i], std::move(g));
        }
      }
      for (auto& promise : s.waiting_for_trainer)
        promise.deliver(welcome_of(self));
      s.waiting_for_trainer.clear();
      if (!s.members.contains(node)) // not a trainer started again
        joined(self, node);
    },
    [=](world_atom, uint32_t world, store_actor& store) {
      auto& s = self->state;
      s.world = world;
      s.store = std::move(store);
      // The same order the head gave the ranks in: node name, then index.
      s.ranks.clear();
      for (auto& p : s.current.trainer_places)
        s.ranks.emplace_back(p.node, p.index);
      std::sort(s.ranks.begin(), s.ranks.end());
      s.rank_generation.assign(s.ranks.size(), 0);
      // Trainer nodes restart a rank whose trainer stops (group runs with
      // checkpoints): they need to know there is a group.
      for (auto& [addr, name] : s.names)
        if (s.hellos[name].role == role_kind::trainer)
          for (auto& c : s.current.controls)
            if (c.address() == addr)
              caf::anon_send(c, world_atom::value, world);
    },
    [=](wait_atom) -> caf::result<roster> {
      auto& s = self->state;
      if (s.members.complete())
        return s.current;
      s.waiting_for_all.push_back(
        self->template make_response_promise<roster>());
      return s.waiting_for_all.back();
    },
    [=](tick_atom) {
      auto& s = self->state;
      for (auto& control : s.current.controls)
        caf::anon_send(control, ping_atom::value);
      // A node stopped (kill -STOP) or cut off keeps its connection: only
      // its silence tells. The router loses its trainers' ranks now, so a
      // group's failure names it, not the rank left waiting for it.
      auto limit = s.pipeline.router.heartbeat_timeout.count();
      for (auto& quiet : s.members.newly_silent(now_ms(), limit)) {
        log_to(self->system())
          << "head: node '" << quiet.name << "' has not answered for "
          << quiet.silent_ms << " ms (cluster.heartbeat-timeout = "
          << limit << " ms): hung, stopped or cut off";
        self->send(s.router,
                   node_silent{quiet.name,
                               static_cast<uint64_t>(quiet.silent_ms)});
      }
      self->delayed_send(self, s.ping_interval, tick_atom::value);
    },
    [=](node_alive& alive) {
      auto& s = self->state;
      if (s.members.contains(alive.node))
        s.members.heard(alive.node, now_ms());
    },
    [=](nodes_atom) { return self->state.rows; },
    [=](roster_atom) {
      auto r = self->state.current;
      r.missing = self->state.members.missing();
      return r;
    },
  };
}

} // namespace

membership_actor spawn_membership(caf::actor_system& sys,
                                  const run_config& cfg, router_actor router) {
  return sys.spawn(membership_fn, cfg, std::move(router));
}

} // namespace stoker
