#pragma once

// A worker's heartbeat while it is busy on one item.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

#include "stoker/messages.hpp"

namespace stoker {

/// Tells the router a worker is alive while it works on one item: a
/// detached actor cannot answer mid-item, and an item can take longer than
/// cluster.heartbeat-timeout (a huge image, a slow machine), which would
/// get the worker declared lost for being slow. A thread of its own sends
/// a periodic report (samples 0, in flight 1) every `interval` while the
/// worker is busy, and nothing while it is idle (the actor reports itself
/// then). A process that hangs (kill -STOP) stops this thread too, so a
/// hung worker is still found. Owned by the worker actor's state;
/// busy() and idle() are called from the actor's thread.
class worker_pulse {
public:
  using send_fn = std::function<void(const worker_report&)>;

  worker_pulse(std::chrono::milliseconds interval, send_fn send);

  /// Stops the thread and joins it (at most one interval).
  ~worker_pulse();

  worker_pulse(const worker_pulse&) = delete;
  worker_pulse& operator=(const worker_pulse&) = delete;

  /// An item starts; `now` is what the worker knows of itself (processed,
  /// busy time so far, mailbox depth): what each pulse reports.
  void busy(const worker_report& now);

  /// The item is done: no more pulses until the next.
  void idle();

  /// Pulses sent so far.
  uint64_t sent() const;

private:
  void run();

  std::chrono::milliseconds interval_;
  send_fn send_;
  mutable std::mutex mtx_;
  std::condition_variable cv_;
  bool busy_ = false;
  bool stop_ = false;
  worker_report report_;
  uint64_t sent_ = 0;
  std::thread thread_; // last: started once the rest is ready
};

} // namespace stoker
