#include "train/skip_tally.hpp"

namespace stoker {

void skip_tally::by_source::add(const std::string& source,
                                const std::string& why) {
  auto [it, fresh] = counts.try_emplace(source);
  if (fresh) {
    order.push_back(source);
    it->second.reason = why;
  }
  ++it->second.samples;
}

void skip_tally::add(uint64_t epoch, const std::string& source,
                     const std::string& why) {
  epochs_[epoch].add(source, why);
  run_.add(source, why);
  ++total_;
}

std::vector<std::string> skip_tally::take_epoch_lines(uint64_t epoch) {
  std::vector<std::string> out;
  auto it = epochs_.find(epoch);
  if (it == epochs_.end())
    return out;
  auto& e = it->second;
  uint64_t rest_samples = 0;
  for (size_t i = 0; i < e.order.size(); ++i) {
    auto& c = e.counts.at(e.order[i]);
    if (i < max_lines)
      out.push_back(e.order[i] + ": " + std::to_string(c.samples)
                    + " sample(s) skipped (" + c.reason + ")");
    else
      rest_samples += c.samples;
  }
  if (e.order.size() > max_lines)
    out.push_back("and " + std::to_string(e.order.size() - max_lines)
                  + " more source(s): " + std::to_string(rest_samples)
                  + " sample(s) skipped");
  epochs_.erase(it);
  return out;
}

std::vector<skip_source> skip_tally::sources() const {
  std::vector<skip_source> out;
  skip_source rest;
  size_t left = 0;
  for (auto& name : run_.order) {
    auto& c = run_.counts.at(name);
    if (out.size() < max_sources) {
      out.push_back(skip_source{name, c.samples, c.reason});
    } else {
      ++left;
      rest.samples += c.samples;
    }
  }
  if (left > 0) {
    rest.source = "(" + std::to_string(left) + " more sources)";
    rest.reason = "not listed one by one";
    out.push_back(std::move(rest));
  }
  return out;
}

} // namespace stoker
