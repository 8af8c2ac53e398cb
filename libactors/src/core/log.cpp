#include "stoker/log.hpp"

#include <cstdio>
#include <ctime>

#include "core/json_text.hpp"
#include "core/log_line.hpp"
#include <caf/actor_system_config.hpp>

#include "core/system_log.hpp"

namespace stoker {

std::string format_record(const log_record& r, log_format format) {
  if (format == log_format::text)
    return std::string{r.text};
  using namespace std::chrono;
  auto ms = duration_cast<milliseconds>(r.at.time_since_epoch()).count();
  auto seconds = static_cast<std::time_t>(ms / 1000);
  std::tm utc{};
  ::gmtime_r(&seconds, &utc);
  char stamp[40];
  auto n = std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &utc);
  std::snprintf(stamp + n, sizeof stamp - n, ".%03dZ",
                static_cast<int>(ms % 1000));
  std::string out = "{\"ts\": \"";
  out += stamp;
  out += "\", \"level\": " + json_quoted(to_string(r.level));
  out += ", \"node\": " + json_quoted(r.origin->node);
  out += ", \"role\": " + json_quoted(r.origin->role);
  out += ", \"msg\": " + json_quoted(r.text) + "}";
  return out;
}

log_sink::log_sink(log_origin origin, log_level min_level, handler to)
  : origin_(std::move(origin)), min_level_(min_level), to_(std::move(to)) {}

log_sink log_sink::standard_streams(log_origin origin, log_level min_level,
                                    log_format format) {
  return log_sink{std::move(origin), min_level,
                  [format](const log_record& r) {
                    write_line(r.level >= log_level::warning ? 2 : 1,
                               format_record(r, format));
                  }};
}

void log_sink::say(log_level level, std::string_view text) const {
  if (!shows(level) || !to_)
    return;
  // A line said with an embedded newline stays one record; a trailing one
  // is the line's end, not part of it.
  while (!text.empty() && text.back() == '\n')
    text.remove_suffix(1);
  log_record r;
  r.level = level;
  r.text = text;
  r.at = std::chrono::system_clock::now();
  r.origin = &origin_;
  to_(r);
}

std::shared_ptr<const log_sink>
shared_log_of(const caf::actor_system& sys) {
  if (auto* carrier = dynamic_cast<const log_carrier*>(&sys.config());
      carrier != nullptr && carrier->log)
    return carrier->log;
  // Immutable, made once: a bare actor system's lines as stoker-node's.
  static const log_sink plain = log_sink::standard_streams(
    log_origin{}, log_level::info, log_format::text);
  return std::shared_ptr<const log_sink>{std::shared_ptr<void>{}, &plain};
}

const log_sink& log_of(const caf::actor_system& sys) {
  return *shared_log_of(sys);
}

} // namespace stoker
