#pragma once

// A node's lines, wherever they are said: actors and the functions that
// run a node reach the node's sink through its actor system's config
// (log_of), and build a line with << (log_stream), as with any ostream.

#include <memory>
#include <sstream>
#include <string_view>

#include <caf/actor_system.hpp>

#include "stoker/log.hpp"

namespace stoker {

/// What a node's actor-system config carries beside CAF's settings: the
/// node's sink, set by whoever runs the node before it makes the actor
/// system (node_config inherits it).
class log_carrier {
public:
  virtual ~log_carrier() = default;
  std::shared_ptr<const log_sink> log;
};

/// The sink of the node `sys` runs: its config's, where the config is a
/// log_carrier holding one; else text on the standard streams at info
/// (a bare actor system, as unit tests make). Safe from any thread.
const log_sink& log_of(const caf::actor_system& sys);

/// log_of(sys), shared: for what may outlive the call that makes it (a
/// gate's threads). The bare system's default is never freed.
std::shared_ptr<const log_sink> shared_log_of(const caf::actor_system& sys);

/// One line built with <<, handed to its sink when the stream goes out of
/// scope (as a temporary: at the end of its statement). Nothing is built
/// when the sink does not show the level.
class log_stream {
public:
  log_stream(const log_sink& sink, log_level level)
    : sink_(sink), level_(level), on_(sink.shows(level)) {}
  ~log_stream() {
    if (on_)
      sink_.say(level_, text_.str());
  }
  log_stream(const log_stream&) = delete;
  log_stream& operator=(const log_stream&) = delete;

  template <class T>
  log_stream& operator<<(const T& x) {
    if (on_)
      text_ << x;
    return *this;
  }
  /// Manipulators (std::fixed, std::setprecision's result works as a T).
  log_stream& operator<<(std::ios_base& (*manip)(std::ios_base&)) {
    if (on_)
      text_ << manip;
    return *this;
  }

private:
  const log_sink& sink_;
  log_level level_;
  bool on_;
  std::ostringstream text_;
};

/// A line of the node `sys` runs at `level` (info by default).
inline log_stream log_to(const caf::actor_system& sys,
                         log_level level = log_level::info) {
  return log_stream{log_of(sys), level};
}

} // namespace stoker
