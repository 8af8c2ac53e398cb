#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace stoker {

/// The kinds of metric family Stoker exposes.
enum class metric_kind { counter, gauge };

/// Label names and values of one sample, in order.
using metric_labels = std::vector<std::pair<std::string, std::string>>;

/// Writes the Prometheus text exposition format (version 0.0.4): for each
/// family a `# HELP` and a `# TYPE` line, then its samples, label values
/// escaped (backslash, double quote, newline). Plain code; the caller
/// keeps a family's samples together and names each family once.
class metrics_text {
public:
  /// Starts a family. `name` matches [a-zA-Z_:][a-zA-Z0-9_:]*; a counter's
  /// ends in `_total` (checked by the tests, not here).
  void family(std::string_view name, metric_kind kind, std::string_view help);

  /// One sample of the family begun last.
  void sample(const metric_labels& labels, double value);

  /// A sample without labels.
  void sample(double value) { sample({}, value); }

  /// The text so far (ends with a newline when not empty).
  const std::string& text() const noexcept { return text_; }

private:
  std::string text_;
  std::string name_;
};

/// `value` as the text format writes it: integers without a fraction,
/// NaN as NaN, infinities as +Inf / -Inf.
std::string metric_value(double value);

} // namespace stoker
