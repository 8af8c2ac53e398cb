#include <algorithm>


#include "stoker/errors.hpp"
#include "routing/router_state.hpp"
#include "core/system_log.hpp"

// The router's workers: their reports, and what losing one does to the
// run (router_actor.cpp is the rest of the router).

namespace stoker::detail {

namespace {

// What the router last saw of worker `index`, for the report: a lost
// worker cannot answer for itself.
worker_stats last_seen(const router_state& st, size_t index) {
  auto& w = st.table.workers()[index];
  auto& r = st.last_counts[index];
  worker_stats out;
  out.name = w.name;
  out.batches = w.items_done;
  out.samples = std::max<uint64_t>(r.samples_total, w.samples_done);
  out.busy_ns = r.busy_total_ns;
  out.alive_ns = w.last_report_ns - std::min(w.last_report_ns,
                                             st.joined_ns[index]);
  out.decoded_files = r.decoded_files;
  out.decode_ns = r.decode_ns;
  out.decoded_pixels = r.decoded_pixels;
  out.file_pixels = r.file_pixels;
  out.stages = r.stages;
  return out;
}

} // namespace

// A worker died or hung: the book re-leases everything it held.
void lose_worker(router_ptr self, size_t index, const std::string& why) {
  auto& st = self->state;
  if (!st.table.workers()[index].alive)
    return;
  size_t held = 0;
  auto orders = st.book.lose_worker(index, st.table, st.now_ns(), &held);
  st.summary.lost_workers.push_back(st.table.workers()[index].name);
  st.summary.lost_worker_stats.push_back(last_seen(st, index));
  log_to(self->system(), log_level::warning)
    << "router: worker '" << st.table.workers()[index].name
    << "' lost (" << why << "); re-leasing " << held
    << " batch(es)";
  send_leases(self, std::move(orders));
}

// A worker's actor exited. A batch it could not make fails the run at once
// when no other worker could do better: the same item fails the same way
// everywhere, and one too large for its machine's memory fails on every
// machine with no more memory. Otherwise it is lost like a dead worker.
void worker_exited(router_ptr self, size_t index, const caf::error& reason) {
  auto& st = self->state;
  auto why = reason ? "it exited: " + describe(reason)
                    : std::string{"it exited"};
  bool hopeless = is(reason, errc::bad_batch);
  if (is(reason, errc::out_of_memory)) {
    auto mine = st.worker_memory[index];
    hopeless = true;
    for (size_t i = 0; i < st.workers.size(); ++i)
      if (i != index && st.table.workers()[i].alive
          && (mine == 0 || st.worker_memory[i] == 0
              || st.worker_memory[i] > mine))
        hopeless = false; // another machine may hold it
  }
  if (!hopeless) {
    lose_worker(self, index, why);
    return;
  }
  // Nothing is re-leased: another worker would fail the same way.
  st.table.remove_worker(index);
  st.summary.lost_workers.push_back(st.table.workers()[index].name);
  st.summary.lost_worker_stats.push_back(last_seen(st, index));
  if (!st.failure)
    st.failure = make_error(errc::run_failure,
                            "worker '" + st.table.workers()[index].name
                              + "' could not make a batch, and no other "
                                "worker could do better: "
                              + describe(reason));
}

void on_report(router_ptr self, const worker_actor& worker,
               const worker_report& report) {
  auto& st = self->state;
  auto i = st.worker_index.find(caf::actor_cast<caf::actor_addr>(worker));
  if (i == st.worker_index.end() || !st.table.workers()[i->second].alive)
    return; // unknown, or lost already: its work went elsewhere
  auto now = st.now_ns();
  st.busy_total[i->second] = report.busy_total_ns;
  st.last_counts[i->second] = report;
  if (report.samples > 0) {
    st.table.on_done(i->second, report.samples, report.busy_ns,
                     report.mailbox_depth, now);
    if (st.trace)
      st.trace->span(st.table.workers()[i->second].name, "batch",
                     now - std::min(now, report.busy_ns), report.busy_ns,
                     report.batch_id);
  } else {
    st.table.on_report(i->second, report.mailbox_depth, now);
  }
  dispatch(self); // local-only may have been waiting for a worker
}

} // namespace stoker::detail
