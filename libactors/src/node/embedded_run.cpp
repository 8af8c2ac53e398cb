#include "stoker/embed.hpp"

#include <atomic>
#include <mutex>
#include <thread>

#include <caf/actor_system.hpp>

#include "stoker/errors.hpp"
#include "config/run_config.hpp"
#include "core/checksum.hpp"
#include "data/epoch_plan.hpp"
#include "node/local_role.hpp"
#include "node/node_config.hpp"
#include "node/node_links.hpp"
#include "node/roles.hpp"
#include "node/run_outcome.hpp"
#include "train/batch_feed.hpp"
#include "train/checkpoint.hpp"
#include "train/group_store.hpp"
#include "train/trainer_actor.hpp"
#include "transport/buffer_pool.hpp"

namespace stoker {

struct embedded_run::state {
  registry reg;
  node_config node;
  run_config cfg;
  source_spec run_source; // a member's run, from the head (under mutex)
  // trainer.collective-timeout of the run (the head's; under mutex).
  std::chrono::milliseconds collective_timeout{0};
  std::shared_ptr<batch_feed> feed; // made with the trainer (under mutex)
  std::optional<std::string> closing; // close() came before the feed
  bool closing_stopped = false;       // and it was on purpose
  trainer_hooks hooks;
  std::unique_ptr<node_links> links;
  std::thread runner;
  std::atomic<bool> done{false}; // the loop knows the outcome
  std::atomic<bool> down{false}; // the actor system is down too
  mutable std::mutex mutex;
  std::optional<run_report> report;
  std::atomic<uint64_t> bytes_copied{0};
  std::function<void()> on_down;
  bool loop = true; // the trainer's step is the embedder's
  caf::error failure; // how the run ended (under mutex, once done)

  bool local() const noexcept { return cfg.node.role == role_kind::local; }

  std::shared_ptr<batch_feed> current_feed() const {
    std::lock_guard<std::mutex> guard{mutex};
    return feed;
  }

  // The reason close() gave, as the feed's error (under mutex).
  caf::error closing_error() const {
    return make_error(closing_stopped ? errc::stopped : errc::trainer_failure,
                      closing.value_or("the training loop closed its "
                                       "loader"));
  }

  // The run's verdict as the value the loop or stoker-node reads: none
  // (ok, or stopped on purpose), errc::invalid_config (refused) or the
  // failure's reason (judge_run, as stoker-node's exit code says it).
  static caf::error verdict_of(const caf::expected<run_report>& result) {
    auto judged = judge_run(result);
    switch (judged.verdict) {
      case run_verdict::ok:
      case run_verdict::stopped:
        return caf::none;
      case run_verdict::refused:
        return make_error(errc::invalid_config, judged.reason);
      case run_verdict::failed:
        break;
    }
    return make_error(errc::trainer_failure, judged.reason);
  }

  // The whole pipeline here: says what it runs and its outcome, writes
  // the report if asked (finish_run).
  caf::error run_here(caf::actor_system& sys) {
    print_banner(cfg, log_of(sys));
    auto got = run_local(sys, cfg, reg, links->tls(),
                         loop ? &hooks : nullptr);
    finish_run(got, cfg, log_of(sys));
    if (got) {
      std::lock_guard<std::mutex> guard{mutex};
      report = *got;
    }
    return verdict_of(got);
  }

  // A head: its cluster's run, said and reported as the local one.
  caf::error run_as_head(caf::actor_system& sys) {
    auto got = run_head(sys, cfg, *links);
    if (got) {
      std::lock_guard<std::mutex> guard{mutex};
      report = *got;
    }
    return verdict_of(got);
  }

  // A worker or trainer node of a cluster; the run's report is the
  // head's.
  caf::error run_member(caf::actor_system& sys) {
    std::string why;
    auto code = member_role_main(sys, cfg, reg, *links,
                                 loop ? &hooks : nullptr, &why);
    if (code == 0)
      return caf::none;
    auto who = to_string(cfg.node.role) + " node '" + cfg.node.name + "'";
    auto text = !why.empty() // the reason the node said
                  ? who + ": " + why
                  : who + " ended with exit code " + std::to_string(code)
                      + " (the head's report says why)";
    return make_error(code == 2 ? errc::invalid_config : errc::run_failure,
                      std::move(text));
  }

  void finish(caf::error why) {
    {
      std::lock_guard<std::mutex> guard{mutex};
      failure = why;
      if (feed)
        feed->finish(std::move(why));
    }
    done = true;
  }
};

caf::expected<std::shared_ptr<embedded_run>>
embedded_run::open(embed_options options, registry reg) {
  auto st = std::make_unique<state>();
  st->reg = std::move(reg);
  st->on_down = std::move(options.on_down);
  st->loop = options.loop;
  auto loaded = st->node.load(options.args, st->reg);
  if (!loaded)
    return std::move(loaded.error());
  if (!*loaded) // --help, --long-help or --dump-config was printed
    return std::shared_ptr<embedded_run>{};
  st->cfg = **loaded;
  auto& node = st->cfg.node;
  log_origin origin{node.name, to_string(node.role)};
  st->node.log = std::make_shared<const log_sink>(
    options.log ? log_sink{std::move(origin), node.log.level,
                           std::move(options.log)}
                : log_sink::standard_streams(std::move(origin),
                                             node.log.level,
                                             node.log.format));
  if (!st->loop)
    return std::make_shared<embedded_run>(private_tag{}, std::move(st));
  if (node.role != role_kind::local && node.role != role_kind::trainer)
    return make_error(errc::invalid_config,
                      "node.role = \"" + to_string(node.role)
                        + "\": an embedded loop is the trainer of a local "
                          "run or of a trainer node; expected \"local\" or "
                          "\"trainer\"");
  if (auto n = trainers_on_node(node.trainer); n != 1)
    return make_error(errc::invalid_config,
                      "trainer.count = " + std::to_string(n)
                        + ": one loop is one trainer; expected 1 (a "
                          "data-parallel group is one process per rank)");
  if (st->local())
    if (auto err = epoch_plan{st->cfg.pipeline.source, 1}.check())
      return err;
  return std::make_shared<embedded_run>(private_tag{}, std::move(st));
}

embedded_run::embedded_run(private_tag, std::unique_ptr<state> st)
  : state_(std::move(st)) {
  // nop
}

embedded_run::~embedded_run() {
  auto& runner = state_->runner;
  if (runner.joinable()) {
    if (runner.get_id() == std::this_thread::get_id())
      runner.detach(); // the run's own thread, at its very end
    else
      runner.join(); // it ended: it held a reference until then
  }
}

const run_config& embedded_run::config() const noexcept {
  return state_->cfg;
}

std::shared_ptr<const log_sink> embedded_run::log() const noexcept {
  return state_->node.log;
}

role_kind embedded_run::role() const noexcept {
  return state_->cfg.node.role;
}

caf::error embedded_run::start(std::optional<std::string> cursor,
                               uint32_t rank, uint32_t world) {
  auto& st = *state_;
  if (st.runner.joinable())
    return make_error(errc::invalid_config, "the run has started already");
  std::shared_ptr<const checkpoint> resumed;
  if (cursor) {
    auto c = decode_checkpoint(*cursor, "the state_dict's cursor");
    if (!c)
      return make_error(errc::invalid_config, describe(c.error()));
    if (st.local())
      if (auto err = check_resumable(c->run, identity_of(st.cfg)))
        return make_error(errc::invalid_config, describe(err));
    resumed = std::make_shared<const checkpoint>(std::move(*c));
  }
  st.hooks.resume_from = resumed;
  st.hooks.resume_rank = rank;
  st.hooks.resume_world = world;
  // The feed is made with the trainer, when the run's pipeline is known
  // (a member's comes from the head).
  st.hooks.make_engine = [&st, resumed](const run_config& run, uint32_t,
                                        std::shared_ptr<buffer_pool> pool)
    -> caf::expected<std::unique_ptr<step_engine>> {
    auto& src = run.pipeline.source;
    auto feed = std::make_shared<batch_feed>(identity_of(run),
                                             src.dataset_size, src.epochs,
                                             resumed.get());
    {
      std::lock_guard<std::mutex> guard{st.mutex};
      st.run_source = src; // a member's: the head's
      st.collective_timeout = run.pipeline.trainer.collective_timeout;
      st.feed = feed;
      if (st.closing)
        feed->close(st.closing_error());
    }
    return make_feed_engine(std::move(feed), std::move(pool));
  };
  auto links = node_links::open(st.cfg.node, st.node.log);
  if (!links)
    return make_error(errc::invalid_config, describe(links.error()));
  st.links = std::move(*links);
  // The report's CPU utilisation covers this run only (a process that
  // embeds runs one after another, or idled first, would dilute it).
  st.cfg.node.run_started = usage_mark_now();
  st.runner = std::thread([self = shared_from_this()] { self->run(); });
  return caf::none;
}

void embedded_run::run() {
  auto& st = *state_;
  auto sys = std::make_unique<caf::actor_system>(st.node);
  caf::error failure;
  switch (st.cfg.node.role) {
    case role_kind::local:
      failure = st.run_here(*sys);
      break;
    case role_kind::head:
      failure = st.run_as_head(*sys);
      break;
    case role_kind::worker:
    case role_kind::trainer:
      failure = st.run_member(*sys);
      break;
  }
  // The loop learns the outcome now: the actor system's shutdown waits
  // for detached workers and may wait on network peers (stoker-node
  // bounds it with bound_shutdown; here the process is the embedder's,
  // and join() is bounded).
  st.finish(std::move(failure));
  // torch.distributed keeps the group's store until the interpreter
  // exits: a call after this must not reach a destroyed actor system.
  if (auto feed = st.current_feed())
    if (auto g = feed->group(std::chrono::milliseconds(0)); g && g->store)
      close_actor_store(*g->store);
  sys.reset();
  st.down = true;
  if (st.on_down)
    st.on_down();
}

std::optional<loop_event> embedded_run::next(std::chrono::milliseconds timeout,
                                             bool release_first) {
  auto& st = *state_;
  auto feed = st.current_feed();
  if (feed && release_first) // the loop is done with the batch it holds
    feed->release();
  if (!feed) { // the trainer is not there yet (joining the head)
    if (st.done) {
      loop_event e;
      std::lock_guard<std::mutex> guard{st.mutex};
      e.error = st.failure;
      return e;
    }
    std::this_thread::sleep_for(
      std::min(timeout, std::chrono::milliseconds(20)));
    return std::nullopt;
  }
  auto got = feed->next(timeout);
  if (!got)
    return std::nullopt;
  loop_event e;
  switch (got->kind) {
    case feed_event::kind_type::phase_end:
      e.kind = loop_event::kind_type::phase_end;
      e.epoch = got->epoch;
      e.part = got->part;
      return e;
    case feed_event::kind_type::finished:
      e.kind = loop_event::kind_type::finished;
      e.error = std::move(got->error);
      return e;
    case feed_event::kind_type::batch:
      break;
  }
  e.kind = loop_event::kind_type::batch;
  e.batch = std::move(got->batch);
  auto pool = std::move(got->pool);
  // Proof of no copy: the buffer a worker (or the batch stream) took from
  // the run's pool and filled is the one handed on. One from elsewhere (a
  // copied message) is counted.
  e.pooled = pool && pool->made(e.batch.data.data());
  if (!e.batch.data.empty() && !e.pooled)
    st.bytes_copied += e.batch.data.size();
  if (pool)
    e.buffer_home = [pool](std::vector<char>&& data) {
      pool->release(std::move(data));
    };
  return e;
}

void embedded_run::release() {
  if (auto feed = state_->current_feed())
    feed->release();
}

std::optional<std::string> embedded_run::cursor() const {
  auto feed = state_->current_feed();
  if (!feed)
    return std::nullopt;
  return encode_checkpoint(feed->cursor());
}

void embedded_run::close(const std::string& reason, bool stopped) {
  auto& st = *state_;
  std::lock_guard<std::mutex> guard{st.mutex};
  st.closing = reason;
  st.closing_stopped = stopped;
  if (st.feed)
    st.feed->close(st.closing_error());
}

std::optional<loop_group>
embedded_run::group(std::chrono::milliseconds timeout) {
  auto& st = *state_;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::optional<batch_feed::group_info> g;
  for (;;) {
    auto feed = st.current_feed();
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
    if (feed) {
      g = feed->group(std::max(left, std::chrono::milliseconds(0)));
      break;
    }
    if (st.done || left.count() <= 0)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (!g)
    return std::nullopt;
  loop_group out;
  out.rank = g->spec.rank;
  out.world = g->spec.world;
  out.node = g->spec.node;
  out.interface = g->spec.interface.empty() ? st.cfg.node.cluster.bind
                                            : g->spec.interface;
  out.generation = g->spec.generation;
  out.store = g->store;
  std::lock_guard<std::mutex> guard{st.mutex};
  out.collective_timeout = st.collective_timeout;
  return out;
}

bool embedded_run::join(std::chrono::milliseconds timeout) {
  auto& st = *state_;
  if (!st.runner.joinable())
    return true;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!st.down && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return st.down;
}

std::optional<run_report> embedded_run::report() const {
  std::lock_guard<std::mutex> guard{state_->mutex};
  return state_->report;
}

loop_shape embedded_run::shape() const {
  auto& st = *state_;
  std::lock_guard<std::mutex> guard{st.mutex};
  loop_shape out;
  if (!st.local() && !st.feed)
    return out; // the head has not sent its pipeline yet
  auto& src = st.local() ? st.cfg.pipeline.source : st.run_source;
  out.epochs = src.epochs;
  out.batch_size = src.batch_size;
  out.dataset_size = src.dataset_size;
  out.eval_batches = epoch_plan{src, 1}.eval_batches();
  return out;
}

uint64_t embedded_run::steps_per_epoch(uint32_t world) const {
  auto& st = *state_;
  std::lock_guard<std::mutex> guard{st.mutex};
  auto& src = st.local() || !st.feed ? st.cfg.pipeline.source : st.run_source;
  return epoch_plan{src, std::max(1u, world)}.steps();
}

uint64_t embedded_run::bytes_copied() const noexcept {
  return state_->bytes_copied;
}

bool embedded_run::ended() const noexcept {
  return state_->done;
}

int exit_code(const caf::error& error) noexcept {
  if (!error)
    return 0;
  return is(error, errc::invalid_config) ? 2 : 1;
}

uint64_t sample_checksum(const void* data, size_t n) noexcept {
  return checksum64(data, n);
}

} // namespace stoker
