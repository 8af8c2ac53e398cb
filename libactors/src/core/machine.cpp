#include "core/machine.hpp"

#include <cstdio>
#include <iterator>

#include <sys/resource.h>
#include <unistd.h>

namespace stoker {

uint64_t physical_memory_bytes() noexcept {
  auto pages = ::sysconf(_SC_PHYS_PAGES);
  auto size = ::sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || size <= 0)
    return 0;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(size);
}

uint64_t thread_minor_faults() noexcept {
  rusage usage{};
  if (::getrusage(RUSAGE_THREAD, &usage) != 0)
    return 0;
  return static_cast<uint64_t>(usage.ru_minflt);
}

std::string human_bytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  size_t u = 0;
  while (v >= 1024 && u + 1 < std::size(units)) {
    v /= 1024;
    ++u;
  }
  char text[32];
  if (u == 0)
    std::snprintf(text, sizeof(text), "%llu B",
                  static_cast<unsigned long long>(bytes));
  else
    std::snprintf(text, sizeof(text), "%.1f %s", v, units[u]);
  return text;
}

} // namespace stoker
