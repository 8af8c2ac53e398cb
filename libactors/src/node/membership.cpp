#include "node/membership.hpp"

#include <algorithm>

#include "stoker/errors.hpp"

namespace stoker {

membership::membership(std::vector<std::string> expected)
  : expected_(std::move(expected)) {
  // nop
}

bool membership::contains(const std::string& name) const {
  return std::find(joined_.begin(), joined_.end(), name) != joined_.end();
}

caf::error membership::join(const std::string& name, int64_t now_ms) {
  if (contains(name))
    return make_error(errc::invalid_config,
                      "a node named '" + name
                        + "' has already joined; expected a unique "
                          "--node.name per node");
  joined_.push_back(name);
  heard(name, now_ms);
  return caf::none;
}

void membership::leave(const std::string& name) {
  joined_.erase(std::remove(joined_.begin(), joined_.end(), name),
                joined_.end());
  heard_.erase(name);
}

void membership::heard(const std::string& name, int64_t now_ms) {
  auto& h = heard_[name];
  h.last_ms = now_ms;
  h.said = false;
}

std::vector<membership::silence> membership::newly_silent(int64_t now_ms,
                                                          int64_t limit_ms) {
  std::vector<silence> out;
  for (auto& [name, h] : heard_)
    if (!h.said && now_ms - h.last_ms > limit_ms) {
      h.said = true;
      out.push_back(silence{name, now_ms - h.last_ms});
    }
  return out;
}

bool membership::complete() const {
  return missing().empty();
}

std::vector<std::string> membership::missing() const {
  std::vector<std::string> result;
  for (auto& name : expected_)
    if (!contains(name))
      result.push_back(name);
  return result;
}

} // namespace stoker
