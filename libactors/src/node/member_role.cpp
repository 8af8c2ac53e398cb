#include "node/roles.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>
#include <thread>

#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>

#include "stoker/errors.hpp"
#include "stoker/registry.hpp"
#include "core/log_line.hpp"
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

// A node's run until the head says shutdown (or is lost); returns the exit
// code, and once the node ran, its actors in `ran` (stopped, or told to
// stop). Its scoped actor ends with it: its mailbox may hold a message
// from an actor (a trainer's second down message), which holds that actor.
int run_member(caf::actor_system& sys, const run_config& cfg,
               const registry& reg, node_links& links,
               const trainer_hooks* hooks, std::string* failure,
               std::optional<std::vector<caf::actor>>& ran) {
  auto fail = [failure, &sys] { return said_failure{log_of(sys), failure}; };
  auto& c = cfg.node.cluster;
  log_to(sys)
    << "stoker-node: role " << to_string(cfg.node.role) << ", node "
    << cfg.node.name << ", head " << c.head_host << ":" << c.head_port;
  if (cfg.node.console.terminal || cfg.node.console.port != 0)
    log_to(sys) << "stoker-node: console.* ignored: the console runs on the "
                   "head (attach to it there)";
  auto head = connect_to_head(sys, c, links);
  if (!head) {
    fail() << "stoker-node: " << describe(head.error());
    return 1;
  }
  caf::scoped_actor self{sys};
  self->monitor(*head);
  bool worker = cfg.node.role == role_kind::worker;
  node_info info;
  info.name = cfg.node.name;
  info.host = cfg.node.host;
  info.role = cfg.node.role;
  info.cores = std::max(1u, std::thread::hardware_concurrency());
  info.memory_bytes = physical_memory_bytes();
  info.workers = worker ? cfg.node.workers : 0;
  info.device = worker ? "" : to_string(cfg.node.trainer.device);
  info.trainers = worker ? 0 : trainers_on_node(cfg.node.trainer);
  info.control = caf::actor_cast<caf::actor>(self);
  caf::expected<welcome> hello{caf::error{}};
  self->request(*head, c.join_timeout, hello_atom::value, info)
    .receive([&](welcome& w) { hello = std::move(w); },
             [&](caf::error& err) { hello = std::move(err); });
  if (!hello) {
    fail() << "stoker-node: the head did not take node '" << cfg.node.name
           << "': " << describe(hello.error());
    return 1;
  }
  // The head's pipeline is the one this node runs: refuse to join if this
  // build cannot run it (another binary, without the user's entries).
  // Nor a batch this machine can never hold (the head checked its own).
  auto err = check_pipeline_names(reg, hello->pipeline);
  if (!err)
    err = check_batch_fits(hello->pipeline, physical_memory_bytes());
  if (err) {
    fail() << "stoker-node: node '" << cfg.node.name
           << "' refuses to join: " << describe(err);
    return 1;
  }
  // From here on this node runs the head's pipeline with its own settings.
  run_config mine{cfg.node, std::move(hello->pipeline)};
  note_caf_batches(mine, log_of(sys));
  auto local = worker
                 ? start_workers(sys, self, mine, *hello, *head, reg, links)
                 : start_trainers(sys, self, mine, *hello, *head, reg, links,
                                  hooks);
  if (!local) {
    fail() << "stoker-node: " << describe(local.error());
    return 1;
  }
  {
    auto line = log_to(sys);
    line << to_string(cfg.node.role) << " '" << cfg.node.name << "' joined; "
         << local->actors.size() << " actor(s) running";
    for (auto port : local->ports)
      line << "; port " << cfg.node.cluster.bind << ":" << port;
    for (auto& stream : local->streams)
      line << "; batch stream on " << cfg.node.cluster.bind << ":"
           << stream->port();
  }
  int code = 0;
  uint32_t world = 0; // the group's size, once the head says
  uint32_t restarts = 0;
  // The head pings every node a fifth of this apart (membership_actor): a
  // head silent this long is hung (kill -STOP keeps its connections open,
  // so no down message comes).
  auto silence = mine.pipeline.router.heartbeat_timeout;
  auto head_at = c.head_host + ":" + std::to_string(c.head_port);
  for (bool head_lost = false;; head_lost = false) {
    for (bool running = true; running;)
      self->receive(
        [&](shutdown_atom) {
          running = false;
          return done_atom::value;
        },
        [&](ping_atom) {
          // Answered from this thread, which never trains: a rank hung in
          // a collective still answers, a stopped process does not.
          self->send(*head, node_alive{cfg.node.name});
        },
        [&](run_failure_note& note) {
          fail() << "stoker-node: the head says the run failed: "
                 << note.reason;
        },
        [&](run_refusal& refusal) {
          fail() << "stoker-node: the head refused the run: "
                 << refusal.reason;
          code = 2;
        },
        [&](trainer_endpoint& t) {
          // A trainer joined after this worker node: connect, and give every
          // local worker its batch stream.
          auto direct = links.connect_retrying<trainer_actor>(
            sys, t.host, t.port, "trainer '" + t.node + "'",
            c.connect_timeout);
          if (!direct) {
            log_of(sys).error("stoker-node: "
                              + describe(direct.error()));
            return;
          }
          if (t.data_port != 0)
            for (auto& a : local->actors)
              self->send(a, batch_route{*direct, t.host, t.data_port,
                                        t.stream_token});
        },
        [&](caf::down_msg& msg) {
          if (msg.source == caf::actor_cast<caf::actor_addr>(*head)) {
            fail() << "stoker-node: the head at " << head_at
                   << " went away before the run ended"
                   << (msg.reason ? ": " + describe(msg.reason) : "");
            head_lost = true;
            running = false;
            return;
          }
          // One of this node's trainers stopped. In a group that saves
          // checkpoints the group goes back to its last one and every rank
          // forms it again: this node starts that rank's trainer anew.
          auto at = std::find_if(local->actors.begin(), local->actors.end(),
                                 [&](auto& a) {
                                   return a.address() == msg.source;
                                 });
          if (at == local->actors.end())
            return;
          auto k = static_cast<size_t>(at - local->actors.begin());
          auto index = local->indices[k];
          // One refused for a setting would be refused again; a loop of
          // this process (hooks) cannot take a new trainer's batches.
          if (world <= 1 || mine.node.trainer.checkpoint_dir.empty()
              || is(msg.reason, errc::invalid_config) || hooks != nullptr) {
            if (msg.reason && msg.reason != caf::exit_reason::user_shutdown)
              fail() << "stoker-node: trainer " << cfg.node.name << "/"
                     << index << " stopped: " << describe(msg.reason);
            return;
          }
          if (++restarts > max_trainer_restarts) {
            fail() << "stoker-node: trainer " << cfg.node.name << "/"
                   << index << " stopped (" << describe(msg.reason)
                   << ") after " << max_trainer_restarts
                   << " restarts; not starting it again";
            return;
          }
          local->actors.erase(at);
          local->indices.erase(local->indices.begin()
                               + static_cast<std::ptrdiff_t>(k));
          local->places.erase(local->places.begin()
                              + static_cast<std::ptrdiff_t>(k));
          auto again = mine;
          again.node.resume = false; // the group's rank 0 sends the state
          auto started = start_trainer(sys, again, hello->router, reg, index,
                                       *local, links, nullptr);
          if (!started) {
            fail() << "stoker-node: cannot start trainer " << cfg.node.name
                   << "/" << index << " again: "
                   << describe(started.error());
            return;
          }
          log_to(sys) << "trainer " << cfg.node.name << "/" << index
                      << " stopped (" << describe(msg.reason)
                      << "); started again to rejoin its group";
          self->monitor(started->first);
          local->indices.push_back(index);
          self->send(*head, join_atom::value, cfg.node.name,
                     std::vector<trainer_actor>{started->first},
                     std::vector<trainer_endpoint>{started->second});
        },
        [&](world_atom, uint32_t w) { world = w; },
        caf::after(silence) >> [&] {
          fail() << "stoker-node: the head at " << head_at
                 << " has been silent for " << silence.count()
                 << " ms (cluster.heartbeat-timeout): it is hung or cut "
                    "off";
          head_lost = true;
          running = false;
        });
    if (!head_lost)
      break;
    code = 1;
    if (!hello->resumable) {
      fail() << "stoker-node: node '" << cfg.node.name
             << "' stops (the head keeps no journal: set "
                "cluster.state-dir on the head for nodes that outlive it)";
      break;
    }
    if (world > 1) {
      fail() << "stoker-node: node '" << cfg.node.name
             << "' stops: its data-parallel group met at the head's "
                "store, which went with it (start the run again, the "
                "trainers with --resume from the group's checkpoint)";
      break;
    }
    log_to(sys) << "node '" << cfg.node.name
                << "' keeps its work and tries to reach the head again for "
                << c.connect_timeout.count() << " ms (cluster.connect-timeout)";
    auto back = rejoin_head(sys, self, mine, info, *local, head->node(),
                            links);
    if (!back) {
      fail() << "stoker-node: " << describe(back.error()) << "; node '"
             << cfg.node.name << "' stops";
      break;
    }
    head = std::move(back->first);
    hello = std::move(back->second);
    code = 0;
    log_to(sys) << to_string(cfg.node.role) << " '" << cfg.node.name
                << "' rejoined the head at " << head_at << " with its "
                << local->actors.size() << " actor(s)";
  }
  // Stop the local actors and wait until they are gone, so the actor
  // system's shutdown has nothing left to wait for.
  *local->stopping = true;
  for (auto& a : local->actors) {
    self->monitor(a);
    self->send_exit(a, caf::exit_reason::user_shutdown);
  }
  // Trainers are watched twice (since they started, and now): each
  // counts once.
  std::set<caf::actor_addr> running;
  for (auto& a : local->actors)
    running.insert(a.address());
  size_t alive = running.size();
  bool waiting = true;
  self->receive_while([&] { return waiting && alive > 0; })(
    [&](caf::down_msg& msg) { alive -= running.erase(msg.source); },
    [&](shutdown_atom) { return done_atom::value; },
    caf::after(std::chrono::seconds(5)) >> [&] { waiting = false; });
  if (alive > 0)
    fail() << "stoker-node: " << alive
           << " local actor(s) did not stop within 5 s";
  for (auto& stream : local->streams)
    log_to(sys) << "batch stream: " << stream->frames()
                << " batch(es) received";
  // Those that stopped; waiting for the rest to be destroyed would only
  // add to the 5 s (a trainer blocked handing a batch to a loop that never
  // takes it stops once its embedder closes the loop's feed).
  ran.emplace();
  for (auto& a : local->actors)
    if (running.count(a.address()) == 0)
      ran->push_back(std::move(a));
  return code; // each stream (holding its trainer) ends with `local`
}

} // namespace

int member_role_main(caf::actor_system& sys, const run_config& cfg,
                     const registry& reg, node_links& links,
                     const trainer_hooks* hooks, std::string* failure) {
  std::optional<std::vector<caf::actor>> ran;
  auto code = run_member(sys, cfg, reg, links, hooks, failure, ran);
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
  if (hooks == nullptr) // an embedding process ends itself
    bound_shutdown(code, std::chrono::seconds(5), shared_log_of(sys));
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
