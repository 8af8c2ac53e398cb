#include "console/terminal_console.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include <fcntl.h>
#include <histedit.h>
#include <poll.h>
#include <unistd.h>

#include "stoker/errors.hpp"
#include "console/console_commands.hpp"

namespace stoker {

struct terminal_console::state {
  caf::actor_system& sys;
  job_target target;
  int wake[2] = {-1, -1}; // the destructor writes to wake[1]
  std::string prompt = "stoker> ";
  console_session* session = nullptr; // lives on the reading thread
  EditLine* el = nullptr;
  History* hist = nullptr;

  state(caf::actor_system& s, job_target t)
    : sys(s), target(std::move(t)) {
    // nop
  }

  ~state() {
    for (int fd : wake)
      if (fd >= 0)
        ::close(fd);
  }

  void run();
};

namespace {

terminal_console::state* state_of(EditLine* el) {
  void* data = nullptr;
  el_get(el, EL_CLIENTDATA, &data);
  return static_cast<terminal_console::state*>(data);
}

char* prompt_of(EditLine* el) {
  return state_of(el)->prompt.data();
}

// UTF-8: how many bytes a character starting with `lead` has.
size_t utf8_length(unsigned char lead) {
  if (lead >= 0xF0 && lead <= 0xF7)
    return 4;
  if (lead >= 0xE0)
    return lead <= 0xEF ? 3 : 1;
  if (lead >= 0xC0)
    return 2;
  return 1; // ASCII, or a stray byte taken as it is
}

wchar_t utf8_decode(const unsigned char* bytes, size_t n) {
  if (n == 1)
    return static_cast<wchar_t>(bytes[0]);
  uint32_t code = bytes[0] & (0x7Fu >> n);
  for (size_t i = 1; i < n; ++i)
    code = (code << 6) | (bytes[i] & 0x3Fu);
  return static_cast<wchar_t>(code);
}

// libedit's character source: standard input, or end of input as soon as
// the console is being closed (so el_gets returns and the thread ends).
int read_char(EditLine* el, wchar_t* out) {
  auto* st = state_of(el);
  unsigned char bytes[4];
  size_t have = 0;
  size_t need = 1;
  while (have < need) {
    pollfd fds[2] = {{STDIN_FILENO, POLLIN, 0}, {st->wake[0], POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR)
        continue; // a signal, e.g. the terminal was resized
      return -1;
    }
    if (fds[1].revents != 0)
      return 0;
    if (fds[0].revents == 0)
      continue;
    auto got = ::read(STDIN_FILENO, bytes + have, 1);
    if (got < 0 && (errno == EINTR || errno == EAGAIN))
      continue;
    if (got <= 0)
      return got == 0 ? 0 : -1;
    if (have == 0)
      need = utf8_length(bytes[0]);
    else if ((bytes[have] & 0xC0) != 0x80)
      need = have + 1; // a broken sequence: take the bytes one by one
    ++have;
  }
  *out = utf8_decode(bytes, have == need && need > 1 ? need : 1);
  return 1;
}

unsigned char complete(EditLine* el, int) {
  auto* st = state_of(el);
  const LineInfo* line = el_line(el);
  std::string before{line->buffer,
                     static_cast<size_t>(line->cursor - line->buffer)};
  auto found = complete_console_line(before, [st] {
    return st->session->node_names();
  });
  if (found.matches.empty())
    return CC_REFRESH_BEEP;
  if (found.matches.size() == 1) {
    auto rest = found.matches.front().substr(found.word.size()) + " ";
    el_insertstr(el, rest.c_str());
    return CC_REFRESH;
  }
  auto shared = common_prefix(found.matches);
  if (shared.size() > found.word.size()) {
    el_insertstr(el, shared.substr(found.word.size()).c_str());
    return CC_REFRESH;
  }
  std::string list = "\n";
  for (auto& m : found.matches)
    list += m + "  ";
  std::fputs((list + "\n").c_str(), stdout);
  return CC_REDISPLAY;
}

} // namespace

void terminal_console::state::run() {
  console_session own{sys, target};
  session = &own;
  el = el_init("stoker", stdin, stdout, stderr);
  hist = history_init();
  HistEvent ev;
  history(hist, &ev, H_SETSIZE, 1000);
  history(hist, &ev, H_SETUNIQUE, 1);
  el_set(el, EL_CLIENTDATA, this);
  el_set(el, EL_EDITOR, "emacs");
  el_set(el, EL_SIGNAL, 1); // Ctrl-C restores the terminal before exiting
  el_set(el, EL_PROMPT, &prompt_of);
  el_set(el, EL_HIST, history, hist);
  el_set(el, EL_GETCFN, &read_char);
  el_set(el, EL_ADDFN, "stoker-complete", "complete a console word",
         &complete);
  el_set(el, EL_BIND, "^I", "stoker-complete", nullptr);
  std::fputs("stoker console on this terminal; type help (quit detaches, "
             "the job goes on)\n",
             stdout);
  std::fflush(stdout);
  for (;;) {
    int count = 0;
    const char* got = el_gets(el, &count);
    if (got == nullptr || count <= 0) {
      pollfd woken{wake[0], POLLIN, 0};
      if (::poll(&woken, 1, 0) == 0) // not being closed: the input ended
        std::fputs("\nconsole: end of input; detached, the job goes on\n",
                   stdout);
      break;
    }
    std::string text{got, static_cast<size_t>(count)};
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r'))
      text.pop_back();
    if (text.find_first_not_of(" \t") != std::string::npos)
      history(hist, &ev, H_ENTER, text.c_str());
    auto reply = own.execute(text);
    std::fputs(reply.text.c_str(), stdout);
    std::fflush(stdout);
    if (reply.quit)
      break;
  }
  el_end(el); // restores the terminal's settings
  history_end(hist);
  el = nullptr;
  hist = nullptr;
  session = nullptr;
}

caf::expected<std::unique_ptr<terminal_console>>
terminal_console::start(caf::actor_system& sys, job_target target) {
  auto st = std::make_unique<state>(sys, std::move(target));
  if (::pipe2(st->wake, O_CLOEXEC) != 0)
    return make_error(errc::io_failure,
                      std::string{"console.terminal: cannot make a pipe: "}
                        + std::strerror(errno));
  return std::make_unique<terminal_console>(std::move(st));
}

terminal_console::terminal_console(std::unique_ptr<state> st)
  : state_(std::move(st)) {
  thread_ = std::thread{[s = state_.get()] { s->run(); }};
}

terminal_console::~terminal_console() {
  char byte = 1;
  while (::write(state_->wake[1], &byte, 1) < 0 && errno == EINTR) {
    // retry
  }
  thread_.join();
}

} // namespace stoker
