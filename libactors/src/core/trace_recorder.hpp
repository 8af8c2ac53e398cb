#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <caf/error.hpp>

namespace stoker {

/// A timeline in the Chrome Trace Event format (loads in Perfetto and
/// chrome://tracing): one track per worker with a span per batch, one for
/// the trainer with its steps and the waits for data between them. The
/// router records it from the reports it gets (times on its own clock).
/// Holds at most `max_spans` spans and counts the rest as dropped. Not
/// thread-safe: owned by the router actor.
class trace_recorder {
public:
  explicit trace_recorder(size_t max_spans = 1000000);

  /// A span `name` on `track` from `start_ns` for `duration_ns`.
  void span(const std::string& track, std::string_view name,
            uint64_t start_ns, uint64_t duration_ns, uint64_t batch_id);

  size_t spans() const noexcept { return events_.size(); }
  size_t dropped() const noexcept { return dropped_; }

  /// {"traceEvents": [...], "displayTimeUnit": "ms"}, with a thread_name
  /// event per track.
  std::string to_json() const;

  /// Writes to_json() to `path` (temp file, then rename); errors name it.
  caf::error write(const std::string& path) const;

private:
  struct event {
    int track;
    std::string name;
    uint64_t start_ns;
    uint64_t duration_ns;
    uint64_t batch_id;
  };

  size_t max_spans_;
  size_t dropped_ = 0;
  std::map<std::string, int> tracks_;
  std::vector<event> events_;
};

} // namespace stoker
