#pragma once

#include <vector>

#include <caf/expected.hpp>
#include <opencv2/core.hpp>

#include "stoker/registry.hpp"
#include "kernels/image_ops.hpp"

namespace stoker {

/// Checks a chain against `reg` (known names and argument counts, each
/// transform's own checks, a decoding transform first when the source
/// gives files, a fixed output size) and returns the shape that comes out
/// of it for inputs of `input`. Errors name the entry and what was
/// expected.
caf::expected<image_shape> check_chain(const std::vector<transform_spec>& chain,
                                       image_shape input, bool files,
                                       const registry& reg);

/// The evaluation chain derived from a training chain: each entry's `eval`
/// form (flips and blurs dropped, random-crop(S, P) becomes center-crop(S),
/// random-resized-crop(S, ...) becomes resize(S) then center-crop(S)).
/// Names `reg` lacks are kept as they are (check_chain refuses them).
std::vector<transform_spec>
eval_chain_of(const std::vector<transform_spec>& train, const registry& reg);

/// A checked chain bound to its transforms' definitions (copies: it does
/// not refer to the registry), so a worker looks nothing up per sample.
/// Immutable: one chain serves every worker thread of a node at once.
class transform_chain {
public:
  transform_chain() = default;

  /// Binds `chain`; an entry `reg` lacks is errc::invalid_config, named.
  static caf::expected<transform_chain>
  bind(const std::vector<transform_spec>& chain, const registry& reg);

  /// Runs the chain on one sample on the calling thread and returns HWC
  /// float32 pixels. Entry k draws from the generator of (key, stage
  /// transforms + k). A transform's error (a file that does not decode:
  /// errc::io_failure) comes back as it is.
  caf::expected<cv::Mat> apply(sample_input input, const draw_key& key) const;

  bool empty() const noexcept { return specs_.empty(); }

private:
  std::vector<transform_spec> specs_;
  std::vector<transform_def> defs_;
};

/// Binds and runs `chain` once: for tools and tests (a worker binds once).
caf::expected<cv::Mat> apply_chain(const std::vector<transform_spec>& chain,
                                   sample_input input, const draw_key& key,
                                   const registry& reg);

} // namespace stoker
