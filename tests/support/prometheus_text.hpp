#pragma once

// A strict reader of the Prometheus text exposition format (0.0.4) for the
// tests: every line is a HELP, a TYPE or a sample of the family declared
// last; names, label names and values are checked; a family is declared
// once, a series appears once, a counter's name ends in _total and its
// value is >= 0. promtool (Debian's prometheus) checks the same where it is
// installed; this runs everywhere.

#include <cstdlib>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace stoker_test {

struct scraped {
  std::map<std::string, double> series; ///< "name{labels}" -> value
  std::map<std::string, std::string> types; ///< family -> counter|gauge
  std::vector<std::string> errors;          ///< empty: the text is valid

  /// The value of `series` ("name" or "name{a=\"b\"}"), or -1 if absent.
  double value(const std::string& key) const {
    auto i = series.find(key);
    return i == series.end() ? -1 : i->second;
  }
  /// The sum over every series of family `name`.
  double sum(const std::string& name) const {
    double total = 0;
    for (auto& [key, v] : series)
      if (key == name || key.rfind(name + "{", 0) == 0)
        total += v;
    return total;
  }
};

inline scraped parse_prometheus_text(const std::string& text) {
  static const std::regex help{R"(^# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) .*$)"};
  static const std::regex type{
    R"(^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped)$)"};
  static const std::regex sample{
    R"(^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{((?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*",?)*)\})? ([^ ]+)$)"};
  scraped out;
  std::istringstream in{text};
  std::string line;
  std::string family;
  std::set<std::string> declared;
  int n = 0;
  auto error = [&](const std::string& what) {
    out.errors.push_back("line " + std::to_string(n) + ": " + what + ": "
                         + line);
  };
  while (std::getline(in, line)) {
    ++n;
    std::smatch m;
    if (line.empty()) {
      error("empty line");
    } else if (std::regex_match(line, m, help)) {
      family = m[1];
      if (!declared.insert(family).second)
        error("family declared twice");
    } else if (std::regex_match(line, m, type)) {
      if (m[1] != family)
        error("TYPE for another family than its HELP");
      out.types[m[1]] = m[2];
      if (m[2] == "counter" && family.size() > 6
          && family.compare(family.size() - 6, 6, "_total") != 0)
        error("a counter's name should end in _total");
    } else if (line[0] == '#' && line.rfind("# HELP", 0) != 0
               && line.rfind("# TYPE", 0) != 0) {
      // A plain comment: the format ignores it.
    } else if (std::regex_match(line, m, sample)) {
      if (m[1] != family)
        error("sample outside its family");
      char* end = nullptr;
      std::string v = m[4];
      double value = v == "NaN" ? 0 : v == "+Inf" ? 1e308 : v == "-Inf"
                                                         ? -1e308
                                                         : std::strtod(
                                                           v.c_str(), &end);
      if (end != nullptr && *end != '\0')
        error("value is not a number");
      if (out.types[family] == "counter" && value < 0)
        error("negative counter");
      std::string key = m[1];
      if (m[2].matched)
        key += m[2];
      if (!out.series.emplace(key, value).second)
        error("series appears twice");
    } else {
      error("not a HELP, TYPE or sample line");
    }
  }
  if (!text.empty() && text.back() != '\n')
    out.errors.push_back("the text does not end with a newline");
  return out;
}

} // namespace stoker_test
