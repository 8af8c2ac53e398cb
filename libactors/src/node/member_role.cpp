#include "node/roles.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>
#include <thread>

#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>

#include "stoker/errors.hpp"
#include "stoker/registry.hpp"
#include "core/machine.hpp"
#include "core/peak_rss.hpp"
#include "node/actor_release.hpp"
#include "node/member_parts.hpp"
#include "node/node_links.hpp"
#include "node/prepare_run.hpp"
#include "train/step_engine.hpp"
#include "train/trainer_actor.hpp"
#include "transport/batch_channel.hpp"
#include "worker/worker_actor.hpp"
#include "core/system_log.hpp"

namespace stoker {

caf::expected<membership_actor> connect_to_head(caf::actor_system& sys,
                                                const cluster_spec& cfg,
                                                node_links& links) {
  return links.connect_retrying<membership_actor>(
    sys, cfg.head_host, cfg.head_port, "the head", cfg.connect_timeout,
    "stoker-node --role=head listening there");
}

namespace {

// Every batch this node makes or trains on comes from a pool, except those
// CAF serializes (transport.batch-stream = false): into fresh buffers, whose
// page faults malloc's huge pages make cheaper. Said once, at the start.
void note_caf_batches(const run_config& cfg, const log_sink& log) {
  if (cfg.pipeline.transport.batch_stream)
    return;
  auto env = std::getenv("GLIBC_TUNABLES");
  if (env != nullptr
      && std::string_view{env}.find("malloc.hugetlb") != std::string::npos)
    return;
  log.info("stoker-node: note: transport.batch-stream = false: CAF "
           "serializes every batch into fresh buffers, which Stoker's pool "
           "cannot recycle; where page faults are slow (VMs), "
           "GLIBC_TUNABLES=glibc.malloc.hugetlb=1 makes that path about 4x "
           "faster (docs/speed.md)");
}

// Trainers a node starts again (their group went back to a checkpoint)
// before it gives up: a trainer that keeps failing fails for a reason.
constexpr uint32_t max_trainer_restarts = 8;

// The head went away and journals its run (cluster.state-dir): reaches it
// again (retrying for cluster.connect-timeout), says hello, checks that it
// runs the same run, points every local actor at its router and brings
// them in again. Leases of the old head still queued are made and trained
// as before; the trainer's hello tells the new router what it trained.
caf::expected<std::pair<membership_actor, welcome>>
rejoin_head(caf::actor_system& sys, caf::scoped_actor& self,
            const run_config& mine, const node_info& info, local_part& local,
            const caf::node_id& old_head, node_links& links) {
  auto& c = mine.node.cluster;
  auto where = c.head_host + ":" + std::to_string(c.head_port);
  // CAF's middleman keeps the handle it got for HOST:PORT until it has
  // processed the old head's loss: until then it hands out the dead head.
  auto deadline = std::chrono::steady_clock::now() + c.connect_timeout;
  auto head = connect_to_head(sys, c, links);
  while (head && head->node() == old_head) {
    if (std::chrono::steady_clock::now() > deadline)
      return make_error(errc::run_failure,
                        "the head at " + where + " did not come back within "
                          + std::to_string(c.connect_timeout.count())
                          + " ms (cluster.connect-timeout)");
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    head = connect_to_head(sys, c, links);
  }
  if (!head)
    return std::move(head.error());
  caf::expected<welcome> hello{caf::error{}};
  self->request(*head, c.join_timeout, hello_atom::value, info)
    .receive([&](welcome& w) { hello = std::move(w); },
             [&](caf::error& err) { hello = std::move(err); });
  if (!hello)
    return make_error(errc::run_failure,
                      "the head at " + where + " is back but did not take "
                        + "node '" + info.name
                        + "' again: " + describe(hello.error()));
  auto& was = mine.pipeline.source;
  auto& is = hello->pipeline.source;
  if (was.dataset_size != is.dataset_size || was.epochs != is.epochs
      || was.batch_size != is.batch_size || was.seed != is.seed
      || was.shuffle != is.shuffle)
    return make_error(errc::run_failure,
                      "the head at " + where
                        + " is back with another run (pipeline.dataset-size, "
                          "epochs, batch-size, seed or shuffle differ); "
                          "expected the head started again with --resume");
  self->monitor(*head);
  auto router = caf::actor_cast<caf::actor>(hello->router);
  for (auto& a : local.actors)
    self->send(a, rejoin_atom::value, router);
  if (info.role == role_kind::worker) {
    std::vector<worker_actor> workers;
    for (auto& a : local.actors)
      workers.push_back(caf::actor_cast<worker_actor>(a));
    self->send(*head, join_atom::value, info.name, std::move(workers));
  } else {
    std::vector<trainer_actor> trainers;
    for (auto& a : local.actors)
      trainers.push_back(caf::actor_cast<trainer_actor>(a));
    self->send(*head, join_atom::value, info.name, std::move(trainers),
               local.places);
  }
  return std::make_pair(std::move(*head), std::move(*hello));
}

} // namespace

namespace {

// A line this node says as an error when something fails, said whole as
// it ends (the statement's end); the first one is kept in `first` (when
// given) for an embedder, which raises it rather than an exit code.
class said_failure {
public:
  said_failure(const log_sink& log, std::string* first)
    : log_(log), first_(first) {
    // nop
  }
  said_failure(const said_failure&) = delete;
  said_failure& operator=(const said_failure&) = delete;
  ~said_failure() {
    auto text = line_.str();
    log_.error(text);
    const std::string prefix = "stoker-node: ";
    if (text.compare(0, prefix.size(), prefix) == 0)
      text.erase(0, prefix.size());
    if (first_ != nullptr && first_->empty())
      *first_ = std::move(text);
  }
  template <class T>
  said_failure& operator<<(const T& x) {
    line_ << x;
    return *this;
  }

private:
  const log_sink& log_;
  std::string* first_;
  std::ostringstream line_;
};

// A worker or trainer node's run, in named steps: join the head (hello,
// the pipeline checked, the local actors started), serve it until it says
// shutdown or is lost, come back to a head started again, stop the local
// actors. A step that fails says why (said_failure) and leaves the exit
// code in code_. Its scoped actor ends with it: its mailbox may hold a
// message from an actor (a trainer's second down message), which holds
// that actor.
class member_run {
public:
  member_run(caf::actor_system& sys, const run_config& cfg,
             const registry& reg, node_links& links,
             const trainer_hooks* hooks, std::string* failure)
    : sys_(sys),
      cfg_(cfg),
      reg_(reg),
      links_(links),
      hooks_(hooks),
      failure_(failure),
      self_(sys),
      head_at_(cfg.node.cluster.head_host + ":"
               + std::to_string(cfg.node.cluster.head_port)) {
    // nop
  }

  // The exit code; once the node ran, its actors in `ran` (stopped, or
  // told to stop).
  int run(std::optional<std::vector<caf::actor>>& ran) {
    if (!join())
      return 1;
    while (serve()) { // the head was lost
      code_ = 1;
      if (!come_back())
        break;
      code_ = 0;
    }
    stop_local(ran);
    return code_;
  }

private:
  bool worker() const { return cfg_.node.role == role_kind::worker; }

  said_failure fail() const { return said_failure{log_of(sys_), failure_}; }

  // Reaches the head, says hello, checks its pipeline against this build
  // and machine, starts this node's actors; false: said why.
  bool join() {
    auto& c = cfg_.node.cluster;
    log_to(sys_) << "stoker-node: role " << to_string(cfg_.node.role)
                 << ", node " << cfg_.node.name << ", head " << head_at_;
    if (cfg_.node.console.terminal || cfg_.node.console.port != 0)
      log_to(sys_) << "stoker-node: console.* ignored: the console runs on "
                      "the head (attach to it there)";
    auto head = connect_to_head(sys_, c, links_);
    if (!head) {
      fail() << "stoker-node: " << describe(head.error());
      return false;
    }
    head_ = std::move(*head);
    self_->monitor(head_);
    info_.name = cfg_.node.name;
    info_.host = cfg_.node.host;
    info_.role = cfg_.node.role;
    info_.cores = std::max(1u, std::thread::hardware_concurrency());
    info_.memory_bytes = physical_memory_bytes();
    info_.workers = worker() ? cfg_.node.workers : 0;
    info_.device = worker() ? "" : to_string(cfg_.node.trainer.device);
    info_.trainers = worker() ? 0 : trainers_on_node(cfg_.node.trainer);
    info_.control = caf::actor_cast<caf::actor>(self_);
    caf::expected<welcome> hello{caf::error{}};
    self_->request(head_, c.join_timeout, hello_atom::value, info_)
      .receive([&](welcome& w) { hello = std::move(w); },
               [&](caf::error& err) { hello = std::move(err); });
    if (!hello) {
      fail() << "stoker-node: the head did not take node '"
             << cfg_.node.name << "': " << describe(hello.error());
      return false;
    }
    hello_ = std::move(*hello);
    // The head's pipeline is the one this node runs: refuse to join if
    // this build cannot run it (another binary, without the user's
    // entries). Nor a batch this machine can never hold (the head checked
    // its own).
    auto err = check_pipeline_names(reg_, hello_.pipeline);
    if (!err)
      err = check_batch_fits(hello_.pipeline, physical_memory_bytes());
    if (err) {
      fail() << "stoker-node: node '" << cfg_.node.name
             << "' refuses to join: " << describe(err);
      return false;
    }
    // From here on this node runs the head's pipeline with its own
    // settings.
    mine_ = run_config{cfg_.node, hello_.pipeline};
    note_caf_batches(mine_, log_of(sys_));
    auto local = worker() ? start_workers(sys_, self_, mine_, hello_, head_,
                                          reg_, links_)
                          : start_trainers(sys_, self_, mine_, hello_, head_,
                                           reg_, links_, hooks_);
    if (!local) {
      fail() << "stoker-node: " << describe(local.error());
      return false;
    }
    local_ = std::move(*local);
    auto line = log_to(sys_);
    line << to_string(cfg_.node.role) << " '" << cfg_.node.name
         << "' joined; " << local_.actors.size() << " actor(s) running";
    for (auto port : local_.ports)
      line << "; port " << cfg_.node.cluster.bind << ":" << port;
    for (auto& stream : local_.streams)
      line << "; batch stream on " << cfg_.node.cluster.bind << ":"
           << stream->port();
    return true;
  }

  // Answers the head until it says shutdown (false) or is lost (true: it
  // went away, or was silent for cluster.heartbeat-timeout; the head pings
  // every node a fifth of that apart, and kill -STOP keeps its connections
  // open, so no down message comes).
  bool serve() {
    auto silence = mine_.pipeline.router.heartbeat_timeout;
    bool head_lost = false;
    for (bool running = true; running;)
      self_->receive(
        [&](shutdown_atom) {
          running = false;
          return done_atom::value;
        },
        [&](ping_atom) {
          // Answered from this thread, which never trains: a rank hung in
          // a collective still answers, a stopped process does not.
          self_->send(head_, node_alive{cfg_.node.name});
        },
        [&](run_failure_note& note) {
          fail() << "stoker-node: the head says the run failed: "
                 << note.reason;
        },
        [&](run_refusal& refusal) {
          fail() << "stoker-node: the head refused the run: "
                 << refusal.reason;
          code_ = 2;
        },
        [&](trainer_endpoint& t) { reach_trainer(t); },
        [&](caf::down_msg& msg) {
          if (msg.source == caf::actor_cast<caf::actor_addr>(head_)) {
            fail() << "stoker-node: the head at " << head_at_
                   << " went away before the run ended"
                   << (msg.reason ? ": " + describe(msg.reason) : "");
            head_lost = true;
            running = false;
            return;
          }
          trainer_stopped(msg);
        },
        [&](world_atom, uint32_t w) { world_ = w; },
        caf::after(silence) >> [&] {
          fail() << "stoker-node: the head at " << head_at_
                 << " has been silent for " << silence.count()
                 << " ms (cluster.heartbeat-timeout): it is hung or cut "
                    "off";
          head_lost = true;
          running = false;
        });
    return head_lost;
  }

  // A trainer joined after this worker node: connect, and give every
  // local worker its batch stream.
  void reach_trainer(const trainer_endpoint& t) {
    auto direct = links_.connect_retrying<trainer_actor>(
      sys_, t.host, t.port, "trainer '" + t.node + "'",
      cfg_.node.cluster.connect_timeout);
    if (!direct) {
      log_of(sys_).error("stoker-node: " + describe(direct.error()));
      return;
    }
    if (t.data_port != 0)
      for (auto& a : local_.actors)
        self_->send(a, batch_route{*direct, t.host, t.data_port,
                                   t.stream_token});
  }

  // One of this node's trainers stopped. In a group that saves
  // checkpoints the group goes back to its last one and every rank forms
  // it again: this node starts that rank's trainer anew.
  void trainer_stopped(const caf::down_msg& msg) {
    auto at = std::find_if(local_.actors.begin(), local_.actors.end(),
                           [&](auto& a) { return a.address() == msg.source; });
    if (at == local_.actors.end())
      return;
    auto k = static_cast<size_t>(at - local_.actors.begin());
    auto index = local_.indices[k];
    // One refused for a setting would be refused again; a loop of this
    // process (hooks) cannot take a new trainer's batches.
    if (world_ <= 1 || mine_.node.trainer.checkpoint_dir.empty()
        || is(msg.reason, errc::invalid_config) || hooks_ != nullptr) {
      if (msg.reason && msg.reason != caf::exit_reason::user_shutdown)
        fail() << "stoker-node: trainer " << cfg_.node.name << "/" << index
               << " stopped: " << describe(msg.reason);
      return;
    }
    if (++restarts_ > max_trainer_restarts) {
      fail() << "stoker-node: trainer " << cfg_.node.name << "/" << index
             << " stopped (" << describe(msg.reason) << ") after "
             << max_trainer_restarts << " restarts; not starting it again";
      return;
    }
    local_.actors.erase(at);
    local_.indices.erase(local_.indices.begin()
                         + static_cast<std::ptrdiff_t>(k));
    local_.places.erase(local_.places.begin()
                        + static_cast<std::ptrdiff_t>(k));
    auto again = mine_;
    again.node.resume = false; // the group's rank 0 sends the state
    auto started = start_trainer(sys_, again, hello_.router, reg_, index,
                                 local_, links_, nullptr);
    if (!started) {
      fail() << "stoker-node: cannot start trainer " << cfg_.node.name << "/"
             << index << " again: " << describe(started.error());
      return;
    }
    log_to(sys_) << "trainer " << cfg_.node.name << "/" << index
                 << " stopped (" << describe(msg.reason)
                 << "); started again to rejoin its group";
    self_->monitor(started->first);
    local_.indices.push_back(index);
    self_->send(head_, join_atom::value, cfg_.node.name,
                std::vector<trainer_actor>{started->first},
                std::vector<trainer_endpoint>{started->second});
  }

  // The head was lost: where it journals its run and no group met at it,
  // this node keeps its work and joins the head started again; false: it
  // stops (said why).
  bool come_back() {
    if (!hello_.resumable) {
      fail() << "stoker-node: node '" << cfg_.node.name
             << "' stops (the head keeps no journal: set "
                "cluster.state-dir on the head for nodes that outlive it)";
      return false;
    }
    if (world_ > 1) {
      fail() << "stoker-node: node '" << cfg_.node.name
             << "' stops: its data-parallel group met at the head's "
                "store, which went with it (start the run again, the "
                "trainers with --resume from the group's checkpoint)";
      return false;
    }
    log_to(sys_) << "node '" << cfg_.node.name
                 << "' keeps its work and tries to reach the head again for "
                 << cfg_.node.cluster.connect_timeout.count()
                 << " ms (cluster.connect-timeout)";
    auto back = rejoin_head(sys_, self_, mine_, info_, local_, head_.node(),
                            links_);
    if (!back) {
      fail() << "stoker-node: " << describe(back.error()) << "; node '"
             << cfg_.node.name << "' stops";
      return false;
    }
    head_ = std::move(back->first);
    hello_ = std::move(back->second);
    log_to(sys_) << to_string(cfg_.node.role) << " '" << cfg_.node.name
                 << "' rejoined the head at " << head_at_ << " with its "
                 << local_.actors.size() << " actor(s)";
    return true;
  }

  // Stops the local actors and waits (5 s at most) until they are gone,
  // so the actor system's shutdown has nothing left to wait for; those
  // that stopped go to `ran`.
  void stop_local(std::optional<std::vector<caf::actor>>& ran) {
    *local_.stopping = true;
    for (auto& a : local_.actors) {
      self_->monitor(a);
      self_->send_exit(a, caf::exit_reason::user_shutdown);
    }
    // Trainers are watched twice (since they started, and now): each
    // counts once.
    std::set<caf::actor_addr> running;
    for (auto& a : local_.actors)
      running.insert(a.address());
    size_t alive = running.size();
    bool waiting = true;
    self_->receive_while([&] { return waiting && alive > 0; })(
      [&](caf::down_msg& msg) { alive -= running.erase(msg.source); },
      [&](shutdown_atom) { return done_atom::value; },
      caf::after(std::chrono::seconds(5)) >> [&] { waiting = false; });
    if (alive > 0)
      fail() << "stoker-node: " << alive
             << " local actor(s) did not stop within 5 s";
    for (auto& stream : local_.streams)
      log_to(sys_) << "batch stream: " << stream->frames()
                   << " batch(es) received";
    // Those that stopped; waiting for the rest to be destroyed would only
    // add to the 5 s (a trainer blocked handing a batch to a loop that
    // never takes it stops once its embedder closes the loop's feed).
    ran.emplace();
    for (auto& a : local_.actors)
      if (running.count(a.address()) == 0)
        ran->push_back(std::move(a));
    // each stream (holding its trainer) ends with local_
  }

  caf::actor_system& sys_;
  const run_config& cfg_;
  const registry& reg_;
  node_links& links_;
  const trainer_hooks* hooks_;
  std::string* failure_;
  caf::scoped_actor self_;
  std::string head_at_;
  membership_actor head_;
  node_info info_;
  welcome hello_;
  run_config mine_;  // the head's pipeline with this node's settings
  local_part local_; // this node's actors
  int code_ = 0;
  uint32_t world_ = 0; // the group's size, once the head says
  uint32_t restarts_ = 0;
};

} // namespace

int member_role_main(caf::actor_system& sys, const run_config& cfg,
                     const registry& reg, node_links& links,
                     const trainer_hooks* hooks, std::string* failure) {
  std::optional<std::vector<caf::actor>> ran;
  auto code = member_run{sys, cfg, reg, links, hooks, failure}.run(ran);
  if (!ran)
    return code; // it never ran (said why)
  // A stopped trainer's down message to the head's router may not have
  // reached the BASP broker yet; shut down now, and the broker's end could
  // leave it there for good, holding the trainer (actor_release.hpp).
  auto held = release_actors(sys, std::move(*ran),
                             std::chrono::seconds(3));
  if (held > 0)
    log_of(sys).warning("stoker-node: " + std::to_string(held)
                        + " local actor(s) still held 3 s after they were "
                          "told to stop; the shutdown may wait for them");
  log_to(sys) << to_string(cfg.node.role) << " '" << cfg.node.name
              << "' exits; peak RSS "
              << detail::peak_rss_bytes() / 1000000 << " MB";
  return code;
}

void bound_shutdown(int code, std::chrono::seconds limit,
                    std::shared_ptr<const log_sink> log) {
  std::thread{[code, limit, log = std::move(log)] {
    std::this_thread::sleep_for(limit);
    log->error("stoker-node: shutdown took over "
               + std::to_string(limit.count()) + " s; exiting");
    std::_Exit(code);
  }}.detach();
}

} // namespace stoker
