#include "sim/cluster_sim.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <functional>
#include <numeric>
#include <optional>
#include <queue>
#include <set>

#include "core/batch_id_set.hpp"
#include "routing/inflight_window.hpp"
#include "routing/latency_record.hpp"
#include "routing/lease_book.hpp"
#include "routing/routing_table.hpp"
#include "sim/sim_random.hpp"
#include "train/delivery_ledger.hpp"

namespace stoker {

namespace {

using detail::sim_random;

uint64_t ns_of_seconds(double s) {
  return static_cast<uint64_t>(std::llround(s * 1e9));
}

enum class event_kind : uint8_t {
  lease_arrives,  // a lease reaches its worker
  item_made,      // a worker finished its current item
  report_arrives, // a worker's report of a finished item reaches the router
  batch_arrives,  // a batch reaches its trainer
  step_ends,      // a trainer's step (and the group's all-reduce) ended
  ack_arrives,    // a trainer's acknowledgement reaches the router
  worker_dies,
  group_free,     // the group's all-reduce ended: ranks may step again
  tick,           // the router's periodic work (reports, heartbeats, hedging)
};

struct event {
  uint64_t at = 0;
  uint64_t seq = 0; // ties in the order they were scheduled
  event_kind kind = event_kind::tick;
  uint32_t who = 0;   // worker or rank
  uint64_t batch = 0; // batch id (index into items)
  uint64_t wait_ns = 0;
  uint64_t step_ns = 0;
  uint64_t backlog = 0;
  uint64_t collective_ns = 0;
  uint64_t busy_ns = 0;
  uint64_t mailbox = 0;

  bool operator>(const event& other) const noexcept {
    return at != other.at ? at > other.at : seq > other.seq;
  }
};

struct worker_sim {
  sim_worker spec;
  std::deque<uint64_t> queue; // batch ids, the first in the making
  bool busy = false;
  bool dead = false;
  uint64_t started_ns = 0;
  uint64_t samples = 0;
};

struct trainer_sim {
  std::deque<uint64_t> ready; // arrived, not yet trained (arrival order)
  std::optional<uint64_t> idle_since; // waiting for data since
  bool stepping = false;
  uint64_t waited_ns = 0;  // data waits over the run
  uint64_t stepped_ns = 0; // compute over the run
  uint64_t last_wait_ns = 0;
  uint64_t next_seq = 0;   // static split: the batch it must train next
  // What the router knows of it: a moving average of its period.
  double period_ns = 0.0;
  bool measured = false;
};

class cluster_sim {
public:
  explicit cluster_sim(const sim_scenario& s)
    : s_(s),
      rng_(s.seed),
      ack_order_(s.seed ^ 0x2545f4914f6cdd1dULL),
      table_(s.static_split ? routing_policy::round_robin : s.policy,
             ns_of_seconds(3e-3 * static_cast<double>(s.router.report_interval.count())),
             s.seed ^ 0x5bd1e995ULL),
      ledger_(s.batches * s.batch_size, 1),
      window_(limits_of(s)) {
    step_ns_ = ns_of_seconds(s.step_ms * 1e-3);
    allreduce_ns_ = ns_of_seconds(s.allreduce_ms * 1e-3);
    latency_ns_ = ns_of_seconds(s.latency_us * 1e-6);
    tick_ns_ = std::max<uint64_t>(
      ns_of_seconds(1e-3 * static_cast<double>(s.router.report_interval.count())),
      1'000'000);
    transfer_ns_ = ns_of_seconds(static_cast<double>(s.batch_bytes) * 8.0
                                 / (s.bandwidth_gbps * 1e9));
    std::vector<std::string> hosts;
    for (uint32_t r = 0; r < s.trainers; ++r) {
      trainers_.emplace_back();
      hosts.push_back("gpu-" + std::to_string(r));
      book_.set_trainer_host(r, hosts.back());
    }
    link_free_.assign(s.trainers, 0);
    for (auto& w : sim_workers_of(s)) {
      table_.add_worker("w" + std::to_string(workers_.size()), w.host, 0);
      workers_.push_back(worker_sim{w, {}, false, false, 0, 0});
    }
    table_.set_trainer_hosts(hosts);
    std::vector<work_item> items;
    items.reserve(s.batches);
    for (uint64_t b = 0; b < s.batches; ++b) {
      work_item item;
      item.batch_id = b;
      item.slot.rank = static_cast<uint32_t>(b % s.trainers);
      item.slot.seq = b / s.trainers;
      // The router sizes work by its sample count.
      item.sample_ids.resize(s.batch_size);
      std::iota(item.sample_ids.begin(), item.sample_ids.end(),
                b * s.batch_size);
      items.push_back(std::move(item));
    }
    book_.add_pending(std::move(items));
    book_.add_pending({});
    ready_for_.assign(s.trainers, false);
  }

  // The group's window (every rank has this many in flight), decided
  // over `period` steps of the group: every rank's ack feeds it.
  static window_limits limits_of(const sim_scenario& s) {
    window_limits limits;
    limits.initial = s.static_split
                       ? s.static_prefetch * static_cast<uint32_t>(
                           sim_workers_of(s).size())
                       : s.router.window;
    limits.min = s.static_split ? limits.initial : s.prefetch;
    limits.max_bytes = s.static_split ? ~uint64_t{0} : s.router.max_inflight_bytes;
    limits.batch_bytes = std::max<uint64_t>(s.batch_bytes, 1);
    limits.idle_target = s.router.idle_target;
    limits.ranks = std::max<uint32_t>(s.trainers, 1);
    return limits;
  }

  sim_result run() {
    // Failures at random times over the run's expected length, as if
    // every worker ran at its rate.
    double capacity = 0.0;
    for (auto& w : workers_)
      capacity += w.spec.rate_sps;
    double expected_s = static_cast<double>(s_.batches * s_.batch_size)
                        / std::max(capacity, 1e-9);
    expected_s = std::max(expected_s, static_cast<double>(s_.batches)
                                        / s_.trainers * s_.step_ms * 1e-3);
    for (uint32_t f = 0; f < s_.failures && f < workers_.size(); ++f) {
      uint32_t victim;
      do {
        victim = static_cast<uint32_t>(rng_.next() % workers_.size());
      } while (doomed_.count(victim) != 0);
      doomed_.insert(victim);
      schedule(ns_of_seconds(rng_.uniform() * expected_s),
               event_kind::worker_dies, victim);
    }
    for (uint32_t r = 0; r < s_.trainers; ++r)
      trainers_[r].idle_since = 0;
    schedule(tick_ns_, event_kind::tick, 0);
    dispatch();
    auto limit = ns_of_seconds(s_.max_sim_seconds);
    while (!events_.empty() && !finished()) {
      auto e = events_.top();
      events_.pop();
      if (e.at > limit) {
        stalled_ = "stopped at max_sim_seconds ("
                   + std::to_string(s_.max_sim_seconds) + " s)";
        break;
      }
      now_ = e.at;
      ++processed_;
      handle(e);
    }
    return result();
  }

private:
  bool finished() const {
    return samples_trained_ == s_.batches * s_.batch_size || !stalled_.empty();
  }

  void schedule(uint64_t at, event_kind kind, uint32_t who, event e = {}) {
    e.at = at;
    e.seq = next_seq_++;
    e.kind = kind;
    e.who = who;
    events_.push(e);
  }

  uint64_t item_ns(const worker_sim& w) {
    double seconds = s_.batch_size / w.spec.rate_sps;
    if (s_.straggler_prob > 0.0 && rng_.uniform() <= s_.straggler_prob)
      seconds *= std::min(1000.0,
                          std::pow(rng_.uniform(), -1.0 / s_.straggler_alpha));
    return std::max<uint64_t>(ns_of_seconds(seconds), 1);
  }

  void start_next(uint32_t wi) {
    auto& w = workers_[wi];
    if (w.busy || w.dead || w.queue.empty())
      return;
    w.busy = true;
    w.started_ns = now_;
    schedule(now_ + item_ns(w), event_kind::item_made, wi);
  }

  void send_leases(std::vector<lease_order> orders) {
    for (auto& o : orders) {
      ++leases_;
      event e;
      e.batch = o.item.batch_id;
      schedule(now_ + latency_ns_, event_kind::lease_arrives,
               static_cast<uint32_t>(o.worker), e);
    }
  }

  void dispatch() {
    send_leases(book_.relay_orphans(table_, now_));
    std::vector<rank_budget> budgets;
    for (auto& t : trainers_)
      budgets.push_back(rank_budget{
        window_.size(),
        t.measured ? static_cast<uint64_t>(t.period_ns) : uint64_t{0}});
    send_leases(book_.lease(table_, budgets, now_).orders);
  }

  // The batch a trainer steps on next, if it has one.
  std::optional<uint64_t> next_batch(trainer_sim& t) {
    if (t.ready.empty())
      return std::nullopt;
    if (!s_.static_split) {
      auto b = t.ready.front();
      t.ready.pop_front();
      return b;
    }
    // In order: only the batch it expects.
    auto want = std::find_if(t.ready.begin(), t.ready.end(), [&](uint64_t b) {
      return b / s_.trainers == t.next_seq;
    });
    if (want == t.ready.end())
      return std::nullopt;
    auto b = *want;
    t.ready.erase(want);
    return b;
  }

  // Starts rank r's step if it has data and its group is not mid-collective.
  void try_step(uint32_t r) {
    auto& t = trainers_[r];
    if (t.stepping || ready_for_[r] || now_ < group_free_at_)
      return;
    auto b = next_batch(t);
    if (!b)
      return;
    t.stepping = true;
    t.last_wait_ns = t.idle_since ? now_ - *t.idle_since : 0;
    t.waited_ns += t.last_wait_ns;
    t.idle_since.reset();
    ++t.next_seq;
    for (uint64_t i = 0; i < s_.batch_size; ++i)
      ledger_.record(0, *b * s_.batch_size + i);
    samples_trained_ += s_.batch_size;
    event e;
    e.batch = *b;
    schedule(now_ + step_ns_, event_kind::step_ends, r, e);
  }

  void handle(const event& e) {
    switch (e.kind) {
      case event_kind::lease_arrives: {
        auto& w = workers_[e.who];
        if (w.dead)
          return; // lost with the process
        w.queue.push_back(e.batch);
        start_next(e.who);
        return;
      }
      case event_kind::item_made: {
        auto& w = workers_[e.who];
        if (w.dead || !w.busy)
          return;
        w.busy = false;
        auto b = w.queue.front();
        w.queue.pop_front();
        w.samples += s_.batch_size;
        auto rank = static_cast<uint32_t>(b % s_.trainers);
        // Batches into one trainer share its link, one after another.
        auto start = std::max(now_, link_free_[rank]);
        link_free_[rank] = start + transfer_ns_;
        event batch;
        batch.batch = b;
        schedule(link_free_[rank] + latency_ns_, event_kind::batch_arrives,
                 rank, batch);
        event report;
        report.busy_ns = now_ - w.started_ns;
        report.mailbox = w.queue.size();
        schedule(now_ + latency_ns_, event_kind::report_arrives, e.who, report);
        start_next(e.who);
        return;
      }
      case event_kind::report_arrives:
        if (table_.workers()[e.who].alive)
          table_.on_done(e.who, s_.batch_size, e.busy_ns, e.mailbox, now_);
        dispatch();
        return;
      case event_kind::batch_arrives: {
        if (!trained_ids_.insert(e.batch)) {
          ++copies_dropped_; // a second copy (hedged or re-leased)
          return;
        }
        trainers_[e.who].ready.push_back(e.batch);
        try_step(e.who);
        return;
      }
      case event_kind::step_ends:
        on_step_end(e.who, e.batch);
        return;
      case event_kind::ack_arrives:
        on_ack(e);
        return;
      case event_kind::worker_dies: {
        auto& w = workers_[e.who];
        w.dead = true;
        w.busy = false;
        w.queue.clear();
        if (s_.static_split)
          stalled_ = "worker " + std::to_string(e.who)
                     + " died: a static split has nobody to make its "
                       "batches";
        return;
      }
      case event_kind::group_free:
        for (uint32_t r = 0; r < s_.trainers; ++r)
          try_step(r);
        return;
      case event_kind::tick:
        on_tick();
        return;
    }
  }

  void on_step_end(uint32_t r, uint64_t batch) {
    auto& t = trainers_[r];
    t.stepping = false;
    t.stepped_ns += step_ns_;
    pending_acks_.push_back(stepped{r, batch, now_});
    ready_for_[r] = true;
    // The group steps together: the all-reduce starts when the last rank
    // is done computing.
    if (std::count(ready_for_.begin(), ready_for_.end(), true)
        < static_cast<long>(s_.trainers))
      return;
    auto done = now_ + (s_.trainers > 1 ? allreduce_ns_ : 0);
    // Every rank acknowledges when the collective ends, at the same time:
    // which ack the router reads first is down to the network, not to
    // which rank finished its step first (that order would give the rank
    // that waited least the first lease again every step). They come in
    // a random order: Fisher-Yates on a stream of its own, so every other
    // draw of a seed stays as it was.
    for (size_t i = pending_acks_.size(); i > 1; --i)
      std::swap(pending_acks_[i - 1],
                pending_acks_[ack_order_.next() % i]);
    for (auto& [rank, b, ended] : pending_acks_) {
      auto& tr = trainers_[rank];
      event ack;
      ack.batch = b;
      ack.wait_ns = tr.last_wait_ns;
      ack.step_ns = step_ns_;
      ack.collective_ns = done - ended;
      ack.backlog = tr.ready.size();
      schedule(done + latency_ns_, event_kind::ack_arrives, rank, ack);
    }
    pending_acks_.clear();
    group_free_at_ = done;
    std::fill(ready_for_.begin(), ready_for_.end(), false);
    last_step_end_ = done;
    for (uint32_t rank = 0; rank < s_.trainers; ++rank) {
      trainers_[rank].idle_since = done;
      if (done == now_)
        try_step(rank);
    }
    if (done > now_)
      schedule(done, event_kind::group_free, 0);
  }

  void on_ack(const event& e) {
    auto& t = trainers_[e.who];
    if (auto took = book_.ack(e.batch, now_))
      lease_to_ack_.add(*took);
    auto x = static_cast<double>(e.step_ns);
    t.period_ns = t.measured ? routing_table::rate_smoothing * x
                                 + (1.0 - routing_table::rate_smoothing)
                                     * t.period_ns
                             : x;
    t.measured = true;
    window_ack seen;
    seen.wait_ns = e.wait_ns;
    seen.step_ns = e.step_ns;
    seen.collective_ns = e.collective_ns;
    seen.queued_items = table_.outstanding_items();
    seen.trainer_backlog = e.backlog;
    seen.live_workers = table_.alive_workers();
    seen.rank = e.who;
    window_.on_ack(seen);
    dispatch();
  }

  void on_tick() {
    // Live workers report between items; the dead have gone silent.
    for (uint32_t i = 0; i < workers_.size(); ++i)
      if (!workers_[i].dead && table_.workers()[i].alive)
        table_.on_report(i, workers_[i].queue.size(), now_);
    if (!s_.static_split) {
      auto timeout = static_cast<uint64_t>(s_.router.heartbeat_timeout.count())
                     * 1'000'000;
      for (uint32_t i = 0; i < workers_.size(); ++i)
        if (table_.workers()[i].alive && table_.silence_ns(i, now_) > timeout) {
          ++workers_lost_;
          send_leases(book_.lose_worker(i, table_, now_));
        }
      send_leases(book_.hedge(table_, now_, s_.router.hedge_factor));
    }
    for (uint32_t r = 0; r < s_.trainers; ++r)
      try_step(r);
    dispatch();
    if (!finished())
      schedule(now_ + tick_ns_, event_kind::tick, 0);
  }

  sim_result result() {
    sim_result out;
    out.completed = samples_trained_ == s_.batches * s_.batch_size;
    out.stalled_why = stalled_;
    if (!out.completed && stalled_.empty())
      out.stalled_why = "ran out of events";
    out.sim_seconds = static_cast<double>(last_step_end_) * 1e-9;
    out.samples_trained = samples_trained_;
    out.throughput_sps = out.sim_seconds > 0.0
                           ? static_cast<double>(samples_trained_)
                               / out.sim_seconds
                           : 0.0;
    double sum = 0.0;
    for (auto& t : trainers_) {
      auto total = t.waited_ns + t.stepped_ns;
      double idle = total > 0 ? static_cast<double>(t.waited_ns)
                                  / static_cast<double>(total)
                              : 0.0;
      out.idle_fraction.push_back(idle);
      sum += idle;
      out.idle_max = std::max(out.idle_max, idle);
    }
    out.idle_mean = sum / static_cast<double>(trainers_.size());
    if (last_step_end_ > 0) {
      double busy = 0.0;
      for (auto& t : trainers_)
        busy += static_cast<double>(t.stepped_ns)
                / static_cast<double>(last_step_end_);
      out.busy_mean = busy / static_cast<double>(trainers_.size());
    }
    out.lease_to_ack_p50_ms = lease_to_ack_.percentile_ms(50);
    out.lease_to_ack_p99_ms = lease_to_ack_.percentile_ms(99);
    out.leases = leases_;
    out.released = book_.counters().released;
    out.hedged = book_.counters().hedged;
    out.copies_dropped = copies_dropped_;
    out.missing = ledger_.missing();
    out.duplicates = ledger_.duplicates();
    out.workers_lost = workers_lost_;
    out.final_window = window_.size();
    out.events = processed_;
    for (auto& w : workers_)
      out.worker_samples.push_back(w.samples);
    return out;
  }

  const sim_scenario& s_;
  sim_random rng_;
  sim_random ack_order_; // its own stream: the other draws as before
  routing_table table_;
  lease_book book_;
  delivery_ledger ledger_;
  std::vector<worker_sim> workers_;
  std::vector<trainer_sim> trainers_;
  inflight_window window_;
  std::vector<uint64_t> link_free_;
  std::vector<bool> ready_for_;
  struct stepped {
    uint32_t rank = 0;
    uint64_t batch = 0;
    uint64_t ended_ns = 0; // its own step's end: it waits for the group
  };
  std::vector<stepped> pending_acks_;
  batch_id_set trained_ids_;
  std::priority_queue<event, std::vector<event>, std::greater<>> events_;
  std::set<uint32_t> doomed_;
  latency_record lease_to_ack_;
  uint64_t now_ = 0;
  uint64_t next_seq_ = 0;
  uint64_t processed_ = 0;
  uint64_t step_ns_ = 0;
  uint64_t allreduce_ns_ = 0;
  uint64_t latency_ns_ = 0;
  uint64_t tick_ns_ = 0;
  uint64_t transfer_ns_ = 0;
  uint64_t group_free_at_ = 0;
  uint64_t last_step_end_ = 0;
  uint64_t samples_trained_ = 0;
  uint64_t leases_ = 0;
  uint64_t copies_dropped_ = 0;
  uint32_t workers_lost_ = 0;
  std::string stalled_;
};

} // namespace

sim_result simulate_cluster(const sim_scenario& scenario) {
  auto why = check_scenario(scenario);
  if (!why.empty()) {
    sim_result out;
    out.stalled_why = why;
    return out;
  }
  return cluster_sim{scenario}.run();
}

} // namespace stoker
