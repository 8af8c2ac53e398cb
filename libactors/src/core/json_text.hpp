#pragma once

#include <string>
#include <string_view>

namespace stoker {

/// `s` as a JSON string literal, quotes included: `"` and `\` escaped,
/// control characters as \uXXXX. Bytes >= 0x80 pass through (the caller's
/// text is UTF-8).
std::string json_quoted(std::string_view s);

/// `x` as a JSON number with 6 significant digits; `null` for NaN or an
/// infinity (JSON has neither).
std::string json_number(double x);

} // namespace stoker
