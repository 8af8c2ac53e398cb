#include "routing/routing_table.hpp"

#include <algorithm>
#include <cmath>

namespace stoker {

routing_table::routing_table(routing_policy policy, uint64_t stale_after_ns,
                             uint64_t seed) noexcept
  : policy_(policy),
    stale_after_ns_(std::max<uint64_t>(stale_after_ns, 1)),
    rng_state_(seed) {
  // nop
}

size_t routing_table::add_worker(std::string name, std::string host,
                                 uint64_t now_ns) {
  workers_.push_back(worker_load{});
  auto& w = workers_.back();
  w.name = std::move(name);
  w.host = std::move(host);
  w.local = std::find(trainer_hosts_.begin(), trainer_hosts_.end(), w.host)
            != trainer_hosts_.end();
  w.last_report_ns = now_ns;
  auto index = workers_.size() - 1;
  ++alive_;
  by_host_[w.host].push_back(index);
  if (w.local)
    local_.push_back(index);
  return index;
}

void routing_table::index_local() {
  local_.clear();
  for (size_t i = 0; i < workers_.size(); ++i)
    if (workers_[i].local)
      local_.push_back(i);
}

const std::vector<size_t>&
routing_table::workers_near(const std::string& near) const {
  if (near.empty())
    return local_;
  static const std::vector<size_t> nobody;
  auto i = by_host_.find(near);
  return i != by_host_.end() ? i->second : nobody;
}

void routing_table::set_trainer_host(const std::string& host) {
  set_trainer_hosts({host});
}

void routing_table::set_trainer_hosts(std::vector<std::string> hosts) {
  hosts.erase(std::remove(hosts.begin(), hosts.end(), std::string{}),
              hosts.end());
  trainer_hosts_ = std::move(hosts);
  for (auto& w : workers_)
    w.local = w.alive
              && std::find(trainer_hosts_.begin(), trainer_hosts_.end(), w.host)
                   != trainer_hosts_.end();
  index_local();
}

bool routing_table::near_to(size_t index, const std::string& near) const {
  return near.empty() ? workers_[index].local
                      : workers_[index].host == near;
}

void routing_table::on_lease(size_t index, uint32_t samples) {
  auto& w = workers_.at(index);
  ++w.outstanding_items;
  ++outstanding_total_;
  ++w.items_leased;
  w.outstanding_samples += samples;
}

void routing_table::on_done(size_t index, uint32_t samples, uint64_t busy_ns,
                            uint64_t mailbox_depth, uint64_t now_ns) {
  auto& w = workers_.at(index);
  auto finished = std::min<uint64_t>(w.outstanding_items, 1);
  w.outstanding_items -= finished;
  outstanding_total_ -= finished;
  w.outstanding_samples -= std::min<uint64_t>(w.outstanding_samples, samples);
  w.mailbox_depth = mailbox_depth;
  w.last_report_ns = std::max(w.last_report_ns, now_ns);
  ++w.items_done;
  w.samples_done += samples;
  if (busy_ns > 0 && samples > 0) {
    double rate = samples / (static_cast<double>(busy_ns) * 1e-9);
    bool was_fastest = w.has_rate && w.rate_sps >= fastest_rate_;
    w.rate_sps = w.has_rate ? rate_smoothing * rate
                                + (1.0 - rate_smoothing) * w.rate_sps
                            : rate;
    w.has_rate = true;
    if (w.rate_sps >= fastest_rate_) {
      fastest_rate_ = w.rate_sps;
    } else if (was_fastest) {
      // The fastest slowed down: look again (rare; O(workers)).
      fastest_rate_ = 0.0;
      for (auto& other : workers_)
        if (other.has_rate)
          fastest_rate_ = std::max(fastest_rate_, other.rate_sps);
    }
  }
}

void routing_table::on_report(size_t index, uint64_t mailbox_depth,
                              uint64_t now_ns) {
  auto& w = workers_.at(index);
  w.mailbox_depth = mailbox_depth;
  w.last_report_ns = std::max(w.last_report_ns, now_ns);
}

void routing_table::remove_worker(size_t index) {
  auto& w = workers_.at(index);
  if (w.alive)
    --alive_;
  w.alive = false;
  w.local = false;
  outstanding_total_ -= w.outstanding_items;
  w.outstanding_items = w.outstanding_samples = w.mailbox_depth = 0;
}

size_t routing_table::set_draining(const std::string& name, bool draining) {
  size_t touched = 0;
  for (auto& w : workers_)
    if ((w.name == name || w.name.compare(0, name.size() + 1, name + "/") == 0)
        && w.alive) {
      w.draining = draining;
      ++touched;
    }
  return touched;
}

uint64_t routing_table::silence_ns(size_t index, uint64_t now_ns) const {
  // A worker reports between items, so a busy one may be silent for the
  // length of an item.
  auto& w = workers_.at(index);
  if (now_ns <= w.last_report_ns)
    return 0;
  double per_item = w.outstanding_items > 0
                      ? static_cast<double>(w.outstanding_samples)
                          / static_cast<double>(w.outstanding_items)
                      : 0.0;
  auto item_ns = static_cast<uint64_t>(per_item / assumed_rate(w) * 1e9);
  auto silent = now_ns - w.last_report_ns;
  return silent > item_ns ? silent - item_ns : 0;
}

double routing_table::assumed_rate(const worker_load& w) const {
  if (w.has_rate && w.rate_sps > 0.0)
    return w.rate_sps;
  // Optimistic for newcomers, so a new worker gets work and gets measured.
  // The fastest rate is kept up to date by on_done: a scan here made a
  // decision over N unmeasured workers O(N^2) (a join storm).
  return fastest_rate_ > 0.0 ? fastest_rate_ : 1.0;
}

uint64_t routing_table::overdue_ns(size_t index, uint64_t now_ns) const {
  // Silence beyond the current item's time, past the report allowance.
  auto silent = silence_ns(index, now_ns);
  return silent > stale_after_ns_ ? silent - stale_after_ns_ : 0;
}

double routing_table::expected_delay(size_t index, uint32_t samples,
                                     uint64_t now_ns) const {
  auto& w = workers_.at(index);
  // The router's own count covers items still on the wire; the mailbox
  // depth covers what it cannot see. Take the larger, in samples.
  double per_item = w.outstanding_items > 0
                      ? static_cast<double>(w.outstanding_samples)
                          / static_cast<double>(w.outstanding_items)
                      : samples;
  double queued = std::max(static_cast<double>(w.outstanding_samples),
                           static_cast<double>(w.mailbox_depth) * per_item);
  double delay = (queued + samples) / assumed_rate(w);
  // Silence counts against a worker, more the longer it lasts: a hung
  // worker soon loses every comparison, a late report costs little.
  auto overdue = static_cast<double>(overdue_ns(index, now_ns));
  return delay * (1.0 + overdue / static_cast<double>(stale_after_ns_));
}

bool routing_table::eligible(size_t index, size_t exclude,
                             const std::string& near) const {
  if (index == exclude || !workers_[index].alive || workers_[index].draining)
    return false;
  return policy_ != routing_policy::local_only || near_to(index, near);
}

bool routing_table::preferred_on_tie(size_t a, size_t b,
                                     const std::string& near) const {
  // Locality first (no network hop), then the worker with less work so
  // far, so work spreads and a newcomer gets measured.
  if (near_to(a, near) != near_to(b, near))
    return near_to(a, near);
  auto work_of = [&](size_t i) {
    return workers_[i].items_done + workers_[i].outstanding_items;
  };
  return work_of(a) < work_of(b);
}

namespace {

// The running best of a least-delay comparison.
struct best_pick {
  std::optional<size_t> index;
  double delay = 0.0;
};

} // namespace

std::optional<size_t>
routing_table::least_delay(uint32_t samples, uint64_t now_ns, size_t exclude,
                           const std::string& near) const {
  best_pick best;
  for (size_t i = 0; i < workers_.size(); ++i) {
    if (!eligible(i, exclude, near))
      continue;
    double d = expected_delay(i, samples, now_ns);
    if (!best.index) {
      best = {i, d};
      continue;
    }
    bool tie = std::abs(d - best.delay) <= 1e-9 * std::max(d, best.delay);
    if ((!tie && d < best.delay)
        || (tie && preferred_on_tie(i, *best.index, near)))
      best = {i, d};
  }
  return best.index;
}

std::optional<size_t> routing_table::draw_eligible(size_t exclude,
                                                   const std::string& near,
                                                   size_t tries) {
  for (size_t t = 0; t < tries; ++t) {
    size_t i = next_random() % workers_.size();
    if (eligible(i, exclude, near))
      return i;
  }
  return std::nullopt;
}

std::optional<size_t>
routing_table::sampled_least_delay(uint32_t samples, uint64_t now_ns,
                                   size_t exclude, const std::string& near) {
  best_pick best;
  auto consider = [&](size_t i) {
    double d = expected_delay(i, samples, now_ns);
    bool tie = best.index
               && std::abs(d - best.delay) <= 1e-9 * std::max(d, best.delay);
    if (!best.index || (!tie && d < best.delay)
        || (tie && preferred_on_tie(i, *best.index, near)))
      best = {i, d};
  };
  // The machine's own workers always compete: locality wins ties, and a
  // sample of thousands would rarely include them.
  for (auto i : workers_near(near))
    if (eligible(i, exclude, near))
      consider(i);
  size_t drawn = 0;
  for (size_t k = 0; k < sampled_candidates; ++k) {
    auto i = draw_eligible(exclude, near, 4);
    if (!i)
      continue;
    consider(*i);
    ++drawn;
  }
  // Most draws missed: few workers qualify, so a scan finds them (and is
  // cheap enough at that share).
  if (drawn < sampled_candidates / 2)
    return least_delay(samples, now_ns, exclude, near);
  return best.index;
}

uint64_t routing_table::next_random() noexcept {
  // splitmix64: tiny, full period, good enough to pick two workers.
  uint64_t z = (rng_state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::optional<size_t>
routing_table::better_of_two(uint32_t samples, uint64_t now_ns, size_t exclude,
                             const std::string& near) {
  // Draw two distinct workers among the eligible ones (alive, not
  // `exclude`): by rejection when most qualify (O(1)), else a scan of
  // flags; only two delay estimates, where least-loaded makes every
  // worker's.
  size_t n = workers_.size();
  auto better = [&](size_t a, size_t b) {
    double da = expected_delay(a, samples, now_ns);
    double db = expected_delay(b, samples, now_ns);
    bool tie = std::abs(da - db) <= 1e-9 * std::max(da, db);
    if (tie)
      return preferred_on_tie(b, a, near) ? b : a;
    return db < da ? b : a;
  };
  if (n > exact_up_to) {
    auto a = draw_eligible(exclude, near, 16);
    auto b = a ? draw_eligible(exclude, near, 16) : std::nullopt;
    for (size_t t = 0; b && *b == *a && t < 16; ++t)
      b = draw_eligible(exclude, near, 16);
    if (a && b && *a != *b)
      return better(*a, *b);
  }
  size_t usable = 0;
  for (size_t i = 0; i < n; ++i)
    usable += eligible(i, exclude, near) ? 1 : 0;
  if (usable == 0)
    return std::nullopt;
  auto draw = [&] {
    size_t k = next_random() % usable;
    for (size_t i = 0; i < n; ++i)
      if (eligible(i, exclude, near) && k-- == 0)
        return i;
    return n; // unreachable: k < usable
  };
  size_t a = draw();
  if (usable == 1)
    return a;
  // Redraw until distinct: usable >= 2, so fewer than two redraws expected.
  size_t b = a;
  while (b == a)
    b = draw();
  return better(a, b);
}

std::optional<size_t> routing_table::pick(uint32_t samples, uint64_t now_ns,
                                          size_t exclude,
                                          const std::string& near) {
  if (workers_.empty())
    return std::nullopt;
  switch (policy_) {
    case routing_policy::round_robin:
      for (size_t tries = 0; tries < workers_.size(); ++tries) {
        size_t i = next_rr_ % workers_.size();
        next_rr_ = i + 1;
        if (eligible(i, exclude, near))
          return i;
      }
      return std::nullopt;
    case routing_policy::power_of_two:
      return better_of_two(samples, now_ns, exclude, near);
    case routing_policy::least_loaded:
      if (workers_.size() > exact_up_to)
        return sampled_least_delay(samples, now_ns, exclude, near);
      break;
    case routing_policy::local_only:
      break;
  }
  return least_delay(samples, now_ns, exclude, near);
}

} // namespace stoker
