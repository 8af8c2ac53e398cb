#include "routing/lease_book.hpp"

#include <algorithm>
#include <iterator>

namespace stoker {

void lease_book::queue(work_item item, bool front) {
  auto rank = item.slot.rank;
  if (rank >= pending_.size())
    pending_.resize(rank + 1);
  if (front)
    pending_[rank].push_front(std::move(item));
  else
    pending_[rank].push_back(std::move(item));
  ++pending_count_;
}

void lease_book::add_pending(std::vector<work_item> items) {
  if (items.empty())
    source_done_ = true;
  for (auto& item : items)
    queue(std::move(item));
}

const work_item* lease_book::front_pending() const noexcept {
  const work_item* out = nullptr;
  for (auto& q : pending_)
    if (!q.empty() && (out == nullptr || q.front().batch_id < out->batch_id))
      out = &q.front();
  return out;
}

void lease_book::set_trainer_host(uint32_t rank, std::string host) {
  if (rank >= hosts_.size())
    hosts_.resize(rank + 1);
  hosts_[rank] = std::move(host);
}

const std::string& lease_book::host_of(const work_item& item) const {
  static const std::string anywhere;
  return item.slot.rank < hosts_.size() ? hosts_[item.slot.rank] : anywhere;
}

void lease_book::count_lease(const work_item& item, int delta) {
  auto rank = item.slot.rank;
  if (rank >= in_flight_by_rank_.size())
    in_flight_by_rank_.resize(rank + 1, 0);
  auto& n = in_flight_by_rank_[rank];
  n = delta > 0 ? n + 1 : n - std::min<size_t>(n, 1);
}

lease_book::lease_result lease_book::lease(routing_table& table,
                                           uint32_t window, uint64_t now_ns,
                                           const std::function<bool()>&
                                             on_trainer) {
  return lease(table, std::vector<rank_budget>{rank_budget{window, 0}},
               now_ns, on_trainer);
}

lease_book::lease_result
lease_book::lease(routing_table& table, const std::vector<rank_budget>& ranks,
                  uint64_t now_ns, const std::function<bool()>& on_trainer) {
  lease_result out;
  if (trainer_lost_at_)
    return out; // nothing moves until a trainer is back
  // A rank whose period is not known yet counts as the slowest known: its
  // batches last longest, so it is no more urgent than the others.
  uint64_t slowest = 1;
  for (auto& r : ranks)
    slowest = std::max(slowest, r.period_ns);
  for (;;) {
    // The rank closest to starving among those with room and items.
    std::optional<uint32_t> best;
    double best_score = 0.0;
    for (uint32_t r = 0; r < ranks.size(); ++r) {
      if (in_flight(r) >= ranks[r].window)
        continue;
      if (r >= pending_.size() || pending_[r].empty()) {
        out.needs_items = out.needs_items || !source_done_;
        continue;
      }
      auto period = ranks[r].period_ns > 0 ? ranks[r].period_ns : slowest;
      double score = static_cast<double>(in_flight(r))
                     * static_cast<double>(period);
      if (!best || score < best_score
          || (score == best_score
              && pending_[r].front().batch_id
                   < pending_[*best].front().batch_id)) {
        best = r;
        best_score = score;
      }
    }
    if (!best)
      break;
    auto& q = pending_[*best];
    auto rank = q.front().slot.rank;
    if (resumed_.contains(q.front().batch_id)
        || (rank < resume_seq_.size()
            && q.front().slot.seq < resume_seq_[rank])) {
      q.pop_front(); // the checkpoint has it: trained on already
      --pending_count_;
      ++counters_.resumed;
      continue;
    }
    auto samples = static_cast<uint32_t>(q.front().sample_ids.size());
    auto index = table.pick(samples, now_ns, routing_table::none,
                            host_of(q.front()));
    if (!index)
      break; // no worker qualifies (none joined; local-only: none local)
    auto item = std::move(q.front());
    q.pop_front();
    --pending_count_;
    table.on_lease(*index, samples);
    ++counters_.leased;
    item.blur_on_trainer = on_trainer && on_trainer();
    if (item.blur_on_trainer)
      ++counters_.gpu_blur;
    count_lease(item, +1);
    out.orders.push_back(lease_order{*index, item});
    lease_entry entry;
    entry.worker = *index;
    entry.leased_ns = now_ns;
    entry.item = std::move(item);
    leases_.emplace(entry.item.batch_id, std::move(entry));
  }
  return out;
}

std::optional<lease_order> lease_book::relay(work_item item, size_t exclude,
                                             routing_table& table,
                                             uint64_t now_ns) {
  auto l = leases_.find(item.batch_id);
  if (l == leases_.end())
    return std::nullopt; // acknowledged meanwhile: nothing to do
  auto samples = static_cast<uint32_t>(item.sample_ids.size());
  auto other = table.pick(samples, now_ns, exclude, host_of(item));
  if (!other) {
    l->second.worker = routing_table::none;
    orphans_.push_back(std::move(item));
    return std::nullopt;
  }
  table.on_lease(*other, samples);
  l->second.worker = *other;
  l->second.leased_ns = now_ns;
  ++counters_.released;
  return lease_order{*other, std::move(item)};
}

std::vector<lease_order> lease_book::relay_orphans(routing_table& table,
                                                   uint64_t now_ns) {
  std::vector<lease_order> out;
  for (size_t n = orphans_.size(); n > 0 && table.alive_workers() > 0; --n) {
    auto item = std::move(orphans_.front());
    orphans_.pop_front();
    if (auto order = relay(std::move(item), routing_table::none, table,
                           now_ns))
      out.push_back(std::move(*order));
  }
  return out;
}

std::optional<uint64_t> lease_book::ack(uint64_t batch_id, uint64_t now_ns) {
  auto i = leases_.find(batch_id);
  if (i == leases_.end())
    return std::nullopt; // a late answer for a batch acknowledged already
  auto took = now_ns - std::min(now_ns, i->second.leased_ns);
  if (i->second.item.part == split::train)
    counters_.acked_samples += i->second.item.sample_ids.size();
  recent_ns_.push_back(took);
  if (recent_ns_.size() > hedge_history)
    recent_ns_.pop_front();
  count_lease(i->second.item, -1);
  if (trainer_checkpoints_) // until its next checkpoint has it
    unsaved_.emplace(batch_id, std::move(i->second.item));
  // An orphan acknowledged (its first copy arrived after all) waits no more.
  orphans_.erase(std::remove_if(orphans_.begin(), orphans_.end(),
                                [&](const work_item& x) {
                                  return x.batch_id == batch_id;
                                }),
                 orphans_.end());
  leases_.erase(i);
  ++counters_.acked;
  return took;
}

void lease_book::saved() {
  unsaved_.clear();
}

void lease_book::saved(const std::vector<uint64_t>& next_seq) {
  for (auto i = unsaved_.begin(); i != unsaved_.end();) {
    auto& slot = i->second.slot;
    if (slot.rank < next_seq.size() && slot.seq < next_seq[slot.rank])
      i = unsaved_.erase(i);
    else
      ++i;
  }
}

void lease_book::group_joined(bool checkpoints,
                              std::vector<uint64_t> resume_seq) {
  trainer_checkpoints_ = checkpoints;
  trainer_lost_at_.reset();
  resume_seq_ = std::move(resume_seq);
}

std::vector<lease_order> lease_book::lose_worker(size_t worker,
                                                 routing_table& table,
                                                 uint64_t now_ns,
                                                 size_t* held) {
  std::vector<lease_order> out;
  if (worker >= table.workers().size() || !table.workers()[worker].alive) {
    if (held != nullptr)
      *held = 0;
    return out;
  }
  table.remove_worker(worker);
  std::vector<work_item> its;
  for (auto& [id, l] : leases_)
    if (l.worker == worker)
      its.push_back(l.item);
  // In batch order: the trainer waits for the oldest first.
  std::sort(its.begin(), its.end(), [](auto& a, auto& b) {
    return a.batch_id < b.batch_id;
  });
  if (held != nullptr)
    *held = its.size();
  for (auto& item : its)
    if (auto order = relay(std::move(item), worker, table, now_ns))
      out.push_back(std::move(*order));
  return out;
}

std::vector<lease_order> lease_book::hedge(routing_table& table,
                                           uint64_t now_ns, double factor) {
  std::vector<lease_order> out;
  if (factor <= 0.0 || recent_ns_.size() < 8 || table.workers().size() < 2)
    return out;
  std::vector<uint64_t> sorted{recent_ns_.begin(), recent_ns_.end()};
  std::nth_element(sorted.begin(), sorted.begin() + sorted.size() / 2,
                   sorted.end());
  auto limit = static_cast<uint64_t>(
    factor * static_cast<double>(sorted[sorted.size() / 2]));
  for (auto& [id, l] : leases_) {
    if (l.hedged || l.worker == routing_table::none
        || now_ns - std::min(now_ns, l.leased_ns) <= limit)
      continue;
    auto samples = static_cast<uint32_t>(l.item.sample_ids.size());
    auto other = table.pick(samples, now_ns, l.worker, host_of(l.item));
    if (!other)
      continue;
    l.hedged = true;
    table.on_lease(*other, samples);
    ++counters_.hedged;
    out.push_back(lease_order{*other, l.item});
  }
  return out;
}

size_t lease_book::lose_trainer(uint64_t now_ns) {
  if (!trainer_checkpoints_)
    return 0;
  std::vector<work_item> redo;
  for (auto& [id, item] : unsaved_)
    redo.push_back(std::move(item));
  for (auto& [id, l] : leases_)
    redo.push_back(std::move(l.item));
  unsaved_.clear();
  leases_.clear();
  orphans_.clear(); // leased: among the leases above
  recent_ns_.clear();
  in_flight_by_rank_.clear();
  // Back to the front of each rank's queue, in batch order.
  std::sort(redo.begin(), redo.end(), [](auto& a, auto& b) {
    return a.batch_id > b.batch_id;
  });
  for (auto& item : redo)
    queue(std::move(item), true);
  trainer_lost_at_ = now_ns;
  return redo.size();
}

void lease_book::trainer_joined(bool checkpoints, uint64_t done_below,
                                const std::vector<uint64_t>& done_ids) {
  trainer_checkpoints_ = checkpoints;
  trainer_lost_at_.reset();
  resumed_.restore(done_below, done_ids);
}

size_t lease_book::leased_to(size_t worker) const {
  return static_cast<size_t>(
    std::count_if(leases_.begin(), leases_.end(),
                  [&](auto& kv) { return kv.second.worker == worker; }));
}

} // namespace stoker
