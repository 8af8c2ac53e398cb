#include "observe/metrics_text.hpp"

#include <cmath>
#include <cstdio>

namespace stoker {

namespace {

std::string escaped(std::string_view s, bool quote) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else if (quote && c == '"')
      out += "\\\"";
    else
      out += c;
  }
  return out;
}

} // namespace

std::string metric_value(double value) {
  if (std::isnan(value))
    return "NaN";
  if (std::isinf(value))
    return value > 0 ? "+Inf" : "-Inf";
  char buf[32];
  if (value == std::floor(value) && std::fabs(value) < 1e15)
    std::snprintf(buf, sizeof buf, "%.0f", value);
  else
    std::snprintf(buf, sizeof buf, "%.9g", value);
  return buf;
}

void metrics_text::family(std::string_view name, metric_kind kind,
                          std::string_view help) {
  name_ = name;
  text_ += "# HELP " + name_ + " " + escaped(help, false) + "\n";
  text_ += "# TYPE " + name_ + " "
           + (kind == metric_kind::counter ? "counter" : "gauge") + "\n";
}

void metrics_text::sample(const metric_labels& labels, double value) {
  text_ += name_;
  if (!labels.empty()) {
    text_ += '{';
    for (size_t i = 0; i < labels.size(); ++i) {
      if (i > 0)
        text_ += ',';
      text_ += labels[i].first + "=\"" + escaped(labels[i].second, true)
               + '"';
    }
    text_ += '}';
  }
  text_ += ' ' + metric_value(value) + '\n';
}

} // namespace stoker
