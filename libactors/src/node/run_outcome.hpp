#pragma once

// How a run's outcome is collected and shown, for the local and head roles.

#include <string>
#include <vector>

#include <caf/expected.hpp>
#include <caf/scoped_actor.hpp>

#include "stoker/router_status.hpp"
#include "stoker/actors.hpp"
#include "stoker/options.hpp"
#include "core/run_report.hpp"

namespace stoker {

/// Asks every trainer (each rank) and every worker for their counters and
/// combines them with the router's summary; `own` is this process's usage
/// (the head's, or the local run's) for the hosts and the cost. A worker
/// that does not answer within 2 s (one the router lost) is left out; a
/// trainer that is gone or does not answer within 10 s fails the report,
/// named.
/// Blocks `self`.
caf::expected<run_report>
collect_report(caf::scoped_actor& self, const router_summary& summary,
               const std::vector<trainer_actor>& trainers,
               const std::vector<worker_actor>& workers,
               const node_usage& own);

/// The report of a run that ended with `why`: the router's counts so far,
/// the trainers' and workers' if they answer within half a second (a
/// trainer that died, or is stuck in a collective, does not), status
/// "failed". Never blocks much longer than that, whatever the actors do.
run_report collect_failed_report(caf::scoped_actor& self,
                                 const router_actor& router,
                                 const std::vector<trainer_actor>& trainers,
                                 const std::vector<worker_actor>& workers,
                                 const caf::error& why);

/// How a run ended, decided once for stoker-node's exit code and for an
/// embedding process (a Python loop's RunFailed).
enum class run_verdict : uint8_t {
  ok,      ///< every sample trained on exactly once
  stopped, ///< ended on purpose; what was trained was trained once
  failed,  ///< the run's error, or a delivery that was not exactly once
  refused, ///< a setting that cannot work, found before anything ran
};

/// A verdict and, for failed and refused, why (the node's own words).
struct run_judgement {
  run_verdict verdict = run_verdict::ok;
  std::string reason;
  /// stoker-node's exit code: 0 ok or stopped, 1 failed, 2 refused.
  int exit_code() const noexcept {
    return verdict == run_verdict::failed    ? 1
           : verdict == run_verdict::refused ? 2
                                             : 0;
  }
};

/// The one verdict on a run: refused for an errc::invalid_config error;
/// failed for any other error, a report of status "failed" (its first
/// error) or a delivery that was not exactly once (a stopped run's too,
/// where a sample was trained twice or a batch rejected); stopped for a
/// report of status "stopped" (the samples never leased are not missing
/// then); else ok.
run_judgement judge_run(const caf::expected<run_report>& report);

/// Says the outcome of a run (or its error) to `log`, writes the report
/// if asked (a failed run's too). Returns the process exit code: 0 when
/// every sample was trained on exactly once, 1 otherwise.
int finish_run(const caf::expected<run_report>& report,
               const run_config& cfg, const log_sink& log);

/// Why a run failed, as finish_run() says it after "run failed: "
/// (judge_run's reason); empty when it did not fail, or was refused for a
/// setting (said as "refused: ...").
std::string run_failure_text(const caf::expected<run_report>& report);

/// Says what a node runs (one short block) to `log`, for every role.
void print_banner(const run_config& cfg, const log_sink& log);

} // namespace stoker
