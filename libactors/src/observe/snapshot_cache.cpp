#include "observe/snapshot_cache.hpp"

namespace stoker {

snapshot_cache::snapshot_cache(builder build,
                               std::chrono::milliseconds interval)
  : build_(std::move(build)), interval_(interval) {
  thread_ = std::thread{[this] { run(); }};
}

snapshot_cache::~snapshot_cache() {
  {
    std::lock_guard<std::mutex> guard{mutex_};
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void snapshot_cache::run() {
  std::unique_lock<std::mutex> lock{mutex_};
  for (;;) {
    changed_.wait(lock, [&] { return wanted_ || stopping_; });
    if (stopping_)
      return;
    wanted_ = false;
    building_ = true;
    lock.unlock();
    auto fresh = std::make_shared<job_snapshot>(build_());
    fresh->taken = std::chrono::steady_clock::now();
    lock.lock();
    latest_ = std::move(fresh);
    building_ = false;
    ++builds_;
    changed_.notify_all();
  }
}

std::shared_ptr<const job_snapshot>
snapshot_cache::latest(std::chrono::milliseconds wait) {
  std::unique_lock<std::mutex> lock{mutex_};
  auto now = std::chrono::steady_clock::now();
  if (!latest_ || now - latest_->taken >= interval_) {
    // The build under way (if any) ends after `now`: fresh enough.
    auto target = builds_ + 1;
    wanted_ = true;
    changed_.notify_all();
    changed_.wait_for(lock, wait,
                      [&] { return builds_ >= target || stopping_; });
  }
  return latest_;
}

bool snapshot_cache::refresh(std::chrono::milliseconds deadline) {
  std::unique_lock<std::mutex> lock{mutex_};
  // A build under way began before this call: the one after it counts.
  auto target = builds_ + (building_ ? 2 : 1);
  wanted_ = true;
  changed_.notify_all();
  // (A build under way reset wanted_ when it began; the thread sees ours
  // when it ends.)
  changed_.wait_for(lock, deadline,
                    [&] { return builds_ >= target || stopping_; });
  return builds_ >= target;
}

uint64_t snapshot_cache::builds() const {
  std::lock_guard<std::mutex> guard{mutex_};
  return builds_;
}

} // namespace stoker
