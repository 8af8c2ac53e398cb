#include "worker/worker_pulse.hpp"

namespace stoker {

worker_pulse::worker_pulse(std::chrono::milliseconds interval, send_fn send)
  : interval_(interval), send_(std::move(send)), thread_([this] { run(); }) {
  // nop
}

worker_pulse::~worker_pulse() {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void worker_pulse::busy(const worker_report& now) {
  std::lock_guard<std::mutex> guard{mtx_};
  report_ = now;
  report_.samples = 0;   // a periodic report: no item finished
  report_.in_flight = 1; // but one is being made
  busy_ = true;
}

void worker_pulse::idle() {
  std::lock_guard<std::mutex> guard{mtx_};
  busy_ = false;
}

uint64_t worker_pulse::sent() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return sent_;
}

void worker_pulse::run() {
  std::unique_lock<std::mutex> lock{mtx_};
  while (!stop_) {
    cv_.wait_for(lock, interval_, [this] { return stop_; });
    if (stop_ || !busy_)
      continue;
    auto report = report_;
    ++sent_;
    lock.unlock(); // sending must not hold up the worker's busy()/idle()
    send_(report);
    lock.lock();
  }
}

} // namespace stoker
