#pragma once

// Real stoker-node processes on 127.0.0.1, as a user would run them: the
// helpers the process-level suites (cluster, faults, console) share.

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

namespace stoker_test {

using namespace std::chrono_literals;

inline std::string tmp_path(const std::string& what) {
  return "/tmp/stoker-cluster-test-" + std::to_string(::getpid()) + "-" + what;
}

inline std::string read_file(const std::string& path) {
  std::ifstream in{path};
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A child process with stdout and stderr in a log file.
struct child {
  pid_t pid = -1;
  std::string log;
};

// `address_space` > 0 limits the child's virtual memory (RLIMIT_AS) to that
// many bytes: an allocation beyond it fails as on a machine without the
// memory.
inline child start(const std::string& program, std::vector<std::string> args,
                   const std::string& log, uint64_t address_space = 0) {
  child c;
  c.log = log;
  c.pid = ::fork();
  BOOST_REQUIRE(c.pid >= 0);
  if (c.pid == 0) {
    if (address_space > 0) {
      rlimit limit{address_space, address_space};
      ::setrlimit(RLIMIT_AS, &limit);
    }
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(::open("/dev/null", O_RDONLY), 0); // nobody types here
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    std::vector<char*> argv{const_cast<char*>(program.c_str())};
    for (auto& a : args)
      argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(program.c_str(), argv.data());
    ::_exit(127);
  }
  return c;
}

inline child start_node(std::vector<std::string> args, const std::string& log) {
  return start(STOKER_NODE_BINARY, std::move(args), log);
}

// The exit code, or -1 if it ran past `timeout` (then it is killed).
inline int wait_exit(child& c, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    if (::waitpid(c.pid, &status, WNOHANG) == c.pid)
      return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::this_thread::sleep_for(20ms);
  }
  ::kill(c.pid, SIGKILL);
  ::waitpid(c.pid, &status, 0);
  BOOST_TEST_MESSAGE("killed after timeout; log:\n" << read_file(c.log));
  return -1;
}

inline bool wait_for_text(const std::string& path, const std::string& text,
                   std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (read_file(path).find(text) != std::string::npos)
      return true;
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

// A child on a pseudo-terminal, as a person at a terminal runs it: `type`
// sends keys, `expect` reads what it prints.
struct pty_child {
  child proc; // proc.log stays empty: the output is in `seen`
  int fd = -1; // the terminal's controlling side
  std::string seen;
  size_t mark = 0; // expect() looks past here

  // Waits for `text` after the last match; returns what came before it
  // and the text itself (empty if it did not come in time).
  std::string expect(const std::string& text,
                     std::chrono::milliseconds timeout = 20s) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      auto at = seen.find(text, mark);
      if (at != std::string::npos) {
        auto out = seen.substr(mark, at + text.size() - mark);
        mark = at + text.size();
        return out;
      }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0)
        break;
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0)
        continue;
      char buf[4096];
      auto n = ::read(fd, buf, sizeof(buf));
      if (n <= 0)
        break; // the child closed the terminal
      seen.append(buf, static_cast<size_t>(n));
    }
    BOOST_TEST_MESSAGE("no '" << text << "' on the terminal; it shows:\n"
                              << seen.substr(mark));
    return {};
  }

  void type(const std::string& keys) {
    BOOST_REQUIRE(::write(fd, keys.data(), keys.size())
                  == static_cast<ssize_t>(keys.size()));
  }

  ~pty_child() {
    if (fd >= 0)
      ::close(fd);
  }
};

inline void start_on_pty(pty_child& c, const std::string& program,
                         std::vector<std::string> args) {
  winsize size{40, 160, 0, 0};
  c.proc.pid = ::forkpty(&c.fd, nullptr, nullptr, &size);
  BOOST_REQUIRE(c.proc.pid >= 0);
  if (c.proc.pid == 0) {
    std::vector<char*> argv{const_cast<char*>(program.c_str())};
    for (auto& a : args)
      argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::setenv("TERM", "xterm", 1);
    ::execv(program.c_str(), argv.data());
    ::_exit(127);
  }
}

// A head on a free port, found through its port file, and the flag the
// other nodes reach it with.
struct head_node {
  child proc;
  std::string port_file;
  uint16_t port = 0;
  std::string at; // --cluster.head=127.0.0.1:PORT
};

// Starts `program` (stoker-node unless given) as a head on a free port with
// `args`, logging to tmp_path(tag + "-head.log"), and waits for its port.
inline head_node start_head(const std::string& tag,
                            std::vector<std::string> args,
                            const std::string& program = STOKER_NODE_BINARY) {
  head_node head;
  head.port_file = tmp_path(tag + ".port");
  std::remove(head.port_file.c_str());
  args.insert(args.begin(), {"--role=head", "--cluster.port=0",
                             "--cluster.port-file=" + head.port_file});
  head.proc = start(program, std::move(args), tmp_path(tag + "-head.log"));
  BOOST_REQUIRE_MESSAGE(wait_for_text(head.port_file, "\n", 20s),
                        "the head wrote no port; its log:\n"
                          << read_file(head.proc.log));
  head.port = static_cast<uint16_t>(std::stoi(read_file(head.port_file)));
  head.at = "--cluster.head=127.0.0.1:" + std::to_string(head.port);
  std::remove(head.port_file.c_str());
  return head;
}

// Starts a node of `role` ("worker" or "trainer") named `name` that joins
// the head `at` (head_node::at), with `args` after the role, name and
// address; its log is tmp_path(tag + "-" + name + ".log").
inline child start_member(const std::string& at, const std::string& tag,
                          const std::string& role, const std::string& name,
                          std::vector<std::string> args = {},
                          const std::string& program = STOKER_NODE_BINARY) {
  args.insert(args.begin(), {"--role=" + role, "--node.name=" + name, at});
  return start(program, std::move(args), tmp_path(tag + "-" + name + ".log"));
}

// A port nothing listens on: bound to find it, then closed.
inline uint16_t free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

// The first of CAF's renderings of its errors in `text` ("" if none): no
// message a user reads may carry exit_reason(...), sec::..., a parser's
// or an error's internal form.
inline std::string caf_internals_in(const std::string& text) {
  for (const char* part : {"exit_reason(", "sec::", "parser_error",
                           "system_error(", "error(", "pec::"}) {
    auto at = text.find(part);
    if (at != std::string::npos)
      return text.substr(at, 80);
  }
  return "";
}

// A loopback port someone else listens on (a port in use), held until
// the object goes.
struct taken_port {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  uint16_t port = 0;
  taken_port() {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    ::listen(fd, 1);
    socklen_t len = sizeof addr;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    port = ntohs(addr.sin_port);
  }
  taken_port(const taken_port&) = delete;
  taken_port& operator=(const taken_port&) = delete;
  ~taken_port() { ::close(fd); }
};

// A connection to 127.0.0.1:port (blocking; 10 s receive timeout), or -1.
inline int connect_loopback(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// A number field of a JSON run report (the test fails if it is absent).
inline double report_number(const std::string& json, const std::string& key) {
  std::smatch m;
  std::regex re{"\"" + key + "\": ([-0-9.e+]+)"};
  BOOST_REQUIRE_MESSAGE(std::regex_search(json, m, re), key << " in " << json);
  return std::stod(m[1]);
}

// Batches per worker name in a JSON run report.
inline std::map<std::string, int> batches_by_worker(const std::string& json) {
  std::map<std::string, int> result;
  std::regex entry{R"re("name": "([^"]+)", "batches": (\d+))re"};
  for (std::sregex_iterator i{json.begin(), json.end(), entry}, end; i != end;
       ++i)
    result[(*i)[1]] = std::stoi((*i)[2]);
  return result;
}

// One listening TCP socket: its address as text ("127.0.0.1", "::",
// "0.0.0.0", "::ffff:127.0.0.1", ...) and port.
struct listener {
  std::string address;
  uint16_t port = 0;
  bool loopback = false;
};

// Every TCP socket process `pid` listens on, read from /proc (the
// socket inodes of its descriptors, matched in its namespace's
// /proc/PID/net/tcp and tcp6), as `ss -ltnp` shows them.
inline std::vector<listener> listening_sockets(pid_t pid) {
  auto proc = "/proc/" + std::to_string(pid);
  std::set<std::string> inodes;
  if (auto* dir = ::opendir((proc + "/fd").c_str())) {
    while (auto* e = ::readdir(dir)) {
      char target[256] = {};
      auto path = proc + "/fd/" + e->d_name;
      auto n = ::readlink(path.c_str(), target, sizeof(target) - 1);
      std::string t{target, n > 0 ? static_cast<size_t>(n) : 0};
      if (t.rfind("socket:[", 0) == 0)
        inodes.insert(t.substr(8, t.size() - 9));
    }
    ::closedir(dir);
  }
  std::vector<listener> out;
  for (auto table : {"/net/tcp", "/net/tcp6"}) {
    std::istringstream lines{read_file(proc + table)};
    std::string line;
    std::getline(lines, line); // the header
    while (std::getline(lines, line)) {
      std::istringstream f{line};
      std::string sl, local, remote, state, queues, timer, retr, uid, timeout,
        inode;
      f >> sl >> local >> remote >> state >> queues >> timer >> retr >> uid
        >> timeout >> inode;
      if (state != "0A" || inodes.count(inode) == 0)
        continue; // not listening, or not this process's
      auto colon = local.find(':');
      auto hex = local.substr(0, colon);
      listener l;
      l.port = static_cast<uint16_t>(std::stoul(local.substr(colon + 1),
                                                nullptr, 16));
      if (hex.size() == 8) { // IPv4, little-endian
        auto v = static_cast<uint32_t>(std::stoul(hex, nullptr, 16));
        l.address = std::to_string(v & 0xff) + "."
                    + std::to_string((v >> 8) & 0xff) + "."
                    + std::to_string((v >> 16) & 0xff) + "."
                    + std::to_string(v >> 24);
        l.loopback = (v & 0xff) == 127;
      } else { // IPv6: four little-endian words
        l.loopback = hex == "00000000000000000000000001000000"
                     || (hex.substr(0, 24) == "0000000000000000FFFF0000"
                         && hex.substr(30, 2) == "7F");
        l.address = l.loopback ? "::1 or ::ffff:127.x" : "[" + hex + "]";
      }
      out.push_back(l);
    }
  }
  return out;
}

inline const std::vector<std::string> small = {
  "--trainer.device=sim", "--pipeline.height=32", "--pipeline.width=32"};

inline std::vector<std::string> with_small(std::vector<std::string> args) {
  args.insert(args.end(), small.begin(), small.end());
  return args;
}

} // namespace stoker_test
