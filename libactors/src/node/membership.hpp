#pragma once

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

  /// Records that `name` joined; errc::invalid_config if a node of that
  /// name is already in (two nodes must not share a name).
  caf::error join(const std::string& name);

  /// Records that `name` left (its process is gone): a new node of that
  /// name may join, e.g. a restarted trainer.
  void leave(const std::string& name);

  bool contains(const std::string& name) const;

  /// Every expected node has joined.
  bool complete() const;

  /// Expected nodes that have not joined, in the order they were expected.
  std::vector<std::string> missing() const;

  const std::vector<std::string>& joined() const noexcept { return joined_; }

private:
  std::vector<std::string> expected_;
  std::vector<std::string> joined_;
};

} // namespace stoker
