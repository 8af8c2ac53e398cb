#include "core/atomic_file.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fcntl.h>
#include <unistd.h>

#include "stoker/errors.hpp"

namespace stoker {

caf::error write_file_atomically(const std::string& path,
                                 std::string_view bytes) {
  auto fail = [](const std::string& file, const char* what) {
    return make_error(errc::io_failure, std::string{what} + " " + file + ": "
                                          + std::strerror(errno));
  };
  auto tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return fail(tmp, "cannot create");
  for (size_t done = 0; done < bytes.size();) {
    auto n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      auto err = fail(tmp, "cannot write");
      ::close(fd);
      return err;
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    auto err = fail(tmp, "cannot fsync");
    ::close(fd);
    return err;
  }
  if (::close(fd) != 0)
    return fail(tmp, "cannot close");
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    return fail(path, ("cannot rename " + tmp + " to").c_str());
  // The rename itself must survive a crash: sync the directory entry.
  auto slash = path.find_last_of('/');
  auto dir = slash == std::string::npos ? std::string{"."}
                                        : path.substr(0, slash == 0 ? 1 : slash);
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return caf::none;
}

} // namespace stoker
