#pragma once

// What the built-in transforms' definitions share (builtin_transforms.cpp,
// builtin_augments.cpp): one definition's start, the pixels wrapper, the
// evaluation form of an augmentation.

#include <vector>

#include <caf/error.hpp>

#include "stoker/registry.hpp"

namespace stoker::detail {

/// A definition with its name, argument count and usage; the caller sets
/// its parts.
inline transform_def define_transform(const char* name, size_t min_args,
                                      size_t max_args, const char* usage) {
  transform_def def;
  def.name = name;
  def.min_args = min_args;
  def.max_args = max_args;
  def.usage = usage;
  return def;
}

/// An apply that replaces the pixels with f(args, pixels, rng): every
/// built-in does, and none can fail on a decoded image.
template <class F>
auto pixels(F f) {
  return [f](const entry_spec& t, sample_input& s, const counter_rng& rng) {
    s.pixels = f(t.args, s.pixels, rng);
    return caf::error{};
  };
}

/// An augmentation's evaluation form: none (dropped, as flips and blurs).
inline std::vector<entry_spec> dropped_in_eval(const entry_spec&) {
  return {};
}

} // namespace stoker::detail
