#include "observe/progress_line.hpp"

#include <cmath>
#include <cstdio>
#include <unistd.h>

#include <caf/scoped_actor.hpp>

#include "core/log_line.hpp"

namespace stoker {

namespace {

constexpr int bar_cells = 20;

// 12345 -> "12,345"
std::string grouped(double x) {
  auto digits = std::to_string(static_cast<uint64_t>(std::llround(x)));
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0)
      out += ',';
    out += digits[i];
  }
  return out;
}

std::string clock_text(double seconds) {
  auto s = static_cast<uint64_t>(std::llround(seconds));
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%llu:%02llu:%02llu",
                  static_cast<unsigned long long>(s / 3600),
                  static_cast<unsigned long long>(s / 60 % 60),
                  static_cast<unsigned long long>(s % 60));
  else
    std::snprintf(buf, sizeof buf, "%llu:%02llu",
                  static_cast<unsigned long long>(s / 60),
                  static_cast<unsigned long long>(s % 60));
  return buf;
}

} // namespace

std::string format_progress(const progress_figures& f) {
  std::string line = grouped(static_cast<double>(f.done));
  if (f.total > 0) {
    double share = std::min(1.0, static_cast<double>(f.done)
                                   / static_cast<double>(f.total));
    auto full = static_cast<int>(share * bar_cells);
    line += "/" + grouped(static_cast<double>(f.total)) + " samples ["
            + std::string(static_cast<size_t>(full), '#')
            + std::string(static_cast<size_t>(bar_cells - full), '-') + "] ";
    char pct[8];
    std::snprintf(pct, sizeof pct, "%3d%%",
                  static_cast<int>(std::floor(share * 100)));
    line += pct;
  } else {
    line += " samples";
  }
  line += " | ";
  line += f.rate_sps >= 0 ? grouped(f.rate_sps) + " samples/s" : "- samples/s";
  if (f.total > 0) {
    line += " | ETA ";
    line += f.rate_sps > 0 && f.done < f.total
              ? clock_text(static_cast<double>(f.total - f.done) / f.rate_sps)
              : (f.done >= f.total ? std::string{"0:00"} : std::string{"-"});
  }
  if (f.idle >= 0) {
    char idle[48];
    std::snprintf(idle, sizeof idle, " | accelerator idle %.1f%%",
                  100.0 * f.idle);
    line += idle;
  }
  return line;
}

progress_reporter::progress_reporter(caf::actor_system& sys,
                                     router_actor router)
  : sys_(sys), router_(std::move(router)) {
  thread_ = std::thread{[this] { run(); }};
}

progress_reporter::~progress_reporter() {
  stopping_ = true;
  thread_.join();
}

void progress_reporter::run() {
  using namespace std::chrono;
  caf::scoped_actor self{sys_};
  // samples/s over about the last five seconds (an exponential average of
  // the half-second rates), so the ETA does not jump with every batch.
  double rate = -1;
  uint64_t last_done = 0;
  auto last_at = steady_clock::now();
  bool shown = false;
  auto update = [&] {
    router_status st;
    bool answered = false;
    self->request(router_, seconds(1), status_atom::value)
      .receive([&](router_status& s) { st = std::move(s), answered = true; },
               [](caf::error&) {});
    if (!answered)
      return;
    auto now = steady_clock::now();
    progress_figures f;
    f.done = st.summary.samples_acked;
    f.total = st.summary.samples_expected;
    double dt = duration<double>(now - last_at).count();
    if (dt > 0 && shown) {
      double lately = static_cast<double>(f.done - std::min(f.done, last_done))
                      / dt;
      rate = rate < 0 ? lately : 0.9 * rate + 0.1 * lately;
    }
    f.rate_sps = rate;
    double wait = 0;
    double period = 0;
    for (auto& t : st.trainers) {
      wait += t.wait_ms;
      period += t.period_ms;
    }
    f.idle = period > 0 ? std::min(1.0, wait / period) : -1;
    last_done = f.done;
    last_at = now;
    shown = true;
    write_text(STDOUT_FILENO, "\r" + format_progress(f) + "\x1b[K");
  };
  while (!stopping_) {
    update();
    for (int i = 0; i < 10 && !stopping_; ++i)
      std::this_thread::sleep_for(milliseconds(50));
  }
  update(); // the final figures
  if (shown)
    write_text(STDOUT_FILENO, "\n");
}

} // namespace stoker
