#pragma once

#include <string>
#include <string_view>

#include <caf/error.hpp>

namespace stoker {

/// Replaces the file at `path` with `bytes` so that a reader (or a crash at
/// any point) sees the old file or the new one, never a mix: a temp file
/// beside it (`path` + ".tmp"), fsync, rename, fsync of the directory.
/// Errors are io_failure values naming the file, the step and the system's
/// reason. Any thread; concurrent writers of one path must be serialised by
/// the caller.
caf::error write_file_atomically(const std::string& path,
                                 std::string_view bytes);

} // namespace stoker
