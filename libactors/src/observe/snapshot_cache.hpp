#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace stoker {

/// What the HTTP endpoints serve: the Prometheus text and the dashboard's
/// JSON from one look at the job, or why there is none.
struct job_snapshot {
  std::string metrics; ///< /metrics
  std::string state;   ///< /api/state
  std::string error;   ///< not empty: the job did not answer (503)
  std::chrono::steady_clock::time_point taken;
};

/// Builds the job's snapshot at most once per `interval`, however many
/// ask: every request is served the latest one. Asking the job costs its
/// actors a status round (0.3-0.55 s on 2 cores with a run going), so 500
/// scrapes at once used to cost 500 rounds, queued behind two threads;
/// now they cost one. One thread of its own builds, only while asked for:
/// a request that finds the snapshot older than the interval asks for a
/// new one and waits for it a bounded time (then takes the older one).
/// Thread-safe; the destructor stops the thread and joins it.
class snapshot_cache {
public:
  using builder = std::function<job_snapshot()>;

  snapshot_cache(builder build, std::chrono::milliseconds interval);
  ~snapshot_cache();
  snapshot_cache(const snapshot_cache&) = delete;
  snapshot_cache& operator=(const snapshot_cache&) = delete;

  /// The latest snapshot: one older than the interval asks for a new one
  /// and waits up to `wait` for it. Null if there is none by then.
  std::shared_ptr<const job_snapshot> latest(std::chrono::milliseconds wait);

  /// Builds a snapshot that starts after this call and waits up to
  /// `deadline` for it: the job's final figures, once its run is over,
  /// are served at once rather than after the interval. False if none
  /// came by then.
  bool refresh(std::chrono::milliseconds deadline);

  /// Snapshots built so far.
  uint64_t builds() const;

private:
  void run();

  builder build_;
  std::chrono::milliseconds interval_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::shared_ptr<const job_snapshot> latest_;
  bool wanted_ = false;
  bool building_ = false;
  bool stopping_ = false;
  uint64_t builds_ = 0;
  std::thread thread_;
};

} // namespace stoker
