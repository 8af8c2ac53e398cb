#pragma once

#include <string_view>

namespace stoker {

/// Writes `text` and a newline to `fd` (2: standard error) in one write():
/// lines said from several threads at once (gates, batch streams, the
/// actors) come out whole, never glued together as an ostream's pieces
/// can be. Safe from any thread; a short write is completed, errors ignored
/// (nothing can be said about failing to say something).
void write_line(int fd, std::string_view text);

/// Writes `text` as it is (no newline added) to `fd` in one write(): a
/// terminal's display (the progress line), which is not a log line.
void write_text(int fd, std::string_view text);

} // namespace stoker
