#include "stoker/node_main.hpp"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <spawn.h>
#include <sys/wait.h>

#include "stoker/errors.hpp"
#include "core/log_line.hpp"
#include "core/machine.hpp"
#include "stoker/embed.hpp"
#include "node/roles.hpp"

extern "C" char** environ;

namespace stoker {

namespace {

// Discovery put node `n` beside this one on this host (SageMaker: the
// first GPU host's trainer beside the head; a trainer host's own CPU
// workers when the cluster has no worker host): the same program with the
// same arguments, the node's role and the head's address added (later
// flags win), as a child.
pid_t start_companion(const std::vector<std::string>& args,
                      const node_options& node, const node_spec& n) {
  auto& c = node.cluster;
  std::vector<std::string> full{"stoker-node"};
  for (auto& a : args) {
    // The head's --resume is its journal's; a trainer resumes only from a
    // checkpoint of its own.
    bool resume = a == "--resume" || a.rfind("--resume=", 0) == 0;
    if (!resume || !node.trainer.checkpoint_dir.empty())
      full.push_back(a);
  }
  for (auto& extra : std::vector<std::string>{"--cluster.discover=static",
                     "--role=" + to_string(n.role), "--node.name=" + n.name,
                     "--node.host=" + node.host, "--cluster.bind=" + c.bind,
                     "--cluster.head=" + c.head_host + ":"
                       + std::to_string(c.head_port)})
    full.push_back(extra);
  std::vector<char*> argv;
  for (auto& a : full)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  if (int rc = ::posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr,
                             argv.data(), environ);
      rc != 0) {
    errno = rc; // posix_spawn says why in its result, not in errno
    return -1;
  }
  return pid;
}

// Waits up to `limit` for a companion to exit (the head told it to),
// then stops it; its exit code, or 1.
int wait_companion(pid_t pid, std::chrono::seconds limit,
                   const log_sink& log) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  int status = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    if (::waitpid(pid, &status, WNOHANG) == pid)
      return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::kill(pid, SIGTERM);
  ::waitpid(pid, &status, 0);
  log.error("stoker-node: this host's node (pid " + std::to_string(pid)
            + ") did not exit within " + std::to_string(limit.count())
            + " s of the head; stopped");
  return 1;
}

} // namespace

int run_node(int argc, char** argv, const registry& reg) {
  // A TLS peer that went away must be an error, not the end of the node.
  std::signal(SIGPIPE, SIG_IGN);
  keep_freed_memory(); // per-sample images must not fault in again
  std::string program = argc > 0 ? argv[0] : "stoker-node";
  program = program.substr(program.find_last_of('/') + 1);
  std::vector<std::string> args(argv + 1, argv + argc);
  embed_options options;
  options.args = args;
  options.loop = false; // the node's own trainers: stoker-node's run
  auto opened = embedded_run::open(std::move(options), reg);
  if (!opened) { // before log.*: said as text
    log_sink::standard_streams({}, log_level::info, log_format::text)
      .error(program + ": " + describe(opened.error()));
    return 2;
  }
  // The output the user asked for, not log lines: as is, in any format.
  if (*opened == nullptr) { // --help, --long-help or --dump-config
    write_line(1, "Stoker: --config-file defaults to the embedded "
                  "config/local.ini; --long-help lists every key.\n"
                  "Registered sources: "
                    + reg.source_names() + "\nRegistered transforms: "
                    + reg.transform_names()
                    + "\nRegistered models: " + reg.model_names());
    return 0;
  }
  auto run = std::move(*opened);
  const auto& cfg = run->config();
  if (cfg.node.print_nodes) { // for tools/ops/launch-cluster
    std::string list;
    if (!cfg.node.discovered.empty())
      list += "# " + cfg.node.discovered + '\n';
    for (auto& node : cfg.node.cluster.nodes)
      list += node.name + ' ' + to_string(node.role) + ' '
              + std::to_string(node.workers) + '\n';
    if (!list.empty())
      write_line(1, list);
    return 0;
  }
  const auto& log = *run->log();
  if (!cfg.node.discovered.empty())
    log.info("stoker-node: discovered " + cfg.node.discovered);
  std::vector<pid_t> companions;
  auto stop_companions = [&] {
    for (auto pid : companions) {
      ::kill(pid, SIGTERM);
      int status = 0;
      ::waitpid(pid, &status, 0);
    }
  };
  for (auto& n : cfg.node.companions) {
    auto pid = start_companion(args, cfg.node, n);
    if (pid < 0) {
      log.error(program + ": cannot start this host's " + to_string(n.role)
                + " node " + n.name + ": " + std::strerror(errno));
      stop_companions();
      return 1;
    }
    companions.push_back(pid);
  }
  // Its links (TLS, gates) open before the actor system, so they outlive
  // every CAF connection; a setting they refuse ends it here (exit 2).
  if (auto err = run->start(std::nullopt, 0, 1)) {
    log.error(program + ": " + describe(err));
    stop_companions();
    return 2;
  }
  std::optional<loop_event> ended;
  while (!(ended = run->next(std::chrono::seconds(1)))
         || ended->kind != loop_event::kind_type::finished) {
    // a node without a loop says only how it ended
  }
  int code = exit_code(ended->error);
  // Bounds what is left of the process: the actor system's shutdown may
  // wait on a peer that vanished or on a detached worker mid-item (the
  // hang once seen in about ten cluster runs: node/actor_release.hpp).
  bound_shutdown(code,
                 std::chrono::seconds(cfg.node.role == role_kind::local ? 3
                                                                        : 5),
                 run->log());
  run->join(std::chrono::hours(1));
  // The companions end when the head ends the run (or fails it): this
  // node's exit waits for them, and a companion that failed fails it.
  for (auto pid : companions)
    if (wait_companion(pid, std::chrono::seconds(20), log) != 0 && code == 0)
      code = 1;
  return code;
}

} // namespace stoker
