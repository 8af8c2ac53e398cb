#pragma once

// The router's lease rules as plain code: which work items are pending,
// leased, orphaned or acknowledged, and what a lost worker, a straggler or
// a lost trainer does to them. The router actor is glue over it.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <unordered_map>
#include <vector>

#include "stoker/messages.hpp"
#include "core/batch_id_set.hpp"
#include "routing/routing_table.hpp"

namespace stoker {

/// A lease to send: `item` to worker `worker` (an index of the routing
/// table).
struct lease_order {
  size_t worker = 0;
  work_item item;
};

/// One trainer's share of leasing (a rank of the data-parallel group).
struct rank_budget {
  uint32_t window = 0; ///< its in-flight window now; 0: not here yet
  /// Its time per step beside data waits (step + collective wait), 0 if
  /// not known yet: how long each buffered batch lasts it.
  uint64_t period_ns = 0;
};

/// What the lease book has counted over the run (the router's summary).
struct lease_counters {
  uint64_t leased = 0;   ///< items leased from the pending queue
  uint64_t acked = 0;    ///< leases the trainer acknowledged
  uint64_t acked_samples = 0; ///< training samples in those batches
  uint64_t hedged = 0;   ///< stragglers leased a second time
  uint64_t released = 0; ///< re-leased because a worker was lost
  uint64_t resumed = 0;  ///< trained before a restart: skipped
  uint64_t gpu_blur = 0; ///< leased for the trainer's GPU blur
};

/// Every work item between the source and the trainer's acknowledgement,
/// for a group of trainers (ranks; one per run is rank 0).
///
/// An item is *pending* (pulled from the source, not leased), *leased*
/// (to a worker, until the trainer acknowledges its batch: a lease never
/// ends on a worker's word, so a lost worker loses nothing), *orphaned*
/// (leased, but its worker was lost and no live one was left: it waits for
/// one) or, when the trainer saves checkpoints, *unsaved* (acknowledged
/// since the trainer's last checkpoint: it comes back if the trainer dies
/// before the next). Batch ids the trainer trained on before a restart are
/// *resumed*: never leased again. Each item is for one rank
/// (work_item::slot.rank); pending items wait in one queue per rank and
/// each rank has its own in-flight window. Times are nanoseconds on the caller's
/// clock. The book tells the routing table about leases and lost workers;
/// it sends nothing itself: its operations return the leases to send.
/// Not thread-safe: owned by the router actor.
class lease_book {
public:
  /// The history the hedging median is taken over (lease-to-ack times).
  static constexpr size_t hedge_history = 32;

  // -- the source ------------------------------------------------------------

  /// Items the source handed out, in order; none means it has no more.
  void add_pending(std::vector<work_item> items);

  /// The source has handed out everything.
  bool source_done() const noexcept {
    return source_done_;
  }

  /// The oldest pending item of any rank (what the console's delay
  /// estimate is for).
  const work_item* front_pending() const noexcept;

  // -- leasing ---------------------------------------------------------------

  /// What lease() leased, and why it stopped.
  struct lease_result {
    std::vector<lease_order> orders;
    /// Pending ran dry below the window: pull more from the source.
    bool needs_items = false;
  };

  /// Leases pending items while some rank has fewer than its window in
  /// flight (leased or orphaned), each to the worker `table` picks near
  /// that rank's trainer; skips resumed ones. The rank closest to starving
  /// goes first: fewest buffered batches times its period, ties to the
  /// oldest item; each rank's items go in order. Stops early when no
  /// worker qualifies. `on_trainer` says for each lease whether the
  /// trainer's GPU blurs it (placement).
  lease_result lease(routing_table& table,
                     const std::vector<rank_budget>& ranks, uint64_t now_ns,
                     const std::function<bool()>& on_trainer = {});

  /// lease() for a run of one trainer with window `window`.
  lease_result lease(routing_table& table, uint32_t window, uint64_t now_ns,
                     const std::function<bool()>& on_trainer = {});

  /// The machine rank `rank`'s trainer runs on (locality for its items).
  void set_trainer_host(uint32_t rank, std::string host);

  /// Leases every orphan to a live worker, if there is one now.
  std::vector<lease_order> relay_orphans(routing_table& table,
                                         uint64_t now_ns);

  // -- acknowledgements ------------------------------------------------------

  /// The trainer acknowledged `batch_id`: its lease ends. Returns the time
  /// from its (last) lease to now, or nothing for a batch no longer leased
  /// (the second copy of a hedged or re-leased batch).
  std::optional<uint64_t> ack(uint64_t batch_id, uint64_t now_ns);

  /// The trainer's checkpoint holds everything acknowledged so far.
  void saved();

  /// A group's checkpoint holds each rank r's items below slot.seq
  /// `next_seq[r]` (acks of later ones may have come first: they stay).
  void saved(const std::vector<uint64_t>& next_seq);

  // -- failures --------------------------------------------------------------

  /// Worker `worker` died or hung: the table stops picking it and every
  /// batch leased to it and not acknowledged, sent already or not, goes to
  /// another worker (an orphan if none is left). A copy that still reaches
  /// the trainer is trained on if first, dropped by batch id if not.
  /// `held` (if given) gets how many batches it held.
  std::vector<lease_order> lose_worker(size_t worker, routing_table& table,
                                       uint64_t now_ns,
                                       size_t* held = nullptr);

  /// Leases again, to another worker, every batch leased longer ago than
  /// `factor` times the median of the recent lease-to-ack times (with at
  /// least 8 of them, two workers, and once per batch).
  std::vector<lease_order> hedge(routing_table& table, uint64_t now_ns,
                                 double factor);

  /// The trainer is gone. One that saves checkpoints may come back: every
  /// item not in its checkpoint (unsaved, leased, orphaned) goes back to
  /// the front of the queue in batch order, and nothing is leased until a
  /// trainer joins. Returns how many items wait. Without checkpoints
  /// nothing changes: the caller fails the run.
  size_t lose_trainer(uint64_t now_ns);

  /// A trainer joined (first, or again with --resume): whether it saves
  /// checkpoints, and the batches it trained on before (never leased
  /// again).
  void trainer_joined(bool checkpoints, uint64_t done_below,
                      const std::vector<uint64_t>& done_ids);

  /// Every rank of a group is here (first, or formed again from its
  /// checkpoint): whether it saves checkpoints, and each rank's slot.seq
  /// below which it trained before (never leased again).
  void group_joined(bool checkpoints, std::vector<uint64_t> resume_seq);

  // -- state -----------------------------------------------------------------

  bool trainer_checkpoints() const noexcept {
    return trainer_checkpoints_;
  }

  /// When the trainer was lost (it saves checkpoints and has not rejoined).
  std::optional<uint64_t> trainer_lost_at() const noexcept {
    return trainer_lost_at_;
  }

  /// Leased and not acknowledged (orphans included).
  size_t in_flight() const noexcept {
    return leases_.size();
  }

  /// Those of them for rank `rank`.
  size_t in_flight(uint32_t rank) const noexcept {
    return rank < in_flight_by_rank_.size() ? in_flight_by_rank_[rank] : 0;
  }

  /// Pending items of every rank.
  size_t pending() const noexcept {
    return pending_count_;
  }

  /// Those of them for rank `rank`.
  size_t pending(uint32_t rank) const noexcept {
    return rank < pending_.size() ? pending_[rank].size() : 0;
  }

  size_t orphans() const noexcept {
    return orphans_.size();
  }

  size_t unsaved() const noexcept {
    return unsaved_.size();
  }

  /// Nothing leased or orphaned.
  bool drained() const noexcept {
    return leases_.empty() && orphans_.empty();
  }

  /// Every item of the run is acknowledged (and the trainer is here).
  bool done() const noexcept {
    return source_done_ && pending_count_ == 0 && drained()
           && !trainer_lost_at_;
  }

  /// Batches currently leased to `worker`.
  size_t leased_to(size_t worker) const;

  const lease_counters& counters() const noexcept {
    return counters_;
  }

private:
  struct lease_entry {
    work_item item; // kept to lease it again (hedging, a lost worker)
    size_t worker = 0;
    uint64_t leased_ns = 0;
    bool hedged = false;
  };

  // Sends `item`, still leased under its batch id, to a live worker other
  // than `exclude`; parks it as an orphan if there is none.
  std::optional<lease_order> relay(work_item item, size_t exclude,
                                   routing_table& table, uint64_t now_ns);

  // Queues `item` for its rank, at the back (or the front: given back).
  void queue(work_item item, bool front = false);
  const std::string& host_of(const work_item& item) const;
  void count_lease(const work_item& item, int delta);

  std::vector<std::deque<work_item>> pending_; // by rank, each in order
  size_t pending_count_ = 0;
  std::vector<size_t> in_flight_by_rank_;
  std::vector<std::string> hosts_; // by rank: its trainer's machine
  bool source_done_ = false;
  std::unordered_map<uint64_t, lease_entry> leases_; // by batch id
  std::deque<work_item> orphans_;
  std::map<uint64_t, work_item> unsaved_; // acked since the last checkpoint
  batch_id_set resumed_;
  std::vector<uint64_t> resume_seq_; // by rank: a group's resumed items
  std::deque<uint64_t> recent_ns_; // lease-to-ack times of the last batches
  bool trainer_checkpoints_ = false;
  std::optional<uint64_t> trainer_lost_at_;
  lease_counters counters_;
};

} // namespace stoker
