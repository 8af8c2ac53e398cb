#pragma once

// Asking the head's (or a local run's) actors about the running job, over
// the protocol of stoker/actors.hpp: what the console's tables, `stats
// --json`, /metrics and /api/state are made from.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <caf/error.hpp>
#include <caf/expected.hpp>
#include <caf/scoped_actor.hpp>

#include "stoker/router_status.hpp"
#include "stoker/actors.hpp"

namespace stoker {

/// Whom to ask. On a head: the router and the membership actor (who is in
/// the cluster). A local run has none: its actors and its one node row are
/// fixed when it starts.
struct job_target {
  router_actor router;
  membership_actor membership; ///< null in a local run
  roster members;              ///< a local run's workers and trainer
  std::vector<node_row> nodes; ///< a local run's own node
};

/// What the actors say about the job now, asked at once.
struct job_view {
  router_status router;
  std::vector<trainer_stats> trainers; ///< by rank; empty before one joins
  std::vector<worker_stats> workers;   ///< those that answered
  std::vector<node_row> nodes;
};

/// How long ago the router last heard from `node` (ms): the freshest report
/// of its live workers (named "NODE/i"; every worker for a local node), or
/// the trainer's last message for the joined trainer node. Nothing for a
/// node that left or has not been heard from.
std::optional<uint64_t> node_heard_ms_ago(const node_row& node,
                                          const router_status& router);

/// How long one question waits for its answer.
constexpr auto job_query_timeout = std::chrono::seconds(2);

/// Asks `whom` through `self` (whose thread the caller is on); the error
/// if it does not answer within job_query_timeout (e.g. a lost worker) or
/// answers with one.
template <class T, class Handle, class... Ts>
caf::expected<T> ask_job(caf::scoped_actor& self, const Handle& whom,
                         const Ts&... xs) {
  caf::expected<T> result{caf::error{}};
  self->request(whom, job_query_timeout, xs...)
    .receive([&](T& x) { result = std::move(x); },
             [&](caf::error& err) { result = std::move(err); });
  return result;
}

/// The router's status.
caf::expected<router_status> router_now(caf::scoped_actor& self,
                                        const job_target& target);

/// Every worker and trainer of the job (a local run's fixed roster).
caf::expected<roster> members_now(caf::scoped_actor& self,
                                  const job_target& target);

/// Every node's row (a local run's one).
caf::expected<std::vector<node_row>> nodes_now(caf::scoped_actor& self,
                                               const job_target& target);

/// The job now. Errors only when the router does not answer; trainers
/// and workers that do not answer (or have not joined) are left out;
/// trainers by rank.
caf::expected<job_view> look_at_job(caf::scoped_actor& self,
                                    const job_target& target);

} // namespace stoker
