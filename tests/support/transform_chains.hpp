#pragma once

// Chains as the transforms suites write them: entries parsed and checked
// against the built-in registry as a config file's pipeline.transforms
// is, and an image's values to compare.

#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

#include <opencv2/core.hpp>

#include "stoker/entry_spec.hpp"
#include "stoker/registry.hpp"

namespace stoker_test {

/// The built-in registry, made once (read-only).
inline const stoker::registry& chain_registry() {
  static const stoker::registry reg = stoker::builtin_registry();
  return reg;
}

/// An entry parsed and checked as a config file's pipeline.transforms is.
inline caf::expected<stoker::transform_spec>
parse_transform(const std::string& text) {
  auto parsed = stoker::parse_entry(text);
  if (!parsed)
    return std::move(parsed.error());
  if (auto err = chain_registry().check_transform(*parsed,
                                                  "pipeline.transforms"))
    return err;
  return parsed;
}

/// A chain of entries, each required to parse.
inline std::vector<stoker::transform_spec>
chain_of(std::vector<std::string> texts) {
  std::vector<stoker::transform_spec> out;
  for (auto& t : texts) {
    auto parsed = parse_transform(t);
    BOOST_REQUIRE_MESSAGE(parsed, t);
    out.push_back(*parsed);
  }
  return out;
}

/// An image's values as floats, row by row, channel by channel.
inline std::vector<float> values(const cv::Mat& m) {
  cv::Mat f;
  m.convertTo(f, CV_32F);
  f = f.clone();
  return {f.ptr<float>(), f.ptr<float>() + f.total() * f.channels()};
}

} // namespace stoker_test
