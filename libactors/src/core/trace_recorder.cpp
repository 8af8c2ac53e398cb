#include "core/trace_recorder.hpp"

#include <cstdio>
#include <fstream>
#include <sstream>

#include "stoker/errors.hpp"

namespace stoker {

namespace {

// Track and span names come from node names: escape what JSON needs.
std::string json_string(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char code[8];
      std::snprintf(code, sizeof(code), "\\u%04x", c);
      out += code;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

} // namespace

trace_recorder::trace_recorder(size_t max_spans) : max_spans_(max_spans) {
  // nop
}

void trace_recorder::span(const std::string& track, std::string_view name,
                          uint64_t start_ns, uint64_t duration_ns,
                          uint64_t batch_id) {
  if (events_.size() >= max_spans_) {
    ++dropped_;
    return;
  }
  auto [it, added] = tracks_.emplace(track, static_cast<int>(tracks_.size()) + 1);
  events_.push_back(
    event{it->second, std::string{name}, start_ns, duration_ns, batch_id});
}

std::string trace_recorder::to_json() const {
  std::ostringstream out;
  out << "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [";
  bool first = true;
  auto sep = [&] {
    out << (first ? "\n" : ",\n");
    first = false;
  };
  for (auto& [name, tid] : tracks_) {
    sep();
    out << "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 1, \"tid\": "
        << tid << ", \"args\": {\"name\": " << json_string(name) << "}}";
  }
  char number[64];
  for (auto& e : events_) {
    sep();
    out << "{\"ph\": \"X\", \"name\": " << json_string(e.name)
        << ", \"pid\": 1, \"tid\": " << e.track;
    // Microseconds with sub-microsecond digits, as the format expects.
    std::snprintf(number, sizeof(number), ", \"ts\": %.3f, \"dur\": %.3f",
                  static_cast<double>(e.start_ns) / 1e3,
                  static_cast<double>(e.duration_ns) / 1e3);
    out << number << ", \"args\": {\"batch\": " << e.batch_id << "}}";
  }
  out << "\n]}\n";
  return out.str();
}

caf::error trace_recorder::write(const std::string& path) const {
  auto tmp = path + ".tmp";
  {
    std::ofstream out{tmp, std::ios::trunc};
    out << to_json();
    if (!out.flush())
      return make_error(errc::io_failure,
                        "trace: cannot write " + tmp
                          + "; expected a writable path for trace start");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    return make_error(errc::io_failure, "trace: cannot rename " + tmp
                                          + " to " + path);
  return caf::none;
}

} // namespace stoker
