#include "stoker/entry_spec.hpp"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "stoker/errors.hpp"

namespace stoker {

namespace {

std::string trimmed(std::string_view s) {
  auto b = s.find_first_not_of(" \t");
  if (b == std::string_view::npos)
    return {};
  auto e = s.find_last_not_of(" \t");
  return std::string{s.substr(b, e - b + 1)};
}

// "module.sub:callable.attr": Python names, dotted, either side of one
// colon.
bool is_reference(const std::string& word) {
  auto colon = word.find(':');
  if (colon == std::string::npos || word.find(':', colon + 1) != word.npos)
    return false;
  auto dotted = [](std::string_view s) {
    bool start = true;
    for (char c : s) {
      bool letter = std::isalpha(static_cast<unsigned char>(c)) || c == '_';
      bool digit = std::isdigit(static_cast<unsigned char>(c));
      if (c == '.') {
        if (start)
          return false;
        start = true;
      } else if (letter || (digit && !start)) {
        start = false;
      } else {
        return false;
      }
    }
    return !start;
  };
  std::string_view w{word};
  return dotted(w.substr(0, colon)) && dotted(w.substr(colon + 1));
}

} // namespace

entry_spec make_entry(std::string name, std::vector<double> args) {
  entry_spec e;
  e.text = name;
  for (size_t i = 0; i < args.size(); ++i) {
    char number[32];
    std::snprintf(number, sizeof(number), "%.17g", args[i]);
    e.text += (i == 0 ? "(" : ", ") + std::string{number};
  }
  if (!args.empty())
    e.text += ")";
  e.name = std::move(name);
  e.args = std::move(args);
  return e;
}

caf::expected<entry_spec> parse_entry(std::string_view text) {
  entry_spec t;
  t.text = trimmed(text);
  auto open = t.text.find('(');
  t.name = trimmed(t.text.substr(0, open));
  auto fail = [&](const std::string& why) {
    return make_error(errc::invalid_config, "\"" + t.text + "\": " + why);
  };
  if (t.name.empty())
    return fail("expected NAME or NAME(ARG, ...)");
  if (open == std::string::npos)
    return t;
  if (t.text.back() != ')')
    return fail("expected NAME(ARG, ...) with a closing parenthesis");
  auto inside = t.text.substr(open + 1, t.text.size() - open - 2);
  if (trimmed(inside).empty())
    return t;
  for (size_t at = 0;;) {
    auto comma = inside.find(',', at);
    auto word = trimmed(inside.substr(at, comma - at));
    char* end = nullptr;
    double v = std::strtod(word.c_str(), &end);
    if (at == 0 && is_reference(word)) {
      t.ref = word;
    } else if (word.empty() || *end != '\0' || !std::isfinite(v)) {
      return fail("argument '" + word + "' is not a number"
                  + (at == 0 ? " (nor MODULE:CALLABLE)" : ""));
    } else {
      t.args.push_back(v);
    }
    if (comma == std::string::npos)
      return t;
    at = comma + 1;
  }
}

} // namespace stoker
