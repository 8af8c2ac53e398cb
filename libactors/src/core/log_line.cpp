#include "core/log_line.hpp"

#include <cerrno>
#include <string>

#include <unistd.h>

namespace stoker {

void write_line(int fd, std::string_view text) {
  std::string line{text};
  if (line.empty() || line.back() != '\n')
    line += '\n';
  write_text(fd, line);
}

void write_text(int fd, std::string_view line) {
  // Pipes and terminals take up to PIPE_BUF bytes atomically; a longer
  // line may interleave only with another over that size.
  size_t at = 0;
  while (at < line.size()) {
    auto n = ::write(fd, line.data() + at, line.size() - at);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return;
    at += static_cast<size_t>(n);
  }
}

} // namespace stoker
