#pragma once

// stoker layer: core

#include <iterator>
#include <optional>
#include <string>
#include <string_view>

namespace stoker {

/// One value of an enum and the name config files, messages and reports
/// use for it.
template <class E>
struct enum_name {
  E value;
  std::string_view name;
};

/// The names of enum `E`, declared once next to the enum as a
/// specialization with a `static constexpr enum_name<E> table[]`, in the
/// order messages list them. Everything below (parse, print, the list of
/// choices an error names) reads that one table.
template <class E>
struct enum_names {};

/// The name of `x` ("unknown" for a value the table lacks).
template <class E, class = decltype(enum_names<E>::table)>
std::string to_string(E x) {
  for (auto& entry : enum_names<E>::table)
    if (entry.value == x)
      return std::string{entry.name};
  return "unknown";
}

/// The value named `name`, or nothing.
template <class E>
std::optional<E> parse_enum(std::string_view name) {
  for (auto& entry : enum_names<E>::table)
    if (entry.name == name)
      return entry.value;
  return std::nullopt;
}

/// The names for "expected ..." in an error, each in `quote`:
/// `"a", "b" or "c"` (config values), or `a, b or c` (console words).
template <class E>
std::string enum_choices(std::string_view quote = "\"") {
  std::string out;
  constexpr auto n = std::size(enum_names<E>::table);
  for (size_t i = 0; i < n; ++i) {
    if (i > 0)
      out += i + 1 == n ? " or " : ", ";
    out += quote;
    out += enum_names<E>::table[i].name;
    out += quote;
  }
  return out;
}

} // namespace stoker
