#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <caf/expected.hpp>

#include "core/machine.hpp" // human_bytes

namespace stoker {

/// One line a console user typed, split into words: `set router.policy
/// round-robin` is name "set", args {"router.policy", "round-robin"}.
struct console_command {
  std::string name;
  std::vector<std::string> args;
};

/// What the console knows about one command: how many words it takes and
/// the line that shows how to use it.
struct command_spec {
  std::string_view name;
  size_t min_args;
  size_t max_args;
  std::string_view usage; ///< e.g. "set router.policy POLICY"
  std::string_view help;  ///< one sentence
};

/// Every console command, in the order `help` lists them.
const std::vector<command_spec>& console_command_specs();

/// Splits `line` into words (runs of spaces and tabs separate them) and
/// checks the command exists and has a valid number of arguments. An empty
/// line gives an empty name. Errors (errc::invalid_config) carry the usage
/// line: "unknown command 'x'; try help" or "usage: set router.policy ...".
caf::expected<console_command> parse_console_line(std::string_view line);

/// `help` (every command, one line each) or `help CMD` (its usage and
/// sentence); an unknown CMD is an error naming it.
caf::expected<std::string> console_help(std::string_view command = {});

/// Command names starting with `prefix`, for tab completion.
std::vector<std::string> complete_command(std::string_view prefix);

/// What tab completion offers for the word under the cursor.
struct console_completion {
  std::string word;                 ///< the partial word before the cursor
  std::vector<std::string> matches; ///< whole words that start with it
};

/// Completes the last word of `before_cursor` (what the user typed up to
/// the cursor): a command name first, then what that command takes (help
/// COMMAND, set KEY, the policies, trace start|stop, stats --json, and the
/// names `node_names` gives for drain, undrain and actors; it is called
/// only then, since asking the head for them takes a round trip).
console_completion complete_console_line(
  std::string_view before_cursor,
  const std::function<std::vector<std::string>()>& node_names);

/// The longest prefix every one of `words` shares ("" for none).
std::string common_prefix(const std::vector<std::string>& words);

/// Columns padded to the widest cell, numbers right-aligned, one header
/// line: how every console table is printed.
std::string format_table(const std::vector<std::string>& headers,
                         const std::vector<std::vector<std::string>>& rows);

/// 1234567 -> "1.23M", 950 -> "950", 0.5 -> "0.5" (3 significant digits).
std::string human_number(double value);


/// Nanoseconds as the largest sensible unit: "850 us", "12.3 ms", "4.20 s".
std::string human_duration_ns(uint64_t ns);

} // namespace stoker
