#include "node/roles.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <tuple>

#include <caf/scoped_actor.hpp>

#include "stoker/errors.hpp"
#include "config/run_config.hpp"
#include "console/node_consoles.hpp"
#include "data/epoch_source.hpp"
#include "node/membership_actor.hpp"
#include "node/node_links.hpp"
#include "node/prepare_run.hpp"
#include "node/run_outcome.hpp"
#include "observe/http_observer.hpp"
#include "observe/progress_line.hpp"
#include "routing/router_actor.hpp"
#include "routing/source_actor.hpp"
#include "train/checkpoint.hpp"
#include "train/group_store.hpp"
#include "core/system_log.hpp"

namespace stoker {

namespace {

std::string joined_list(const std::vector<std::string>& names) {
  std::string out;
  for (auto& n : names)
    out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "none" : out;
}

// Writes the port where launchers and tests can find it: a temp file,
// renamed into place, so a reader never sees half a number.
caf::error write_port_file(const std::string& path, uint16_t port) {
  auto tmp = path + ".tmp";
  {
    std::ofstream out{tmp};
    out << port << '\n';
    if (!out)
      return make_error(errc::io_failure,
                        "cluster.port-file = \"" + path + "\": cannot write");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    return make_error(errc::io_failure,
                      "cluster.port-file = \"" + path + "\": cannot rename");
  return caf::none;
}

roster current_roster(caf::scoped_actor& self, const membership_actor& reg) {
  roster result;
  self->request(reg, caf::infinite, roster_atom::value)
    .receive([&](roster& r) { result = std::move(r); },
             [&](caf::error&) {});
  return result;
}

// Tells every node to exit and waits (briefly) for each to confirm, so the
// message is out before this process closes its connections.
void shut_down_nodes(caf::scoped_actor& self, const roster& members) {
  for (auto& control : members.controls)
    self->request(control, std::chrono::seconds(5), shutdown_atom::value)
      .receive([](done_atom) {},
               [&](caf::error& err) {
                 log_to(self->system(), log_level::warning)
                   << "head: a node did not confirm shutdown: "
                   << describe(err);
               });
}

// Forms the data-parallel group of every trainer that joined: ranks by
// node name, then each node's trainer index; the store they meet at (world
// > 1) is an actor of the head, reached over the ranks' CAF connections (no
// port of its own). Tells the router (and through it the source) and the
// front door the group's size, then each trainer its rank.
caf::expected<store_actor>
form_group(caf::scoped_actor& self, const router_actor& router,
           const membership_actor& front_door, const roster& members) {
  auto& places = members.trainer_places;
  std::vector<size_t> order(members.trainers.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::tie(places[a].node, places[a].index)
           < std::tie(places[b].node, places[b].index);
  });
  auto world = static_cast<uint32_t>(order.size());
  // Rank 0's checkpoint is the group's: one of another group's size is
  // refused before anything is leased (each rank would take a cursor of
  // another plan).
  if (auto& lead = places[order.front()]; lead.resume_world != 0)
    if (auto err = check_resume_world(
          lead.resume_world, world,
          "of trainer node '" + lead.node
            + "' (rank 0's trainer.checkpoint-dir, the group's)"))
      return err;
  store_actor store;
  if (world > 1)
    store = spawn_group_store(self->system());
  caf::error failure;
  group_plan plan;
  self->request(router, caf::infinite, world_atom::value, world)
    .receive([&](group_plan& p) { plan = p; },
             [&](caf::error& err) { failure = err; });
  if (failure) {
    if (store)
      self->send_exit(store, caf::exit_reason::user_shutdown);
    return failure;
  }
  self->send(front_door, world_atom::value, world, store);
  auto line = log_to(self->system());
  line << "head: " << world << " trainer(s), " << plan.steps_per_epoch
       << " global step(s) per epoch";
  for (uint32_t rank = 0; rank < world; ++rank) {
    auto& where = places[order[rank]];
    group_spec g;
    g.rank = rank;
    g.world = world;
    g.store = caf::actor_cast<caf::actor>(store);
    g.node = where.node;
    line << (rank == 0 ? ": " : ", ") << "rank " << rank << " = "
         << where.node << "/" << where.index;
    self->send(router, g, members.trainers[order[rank]]);
    self->send(members.trainers[order[rank]], std::move(g));
  }
  return store; // the line is said as it goes out of scope

}

// The settings that make a run the same run (a resumed head must have
// them all as the journal says).
std::string run_words(const run_config& cfg) {
  auto& s = cfg.pipeline.source;
  return "pipeline.dataset-size=" + std::to_string(s.dataset_size)
         + " pipeline.epochs=" + std::to_string(s.epochs)
         + " pipeline.batch-size=" + std::to_string(s.batch_size)
         + " pipeline.seed=" + std::to_string(s.seed)
         + " pipeline.shuffle=" + (s.shuffle ? "true" : "false")
         + " pipeline.last-batch=" + to_string(s.last_batch)
         + " pipeline.source=" + cfg.pipeline.data.source.name;
}

// What the router journals from: a new run's identity, or with --resume
// the last head's journal (checked to be this run's, and unfinished). A
// state dir holding an unfinished run is not overwritten without --resume.
caf::expected<router_journal> open_journal(const run_config& cfg) {
  router_journal out;
  auto& dir = cfg.node.cluster.state_dir;
  if (dir.empty())
    return out;
  out.dir = dir;
  auto path = head_journal_path(dir);
  if (!cfg.node.resume) {
    auto old = read_head_journal(dir);
    if (old && !old->finished)
      return make_error(errc::invalid_config,
                        "cluster.state-dir = \"" + dir
                          + "\" holds the journal of an unfinished run ("
                          + std::to_string(old->acked_batches)
                          + " batches acknowledged); expected --resume to "
                            "go on with it, or another state dir (or "
                            "remove "
                          + path + ") for a new run");
    out.start.run = run_words(cfg);
  } else {
    auto old = read_head_journal(dir);
    if (!old)
      return std::move(old.error());
    if (old->finished)
      return make_error(errc::invalid_config,
                        "--resume: the run journaled in " + path
                          + " completed already; expected an unfinished "
                            "run (or no --resume for a new one)");
    if (auto err = check_same_run(old->run, run_words(cfg), path))
      return err;
    out.start = std::move(*old);
    ++out.start.heads;
    out.resumed = true;
  }
  if (auto err = write_head_journal(dir, out.start))
    return err;
  return out;
}

} // namespace

caf::expected<run_report> run_head(caf::actor_system& sys,
                                   const run_config& cfg, node_links& links) {
  print_banner(cfg, log_of(sys));
  // What ends the run before it ran, said as stoker-node always said it
  // and returned as the value the verdict reads: a setting refused
  // (errc::invalid_config, exit 2) or the run failed (exit 1).
  auto refused = [&](caf::error err, bool say_refused = true) {
    log_to(sys, log_level::error)
      << "stoker-node: " << (say_refused ? "refused: " : "")
      << describe(err);
    return make_error(errc::invalid_config, describe(err));
  };
  auto failed = [&](std::string text) {
    log_to(sys, log_level::error) << "stoker-node: " << text;
    return make_error(errc::run_failure, std::move(text));
  };
  if (auto err = check_ports_free(cfg.node))
    return refused(std::move(err));
  auto journal = open_journal(cfg);
  if (!journal)
    return refused(std::move(journal.error()), false);
  if (journal->resumed)
    log_to(sys) << "head: resuming the run journaled in "
                << head_journal_path(journal->dir) << " ("
                << journal->start.acked_batches
                << " batch(es) acknowledged; head number "
                << journal->start.heads
                << "): its nodes rejoin with what they hold";
  else if (!journal->dir.empty())
    log_to(sys) << "head: journaling the run in "
                << head_journal_path(journal->dir)
                << " (nodes outlive this head; start it again with --resume)";
  epoch_source plan{cfg.pipeline.source};
  auto source = spawn_source(sys, cfg.pipeline.source);
  auto router = spawn_router(sys, source, cfg.pipeline.router,
                             plan.total_samples(),
                             batch_wire_bytes(cfg.pipeline),
                             router_scope::cluster, std::move(*journal));
  auto front_door = spawn_membership(sys, cfg, router);
  caf::scoped_actor self{sys};
  auto stop = [&] {
    for (auto a : {caf::actor_cast<caf::actor>(front_door),
                   caf::actor_cast<caf::actor>(router),
                   caf::actor_cast<caf::actor>(source)})
      self->send_exit(a, caf::exit_reason::user_shutdown);
  };
  auto& c = cfg.node.cluster;
  auto port = links.publish(sys, front_door, c.bind, c.port,
                            "the cluster port");
  if (!port) {
    stop();
    return failed(describe(port.error())
                  + "; expected a free port (cluster.port) and a local "
                    "address (cluster.bind)");
  }
  // Declared after `stop` and torn down before the actors it talks to.
  job_target target;
  target.router = router;
  target.membership = front_door;
  auto consoles = node_consoles::open(sys, cfg.node.console, target, "head",
                                      links.tls());
  if (!consoles) {
    stop();
    return failed(describe(consoles.error()));
  }
  auto observer = open_http_observer(sys, cfg.node.metrics, std::move(target),
                                     links.tls(), "head");
  if (!observer) {
    consoles = node_consoles{};
    stop();
    return failed(describe(observer.error()));
  }
  std::vector<std::string> expected;
  for (auto& node : c.nodes)
    expected.push_back(node.name);
  log_to(sys) << "head: listening on " << c.bind << ":" << *port
              << ", waiting for " << expected.size() << " node(s): "
              << joined_list(expected);
  if (!c.port_file.empty())
    if (auto err = write_port_file(c.port_file, *port)) {
      stop();
      return failed(describe(err));
    }
  caf::error failure;
  self->request(front_door, c.join_timeout, wait_atom::value)
    .receive([](roster&) {}, [&](caf::error& err) { failure = err; });
  auto members = current_roster(self, front_door);
  if (failure) {
    shut_down_nodes(self, members);
    stop();
    return failed("timed out after " + std::to_string(c.join_timeout.count())
                  + " ms (cluster.join-timeout) waiting for nodes; "
                    "missing: "
                  + joined_list(members.missing)
                  + "; joined: " + joined_list(members.nodes));
  }
  if (members.trainers.empty()) {
    shut_down_nodes(self, members);
    stop();
    return failed("no trainer joined; expected a node started with "
                  "--role=trainer among cluster.nodes");
  }
  auto group = form_group(self, router, front_door, members);
  if (!group) {
    if (is(group.error(), errc::invalid_config)) {
      for (auto& control : members.controls)
        self->send(control, run_refusal{describe(group.error())});
      shut_down_nodes(self, members);
      stop();
      return refused(std::move(group.error()));
    }
    shut_down_nodes(self, members);
    stop();
    return failed(describe(group.error()));
  }
  log_to(sys) << "head: " << members.nodes.size()
              << " node(s) joined, running";
  std::optional<progress_reporter> progress;
  if (shows_progress(cfg.node))
    progress.emplace(sys, router);
  caf::expected<run_report> result{caf::error{}};
  self->request(router, caf::infinite, run_atom::value)
    .receive(
      [&](router_summary& summary) {
        // Ask again: workers may have joined during the run.
        members = current_roster(self, front_door);
        result = collect_report(self, summary, members.trainers,
                                members.workers, node_usage_now(cfg.node));
      },
      [&](caf::error& err) {
        members = current_roster(self, front_door);
        result = collect_failed_report(self, router, members.trainers,
                                       members.workers, err);
      });
  progress.reset(); // ends its line before the run's are printed
  if (result)
    result->data_damage = cfg.pipeline.data.damage;
  finish_run(result, cfg, log_of(sys));
  // A rank whose peer died sees only its collective's error: every node
  // hears the reason before the shutdown.
  if (auto why = run_failure_text(result); !why.empty())
    for (auto& control : current_roster(self, front_door).controls)
      self->send(control, run_failure_note{why});
  linger(observer->get(), cfg.node.metrics, "head");
  observer->reset();
  consoles = node_consoles{}; // closes every console
  shut_down_nodes(self, current_roster(self, front_door));
  stop();
  if (*group)
    self->send_exit(*group, caf::exit_reason::user_shutdown);
  return result;
}

} // namespace stoker
