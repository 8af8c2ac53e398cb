#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include <caf/actor_system.hpp>

#include "stoker/actors.hpp"

namespace stoker {

/// What one progress line shows.
struct progress_figures {
  uint64_t done = 0;   ///< samples acknowledged by the trainers
  uint64_t total = 0;  ///< samples the run delivers (0: unknown)
  double rate_sps = 0; ///< samples/s lately (< 0: not known yet)
  double idle = -1;    ///< accelerator idle fraction lately (< 0: unknown)
};

/// The line, like tqdm's: "  6784/16000 samples [#####-----]  42% |
/// 1,058 samples/s | ETA 9s | accelerator idle 0.2%". Plain function.
std::string format_progress(const progress_figures& figures);

/// Shows the run's progress as one line of standard output, rewritten in
/// place ("\r", erase to the end of the line) twice a second from a
/// thread of its own, with figures from the router's status (one message
/// per update; nothing per batch). The destructor stops it and ends the
/// line, so what follows starts on a line of its own. Use only where
/// standard output is a terminal (shows_progress).
class progress_reporter {
public:
  progress_reporter(caf::actor_system& sys, router_actor router);
  ~progress_reporter();
  progress_reporter(const progress_reporter&) = delete;
  progress_reporter& operator=(const progress_reporter&) = delete;

private:
  void run();

  caf::actor_system& sys_;
  router_actor router_;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

} // namespace stoker
