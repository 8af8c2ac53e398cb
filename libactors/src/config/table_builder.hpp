#pragma once

// The option table's builder: one key per call, naming the member it fills
// (used by option_table.cpp only; kept apart so the table itself reads as
// the list of keys).

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>

#include <caf/timespan.hpp>

#include "stoker/errors.hpp"
#include "config/option_table.hpp"

namespace stoker::detail {

constexpr int64_t i64_max = std::numeric_limits<int64_t>::max();
constexpr int64_t u32_max = std::numeric_limits<uint32_t>::max();

// A value as the user wrote it: a flag's raw text, a file's value in CAF's
// notation (strings quoted).
inline std::string shown(const std::string& name, const caf::config_value& v) {
  if (name.find('.') == std::string::npos)
    if (auto text = caf::get_if<std::string>(&v))
      return "--" + name + "=" + *text;
  auto value = to_string(v);
  if (auto t = caf::get_if<caf::timespan>(&v)) {
    // In the largest unit that is whole (CAF writes zero as "0d").
    auto ns = t->count();
    value = ns % 1'000'000'000 == 0 ? std::to_string(ns / 1'000'000'000) + "s"
            : ns % 1'000'000 == 0   ? std::to_string(ns / 1'000'000) + "ms"
            : ns % 1'000 == 0       ? std::to_string(ns / 1'000) + "us"
                                    : std::to_string(ns) + "ns";
  }
  return (name.find('.') == std::string::npos ? "--" + name + "="
                                              : name + " = ")
         + value;
}

inline caf::error bad_value(const std::string& name, const caf::config_value& v,
                     const std::string& expected) {
  return make_error(errc::invalid_config,
                    shown(name, v) + ": expected " + expected);
}

inline std::string number_text(double x) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", x);
  return text;
}

inline std::string duration_text(std::chrono::milliseconds d) {
  auto ms = d.count();
  return ms % 1000 == 0 ? std::to_string(ms / 1000) + "s"
                        : std::to_string(ms) + "ms";
}

inline std::string quoted(const std::string& x) {
  return "\"" + x + "\"";
}

// The text value of `v`, or an error naming the key.
inline caf::expected<std::string> text_of(const std::string& name,
                                   const caf::config_value& v) {
  if (auto x = caf::get_if<std::string>(&v))
    return *x;
  return bad_value(name, v, "a quoted string");
}

inline caf::expected<std::vector<std::string>>
text_list_of(const std::string& name, const caf::config_value& v) {
  if (auto x = caf::get_if<std::vector<std::string>>(&v))
    return *x;
  return bad_value(name, v, "a list of quoted strings, e.g. [\"a\", \"b\"]");
}

// The member a key fills, as a path of member pointers from run_config:
// node_at<&node_options::workers> or pipe_at<&pipeline_options::source,
// &source_spec::batch_size>. The path's first step says the key's scope.
template <auto First, auto... Rest>
struct field_path {
  static constexpr option_scope scope
    = std::is_same_v<decltype(First), node_options run_config::*>
        ? option_scope::node
        : option_scope::pipeline;

  template <class T>
  auto& operator()(T& x) const {
    return ((x .* First) .* ... .* Rest); // a fold over the path
  }
};

template <auto... Members>
constexpr field_path<&run_config::node, Members...> node_at{};

template <auto... Members>
constexpr field_path<&run_config::pipeline, Members...> pipe_at{};

// Builds the table one section at a time, CAF's opt_group style: each add
// is one key, naming the member it fills; what a default-constructed
// run_config holds there is the key's default.
class table_builder {
public:
  table_builder(std::vector<option_decl>& out, std::string section)
    : out_(out), section_(std::move(section)) {
    // nop
  }

  /// A whole number in [min, max].
  template <class Field>
  table_builder& integer(const char* key, Field field, int64_t min, int64_t max,
                         const char* help) {
    using T = std::decay_t<decltype(field(defaults_))>;
    auto expected = "an integer from " + std::to_string(min) + " to "
                    + std::to_string(max);
    auto values = std::to_string(min) + ".."
                  + (max == i64_max ? std::string{"2^63-1"}
                                    : std::to_string(max));
    return add<int64_t>(key, Field::scope, help, values,
                        std::to_string(field(defaults_)),
                        [=](const std::string& name, const caf::config_value& v,
                            run_config& cfg) {
                          auto x = caf::get_if<int64_t>(&v);
                          if (x == nullptr || *x < min || *x > max)
                            return bad_value(name, v, expected);
                          field(cfg) = static_cast<T>(*x);
                          return caf::error{};
                        });
  }

  /// A number in [min, max]; whole numbers count (`lr = 1`), in a file as
  /// on the command line.
  template <class Field>
  table_builder&
  real(const char* key, Field field, double min, double max, const char* help) {
    using T = std::decay_t<decltype(field(defaults_))>;
    auto expected = "a number from " + number_text(min) + " to "
                    + number_text(max);
    return add<double>(key, Field::scope, help,
                       number_text(min) + ".." + number_text(max),
                       number_text(static_cast<double>(field(defaults_))),
                       [=](const std::string& name, const caf::config_value& v,
                           run_config& cfg) {
                         std::optional<double> x;
                         if (auto d = caf::get_if<double>(&v))
                           x = *d;
                         else if (auto i = caf::get_if<int64_t>(&v))
                           x = static_cast<double>(*i);
                         if (!x || !(*x >= min && *x <= max))
                           return bad_value(name, v, expected);
                         field(cfg) = static_cast<T>(*x);
                         return caf::error{};
                       });
  }

  template <class Field>
  table_builder& boolean(const char* key, Field field, const char* help) {
    return add<bool>(key, Field::scope, help, "true or false",
                     field(defaults_) ? "true" : "false",
                     [=](const std::string& name, const caf::config_value& v,
                         run_config& cfg) {
                       auto x = caf::get_if<bool>(&v);
                       if (x == nullptr)
                         return bad_value(name, v, "true or false");
                       field(cfg) = *x;
                       return caf::error{};
                     });
  }

  template <class Field>
  table_builder& text(const char* key, Field field, const char* help) {
    return add<std::string>(key, Field::scope, help, "a string",
                            quoted(field(defaults_)),
                            [=](const std::string& name,
                                const caf::config_value& v, run_config& cfg) {
                              auto x = text_of(name, v);
                              if (!x)
                                return std::move(x.error());
                              field(cfg) = std::move(*x);
                              return caf::error{};
                            });
  }

  /// A positive duration: 500ms, 10s (or 0s too, with `zero_ok`).
  template <class Field>
  table_builder& duration(const char* key, Field field, const char* help,
                          bool zero_ok = false) {
    return add<caf::timespan>(
      key, Field::scope, help, zero_ok ? "a duration (0s: none)" : "a duration",
      duration_text(field(defaults_)),
      [=](const std::string& name, const caf::config_value& v,
          run_config& cfg) {
        auto x = caf::get_if<caf::timespan>(&v);
        if (x == nullptr || x->count() < 0 || (x->count() == 0 && !zero_ok))
          return bad_value(name, v,
                           zero_ok ? "a duration such as 0s, 500ms or 10s"
                                   : "a positive duration such as 500ms or "
                                     "10s");
        field(cfg) = std::chrono::duration_cast<std::chrono::milliseconds>(*x);
        return caf::error{};
      });
  }

  /// One name of an enum's table (enum_names.hpp).
  template <class Field>
  table_builder& choice(const char* key, Field field, const char* help) {
    using E = std::decay_t<decltype(field(defaults_))>;
    auto values = enum_choices<E>();
    return add<std::string>(key, Field::scope, help, values,
                            quoted(to_string(field(defaults_))),
                            [=](const std::string& name,
                                const caf::config_value& v, run_config& cfg) {
                              auto x = text_of(name, v);
                              if (!x)
                                return std::move(x.error());
                              auto e = parse_enum<E>(*x);
                              if (!e)
                                return bad_value(name, v, values);
                              field(cfg) = *e;
                              return caf::error{};
                            });
  }

  /// A registry entry, "NAME" or "NAME(A, B)" (prepare_run checks the
  /// name against the registry).
  template <class Field>
  table_builder& entry(const char* key, Field field, const char* help) {
    return add<std::string>(key, Field::scope, help, "NAME or NAME(ARGS)",
                            quoted(field(defaults_).text),
                            [=](const std::string& name,
                                const caf::config_value& v, run_config& cfg) {
                              auto x = text_of(name, v);
                              if (!x)
                                return std::move(x.error());
                              auto e = parse_entry(*x);
                              if (!e)
                                return make_error(errc::invalid_config,
                                                  name + " = "
                                                    + describe(e.error()));
                              field(cfg) = std::move(*e);
                              return caf::error{};
                            });
  }

  /// A list of registry entries.
  template <class Field>
  table_builder& entries(const char* key, Field field, const char* help) {
    return list(key, Field::scope, help, "[\"NAME(ARGS)\", ...]", "[]",
                [=](const std::string& name, const std::vector<std::string>& xs,
                    run_config& cfg) {
                  std::vector<entry_spec> out;
                  for (auto& x : xs) {
                    auto e = parse_entry(x);
                    if (!e)
                      return make_error(errc::invalid_config,
                                        name + ": " + describe(e.error()));
                    out.push_back(std::move(*e));
                  }
                  field(cfg) = std::move(out);
                  return caf::error{};
                });
  }

  /// A list of strings, each checked by `store`.
  template <class Store>
  table_builder& list(const char* key, option_scope scope, const char* help,
                      std::string values, std::string default_text,
                      Store store) {
    return add<std::vector<std::string>>(
      key, scope, help, std::move(values), std::move(default_text),
      [=](const std::string& name, const caf::config_value& v,
          run_config& cfg) {
        auto xs = text_list_of(name, v);
        if (!xs)
          return std::move(xs.error());
        return store(name, *xs, cfg);
      });
  }

  /// A string read by `store` (which checks it).
  template <class Store>
  table_builder& text_with(const char* key, option_scope scope,
                           const char* help, std::string values,
                           std::string default_text, Store store) {
    return add<std::string>(key, scope, help, std::move(values),
                            std::move(default_text),
                            [=](const std::string& name,
                                const caf::config_value& v, run_config& cfg) {
                              auto x = text_of(name, v);
                              if (!x)
                                return std::move(x.error());
                              return store(name, v, *x, cfg);
                            });
  }

  /// Replaces the last key's default as shown (one computed at run time:
  /// the hostname, the process id).
  table_builder& shown_default(std::string text) {
    out_.back().default_text = std::move(text);
    return *this;
  }

  /// Continues with another section.
  table_builder section(std::string name) {
    return table_builder{out_, std::move(name)};
  }

private:
  template <class CafType, class Read>
  table_builder& add(const char* key, option_scope scope, const char* help,
                     std::string values, std::string default_text, Read read) {
    option_decl d;
    d.name = section_.empty() ? key : section_ + "." + key;
    d.help = help;
    d.values = std::move(values);
    d.default_text = std::move(default_text);
    d.scope = scope;
    d.read = [name = d.name, read](const caf::config_value& v,
                                   run_config& cfg) {
      return read(name, v, cfg);
    };
    auto category = section_.empty() ? std::string{"global"} : section_;
    std::string long_name = key;
    d.declare = [category, long_name](caf::config_option_set& set,
                                      const std::string& description) {
      set.add<CafType>(category, long_name, description);
    };
    out_.push_back(std::move(d));
    return *this;
  }

  std::vector<option_decl>& out_;
  std::string section_;
  run_config defaults_; // what each key's default is read from
};

} // namespace stoker::detail
