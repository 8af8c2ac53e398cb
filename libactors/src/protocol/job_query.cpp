#include "protocol/job_query.hpp"

#include <algorithm>

namespace stoker {

std::optional<uint64_t> node_heard_ms_ago(const node_row& node,
                                          const router_status& router) {
  if (node.state != "joined")
    return std::nullopt;
  if (node.role == role_kind::trainer)
    return router.trainer_heard_ms_ago < 0
             ? std::nullopt
             : std::optional<uint64_t>{
               static_cast<uint64_t>(router.trainer_heard_ms_ago)};
  std::optional<uint64_t> freshest;
  auto prefix = node.name + "/";
  bool every = node.role == role_kind::local; // all workers are its own
  for (auto& w : router.workers)
    if (w.load.alive
        && (every || w.load.name.compare(0, prefix.size(), prefix) == 0))
      freshest = std::min(freshest.value_or(w.heard_ms_ago), w.heard_ms_ago);
  return freshest;
}

caf::expected<router_status> router_now(caf::scoped_actor& self,
                                        const job_target& target) {
  return ask_job<router_status>(self, target.router, status_atom::value);
}

caf::expected<roster> members_now(caf::scoped_actor& self,
                                  const job_target& target) {
  if (!target.membership)
    return target.members;
  return ask_job<roster>(self, target.membership, roster_atom::value);
}

caf::expected<std::vector<node_row>> nodes_now(caf::scoped_actor& self,
                                               const job_target& target) {
  if (!target.membership)
    return target.nodes;
  return ask_job<std::vector<node_row>>(self, target.membership,
                                        nodes_atom::value);
}

caf::expected<job_view> look_at_job(caf::scoped_actor& self,
                                    const job_target& target) {
  auto router = router_now(self, target);
  if (!router)
    return std::move(router.error());
  job_view out;
  out.router = std::move(*router);
  if (auto members = members_now(self, target)) {
    for (auto& t : members->trainers)
      if (auto s = ask_job<trainer_stats>(self, t, stats_atom::value))
        out.trainers.push_back(std::move(*s));
    for (auto& w : members->workers)
      if (auto s = ask_job<worker_stats>(self, w, stats_atom::value))
        out.workers.push_back(std::move(*s));
  }
  std::sort(out.trainers.begin(), out.trainers.end(),
            [](auto& a, auto& b) { return a.rank < b.rank; });
  if (auto rows = nodes_now(self, target))
    out.nodes = std::move(*rows);
  return out;
}

} // namespace stoker
