#include "config/config_file.hpp"

#include <cctype>
#include <fstream>
#include <map>
#include <sstream>

#include <sys/stat.h>

#include "stoker/errors.hpp"

namespace stoker {

std::string normalize_config_text(std::string text) {
  if (text.compare(0, 3, "\xEF\xBB\xBF") == 0)
    text.erase(0, 3);
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i)
    if (!(text[i] == '\r' && i + 1 < text.size() && text[i + 1] == '\n'))
      out += text[i];
  return out;
}

caf::expected<std::string> read_config_file(const std::string& path) {
  auto bad = [&](const std::string& why) {
    return make_error(errc::invalid_config,
                      "--config-file=" + path + ": " + why);
  };
  struct stat info {};
  if (::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode))
    return bad("is a directory; expected an INI file such as "
               "config/local.ini");
  std::ifstream in{path};
  if (!in)
    return bad("cannot open the file");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad())
    return bad("cannot read the file");
  auto result = normalize_config_text(text.str());
  std::vector<int> unclosed;
  auto keys = config_keys(result, &unclosed);
  if (!unclosed.empty()) {
    auto line = unclosed.front();
    size_t at = 0;
    for (int i = 1; i < line; ++i)
      at = result.find('\n', at) + 1;
    auto text_of = result.substr(at, result.find('\n', at) - at);
    return bad("line " + std::to_string(line) + ": `" + text_of
               + "` has no closing `]`; expected a [section] header");
  }
  if (keys.empty())
    return bad("sets no key (the file is empty or only comments); expected "
               "`key = value` lines under [section] headers (without "
               "--config-file, the embedded config/local.ini runs)");
  return result;
}

namespace {

bool key_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_'
         || c == '.';
}

} // namespace

std::vector<config_line> config_keys(std::string_view text,
                                     std::vector<int>* unclosed) {
  std::vector<config_line> out;
  std::string section;
  int line = 1;
  int depth = 0;        // inside [...] or {...} of a value
  bool in_string = false;
  size_t i = 0;
  auto skip_blanks = [&] {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t'))
      ++i;
  };
  while (i < text.size()) {
    // At the start of a line.
    if (depth == 0 && !in_string) {
      skip_blanks();
      if (i < text.size() && text[i] == '[') { // a [section] header
        auto end = text.find(']', i);
        auto eol = text.find('\n', i);
        if (end != std::string_view::npos && end < eol) {
          section = std::string{text.substr(i + 1, end - i - 1)};
          i = end + 1;
        } else if (unclosed != nullptr) {
          unclosed->push_back(line);
        }
      } else if (i < text.size() && key_char(text[i])) {
        auto start = i;
        while (i < text.size() && key_char(text[i]))
          ++i;
        auto key = std::string{text.substr(start, i - start)};
        skip_blanks();
        if (i < text.size() && text[i] == '=') {
          ++i;
          out.push_back(
            config_line{section.empty() ? key : section + "." + key, line});
        }
      }
    }
    // The rest of the line: values, strings, comments.
    for (; i < text.size() && (text[i] != '\n' || in_string); ++i) {
      char c = text[i];
      if (c == '\n') {
        ++line; // a string spanning lines
      } else if (in_string) {
        if (c == '\\')
          ++i;
        else if (c == '"')
          in_string = false;
      } else if (c == '"') {
        in_string = true;
      } else if (c == ';') {
        while (i < text.size() && text[i] != '\n')
          ++i;
        break;
      } else if (c == '[' || c == '{') {
        ++depth;
      } else if ((c == ']' || c == '}') && depth > 0) {
        --depth;
      }
    }
    if (i < text.size()) { // the newline
      ++i;
      ++line;
    }
  }
  return out;
}

caf::error check_unique_keys(std::string_view text, const std::string& file) {
  std::map<std::string, int> first;
  for (auto& [key, line] : config_keys(text)) {
    auto [at, fresh] = first.emplace(key, line);
    if (!fresh)
      return make_error(errc::invalid_config,
                        file + ": " + key + " is set twice, at line "
                          + std::to_string(at->second) + " and at line "
                          + std::to_string(line)
                          + "; expected each key once");
  }
  return caf::none;
}

} // namespace stoker
