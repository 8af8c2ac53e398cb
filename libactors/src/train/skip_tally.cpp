#include "train/skip_tally.hpp"

#include <algorithm>
#include <cstdio>

#include "stoker/errors.hpp"
#include "transforms/transform_chain.hpp"

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

caf::error
failure_share::add(uint64_t delivered,
                   const std::vector<std::string>& skipped_sources,
                   const std::vector<std::string>& skipped_reasons) {
  samples_ += delivered + skipped_sources.size();
  for (size_t i = 0; i < skipped_sources.size(); ++i) {
    if (!is_transform_failure_source(skipped_sources[i]))
      continue;
    if (failed_++ == 0) {
      first_source_ = failed_transform_of(skipped_sources[i]);
      first_reason_ = i < skipped_reasons.size() ? skipped_reasons[i]
                                                 : "no reason given";
    }
  }
  auto judged = std::max<uint64_t>(samples_, min_judged);
  if (failed_ == 0
      || static_cast<double>(failed_)
           <= max_share_ * static_cast<double>(judged))
    return caf::none;
  char share[32];
  std::snprintf(share, sizeof(share), "%.1f%%",
                100.0 * static_cast<double>(failed_)
                  / static_cast<double>(samples_));
  char limit[32];
  std::snprintf(limit, sizeof(limit), "%g", max_share_);
  return make_error(errc::run_failure,
                    first_source_ + " failed on " + std::to_string(failed_)
                      + " of " + std::to_string(samples_)
                      + " samples so far (" + share
                      + "), past pipeline.max-failed-share = " + limit
                      + "; the first: " + first_reason_);
}

} // namespace stoker
