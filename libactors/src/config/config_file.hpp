#pragma once

// What a config file must be before CAF's INI parser sees it: a readable
// file that sets keys, each once. Plain code over text.

#include <string>
#include <string_view>
#include <vector>

#include <caf/error.hpp>
#include <caf/expected.hpp>

namespace stoker {

/// `text` as CAF's INI parser takes it: a UTF-8 byte order mark dropped
/// and CRLF line ends made LF (editors on Windows write both; CAF would
/// refuse the first line).
std::string normalize_config_text(std::string text);

/// Reads the config file at `path` and normalizes it. Errors
/// (errc::invalid_config) name the path: it is a directory, it cannot be
/// opened or read, a [section] header lacks its `]` (naming the line), or
/// it sets no key at all (empty, or only comments: it would run the
/// built-in defaults without a word).
caf::expected<std::string> read_config_file(const std::string& path);

/// One `key = value` line of a config file.
struct config_line {
  std::string key; ///< "router.window"; a key before any [section] alone
  int line = 0;    ///< 1-based
};

/// The keys `text` sets, in order, with their lines: [section] headers and
/// `key = value` lines outside any value (a list or map may span lines),
/// string and `;` comment aware. `text` must have parsed as INI already.
/// `unclosed`, when given, gets the lines whose header has no `]`.
std::vector<config_line> config_keys(std::string_view text,
                                     std::vector<int>* unclosed = nullptr);

/// Refuses a key set twice (in one section or in a repeated one), naming
/// `file`, the key and both lines: CAF would keep one of the two silently,
/// the first or the last depending on where they are.
caf::error check_unique_keys(std::string_view text, const std::string& file);

} // namespace stoker
