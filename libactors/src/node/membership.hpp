#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <caf/error.hpp>

namespace stoker {

/// Which nodes the head waits for and which have joined. Nodes outside the
/// expected list may join too (a worker added to a running cluster). Not
/// thread-safe: owned by the registry actor.
class membership {
public:
  explicit membership(std::vector<std::string> expected);

  /// Records that `name` joined at `now_ms`; errc::invalid_config if a
  /// node of that name is already in (two nodes must not share a name).
  /// Its silence is judged from here: a node joins once its setup is done
  /// (its data opened, its model loaded), and its main thread answers the
  /// head's pings from then on.
  caf::error join(const std::string& name, int64_t now_ms);

  /// Records that `name` left (its process is gone): a new node of that
  /// name may join, e.g. a restarted trainer.
  void leave(const std::string& name);

  bool contains(const std::string& name) const;

  /// Every expected node has joined.
  bool complete() const;

  /// Expected nodes that have not joined, in the order they were expected.
  std::vector<std::string> missing() const;

  const std::vector<std::string>& joined() const noexcept { return joined_; }

  /// Records that `name` answered the head's ping at `now_ms` (any
  /// monotonic clock in milliseconds).
  void heard(const std::string& name, int64_t now_ms);

  /// A node that has not answered a ping for over `limit_ms` since it
  /// joined or last answered, and how long: each silence is said once
  /// (until the node is heard again). A node stopped before its first
  /// answer counts too: a rank stopped early in a run otherwise went
  /// unnamed, and the other ranks waited for it until their collective
  /// timed out. A process stopped with kill -STOP keeps its connections
  /// open, so only silence tells.
  struct silence {
    std::string name;
    int64_t silent_ms = 0;
  };
  std::vector<silence> newly_silent(int64_t now_ms, int64_t limit_ms);

private:
  struct heartbeat {
    int64_t last_ms = 0;
    bool said = false; // its silence was reported
  };

  std::vector<std::string> expected_;
  std::vector<std::string> joined_;
  std::map<std::string, heartbeat> heard_;
};

} // namespace stoker
