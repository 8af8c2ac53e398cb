#include <iostream>
#include <map>

#include <caf/stateful_actor.hpp>

#include "stoker/cluster.hpp"
#include "stoker/errors.hpp"
#include "stoker/membership.hpp"

namespace stoker {

namespace {

struct registry_state {
  run_config cfg;
  router_actor router;
  membership members{{}};
  roster current;
  std::map<std::string, std::string> hosts; // node name -> node.host
  std::vector<trainer_endpoint> trainers;
  // Worker nodes wait for a trainer to connect to; `wait` for everyone.
  std::vector<caf::typed_response_promise<welcome>> waiting_for_trainer;
  std::vector<caf::typed_response_promise<roster>> waiting_for_all;
  static constexpr const char* name = "stoker.registry";
};

using registry_ptr = registry_actor::stateful_pointer<registry_state>;

welcome welcome_of(registry_ptr self) {
  return welcome{self->state.cfg, self->state.router, self->state.trainers};
}

void joined(registry_ptr self, const std::string& node) {
  auto& st = self->state;
  if (auto err = st.members.join(node)) {
    std::cout << "head: " << describe(err) << std::endl;
    return;
  }
  st.current.nodes.push_back(node);
  // Straight to stdout (not through CAF's printer actor) so the line comes
  // before the head's own "running".
  std::cout << "head: node '" << node << "' joined" << std::endl;
  if (st.members.complete()) {
    for (auto& promise : st.waiting_for_all)
      promise.deliver(st.current);
    st.waiting_for_all.clear();
  }
}

registry_actor::behavior_type registry_fn(registry_ptr self, run_config cfg,
                                          router_actor router) {
  auto& st = self->state;
  std::vector<std::string> expected;
  for (auto& node : cfg.cluster.nodes)
    expected.push_back(node.name);
  st.members = membership{std::move(expected)};
  st.cfg = std::move(cfg);
  st.router = std::move(router);
  return {
    [=](hello_atom, node_info& info) -> caf::result<welcome> {
      auto& s = self->state;
      if (s.members.contains(info.name))
        return make_error(errc::invalid_config,
                          "a node named '" + info.name
                            + "' has already joined; expected a unique "
                              "--node.name per node");
      std::cout << "head: hello from " << info.role << " '" << info.name
                << "' (" << info.cores << " cores"
                << (info.role == "worker"
                      ? ", " + std::to_string(info.workers) + " workers"
                      : ", device " + info.device)
                << ")" << std::endl;
      s.hosts[info.name] = info.host;
      if (info.control)
        s.current.controls.push_back(std::move(info.control));
      if (info.role == "worker" && s.trainers.empty()) {
        s.waiting_for_trainer.push_back(
          self->template make_response_promise<welcome>());
        return s.waiting_for_trainer.back();
      }
      return welcome_of(self);
    },
    [=](join_atom, std::string& node, std::vector<worker_actor>& workers) {
      auto& s = self->state;
      for (size_t i = 0; i < workers.size(); ++i) {
        self->send(s.router, join_atom::value, workers[i],
                   node + "/" + std::to_string(i), s.hosts[node]);
        s.current.workers.push_back(workers[i]);
      }
      joined(self, node);
    },
    [=](join_atom, std::string& node, trainer_actor& trainer,
        trainer_endpoint& where) {
      auto& s = self->state;
      s.current.trainers.push_back(std::move(trainer));
      s.trainers.push_back(std::move(where));
      for (auto& promise : s.waiting_for_trainer)
        promise.deliver(welcome_of(self));
      s.waiting_for_trainer.clear();
      joined(self, node);
    },
    [=](wait_atom) -> caf::result<roster> {
      auto& s = self->state;
      if (s.members.complete())
        return s.current;
      s.waiting_for_all.push_back(
        self->template make_response_promise<roster>());
      return s.waiting_for_all.back();
    },
    [=](roster_atom) {
      auto r = self->state.current;
      r.missing = self->state.members.missing();
      return r;
    },
  };
}

} // namespace

registry_actor spawn_registry(caf::actor_system& sys, const run_config& cfg,
                              router_actor router) {
  return sys.spawn(registry_fn, cfg, std::move(router));
}

} // namespace stoker
