#pragma once

#include <memory>
#include <thread>

#include <caf/actor_system.hpp>
#include <caf/expected.hpp>

#include "console/console_session.hpp"

namespace stoker {

/// The console on this process's own terminal (`--console`, key
/// `console.terminal`): the same commands as the TCP console, read from
/// standard input on a thread of its own while the job runs, answers on
/// standard output. On a terminal, lines are edited with libedit (emacs
/// keys, history with the arrow keys, tab completion of commands and their
/// arguments); from a pipe, lines are read as they come. `quit` or the end
/// of input detaches it and the job goes on. One per process: it owns the
/// terminal's settings, and the destructor wakes the reading thread, joins
/// it and restores them. Destroy it before the actors it talks to.
class terminal_console {
public:
  /// Starts reading standard input. Errors (errc::io_failure) name what
  /// could not be set up.
  static caf::expected<std::unique_ptr<terminal_console>>
  start(caf::actor_system& sys, job_target target);

  ~terminal_console();
  terminal_console(const terminal_console&) = delete;
  terminal_console& operator=(const terminal_console&) = delete;

  /// libedit's callbacks reach this through the editor's client data.
  struct state;

  explicit terminal_console(std::unique_ptr<state> st);

private:
  std::unique_ptr<state> state_;
  std::thread thread_;
};

} // namespace stoker
