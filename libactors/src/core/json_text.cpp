#include "core/json_text.hpp"

#include <cmath>
#include <cstdio>
#include <sstream>

namespace stoker {

std::string json_quoted(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string json_number(double x) {
  if (!std::isfinite(x))
    return "null";
  std::ostringstream out;
  out.precision(6);
  out << x;
  return out.str();
}

} // namespace stoker
