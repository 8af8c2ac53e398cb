#include "core/machine.hpp"

#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>

#include <malloc.h>
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

void keep_freed_memory() noexcept {
#ifdef M_TRIM_THRESHOLD
  // Fixed thresholds also stop glibc's own adjusting of them.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
#endif
}

uint64_t thread_minor_faults() noexcept {
  rusage usage{};
  if (::getrusage(RUSAGE_THREAD, &usage) != 0)
    return 0;
  return static_cast<uint64_t>(usage.ru_minflt);
}

double process_cpu_seconds() noexcept {
  rusage usage{};
  if (::getrusage(RUSAGE_SELF, &usage) != 0)
    return 0.0;
  auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6;
  };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

double process_wall_seconds() noexcept {
  // /proc/self/stat's 22nd field: the start, in clock ticks since boot;
  // /proc/uptime: seconds since boot. The 2nd field (the name) may hold
  // spaces, so count from its closing parenthesis.
  std::ifstream stat{"/proc/self/stat"};
  std::ifstream uptime{"/proc/uptime"};
  std::string line;
  double up = 0.0;
  if (!std::getline(stat, line) || !(uptime >> up))
    return 0.0;
  auto close = line.rfind(')');
  if (close == std::string::npos)
    return 0.0;
  std::istringstream rest{line.substr(close + 2)};
  std::string field;
  for (int i = 3; i < 22 && (rest >> field); ++i) {
  }
  unsigned long long start = 0;
  if (!(rest >> start))
    return 0.0;
  auto ticks = ::sysconf(_SC_CLK_TCK);
  if (ticks <= 0)
    return 0.0;
  double wall = up - static_cast<double>(start) / static_cast<double>(ticks);
  return wall > 0.0 ? wall : 0.0;
}

uint32_t machine_cores() noexcept {
  auto n = std::thread::hardware_concurrency();
  return n > 0 ? n : 1;
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
