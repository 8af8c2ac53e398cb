#include "core/machine.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iterator>
#include <string>
#include <thread>

#include <cstring>

#include <dirent.h>
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

namespace {

double rusage_cpu_seconds(int who) noexcept {
  rusage usage{};
  if (::getrusage(who, &usage) != 0)
    return 0.0;
  auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6;
  };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

// The CPU time of this process's live children (a Python stage's
// interpreters), from /proc/PID/stat: utime and stime, the 14th and 15th
// fields, after the command in parentheses (which may hold spaces).
double live_children_cpu_seconds() noexcept {
  auto ticks = ::sysconf(_SC_CLK_TCK);
  auto self = ::getpid();
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr || ticks <= 0) {
    if (proc != nullptr)
      ::closedir(proc);
    return 0.0;
  }
  double total = 0.0;
  while (auto* entry = ::readdir(proc)) {
    if (entry->d_name[0] < '1' || entry->d_name[0] > '9')
      continue;
    auto path = std::string{"/proc/"} + entry->d_name + "/stat";
    std::FILE* f = std::fopen(path.c_str(), "re");
    if (f == nullptr)
      continue; // it ended meanwhile
    char text[1024];
    auto n = std::fread(text, 1, sizeof(text) - 1, f);
    std::fclose(f);
    text[n] = '\0';
    auto* after = std::strrchr(text, ')');
    long ppid = 0;
    unsigned long long utime = 0, stime = 0;
    if (after != nullptr
        && std::sscanf(after + 1,
                       " %*c %ld %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu "
                       "%llu",
                       &ppid, &utime, &stime)
             == 3
        && ppid == self)
      total += static_cast<double>(utime + stime)
               / static_cast<double>(ticks);
  }
  ::closedir(proc);
  return total;
}

// This process's CPU time and its children's, live or reaped.
double rusage_cpu_seconds() noexcept {
  return rusage_cpu_seconds(RUSAGE_SELF) + rusage_cpu_seconds(RUSAGE_CHILDREN)
         + live_children_cpu_seconds();
}

// Where this process's own clocks start: when the library was loaded (a
// stoker-node's start; a Python process's `import stoker`). Read once,
// never written. The wall clock is the steady clock: the process's start
// as /proc says it (ticks since boot against /proc/uptime) was off by
// minutes on a fresh VM whose boot clock stepped (CPU utilisation 5% for
// a run that kept both cores busy).
struct clock_origin {
  std::chrono::steady_clock::time_point wall;
  double cpu_s;
};
const clock_origin origin{std::chrono::steady_clock::now(),
                          rusage_cpu_seconds()};

} // namespace

double process_cpu_seconds() noexcept {
  return std::max(0.0, rusage_cpu_seconds() - origin.cpu_s);
}

double process_wall_seconds() noexcept {
  return std::chrono::duration<double>(std::chrono::steady_clock::now()
                                       - origin.wall)
    .count();
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
