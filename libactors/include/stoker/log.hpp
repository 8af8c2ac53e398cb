#pragma once

// stoker layer: core
//
// The one way the library says anything: a line with a level, from any
// thread, handed to the sink of the node it belongs to. stoker-node's sink
// writes the lines to its standard streams as text (what it always
// printed) or as JSON objects (log.format); an embedder's sink hands them
// to its own logging (the Python package: the `logging` logger "stoker").

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "stoker/enum_names.hpp"

namespace stoker {

/// How much a line matters (log.level keeps this one and those above).
enum class log_level : uint8_t {
  debug = 1,   ///< details for whoever hunts a problem
  info = 2,    ///< what the run does: banners, joins, figures
  warning = 3, ///< something a user should look at; the run goes on
  error = 4,   ///< the run, or a part of it, failed
};

template <>
struct enum_names<log_level> {
  static constexpr enum_name<log_level> table[] = {
    {log_level::debug, "debug"},
    {log_level::info, "info"},
    {log_level::warning, "warning"},
    {log_level::error, "error"}};
};

/// How stoker-node writes its lines (log.format).
enum class log_format : uint8_t {
  text = 1, ///< the line as said: what stoker-node has always printed
  json = 2, ///< one JSON object a line: ts, level, node, role, msg
};

template <>
struct enum_names<log_format> {
  static constexpr enum_name<log_format> table[] = {
    {log_format::text, "text"}, {log_format::json, "json"}};
};

/// Who says a sink's lines: the node's name and its role ("" before the
/// config that names them is read).
struct log_origin {
  std::string node;
  std::string role;
};

/// One line as a sink's handler receives it. `text` has no newline and
/// lives only during the call.
struct log_record {
  log_level level = log_level::info;
  std::string_view text;
  std::chrono::system_clock::time_point at;
  const log_origin* origin = nullptr; ///< the sink's; never null
};

/// `r` as `format` writes it, without a newline: text, the text as said;
/// json, {"ts": "2026-12-07T12:30:25.123Z", "level": "info", "node": ...,
/// "role": ..., "msg": ...} (UTC, milliseconds).
std::string format_record(const log_record& r, log_format format);

/// Where a node's lines go. Immutable once made and safe from any thread
/// at once (gates, batch streams and actors say lines concurrently); the
/// handler must be too. Owned by whoever runs the node (stoker-node's
/// run_node, an embedder) and shared with its actor system's config.
class log_sink {
public:
  /// Called with each line at `min_level` or above, on the thread that
  /// says it, each line once and whole.
  using handler = std::function<void(const log_record&)>;

  log_sink(log_origin origin, log_level min_level, handler to);

  /// stoker-node's sink: each line, formatted as `format` says, in one
  /// write() (lines from several threads never interleave): debug and info
  /// lines to standard output, warnings and errors to standard error.
  static log_sink standard_streams(log_origin origin, log_level min_level,
                                   log_format format);

  /// Hands `text` (one line; no newline needed) to the handler when
  /// `level` is at or above the sink's level.
  void say(log_level level, std::string_view text) const;

  void debug(std::string_view text) const { say(log_level::debug, text); }
  void info(std::string_view text) const { say(log_level::info, text); }
  void warning(std::string_view text) const {
    say(log_level::warning, text);
  }
  void error(std::string_view text) const { say(log_level::error, text); }

  /// Whether a line at `level` would be handed on (to skip building it).
  bool shows(log_level level) const noexcept { return level >= min_level_; }

  const log_origin& origin() const noexcept { return origin_; }

private:
  log_origin origin_;
  log_level min_level_;
  handler to_;
};

} // namespace stoker
