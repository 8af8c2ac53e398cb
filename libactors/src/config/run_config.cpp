#include "config/run_config.hpp"

#include <algorithm>
#include <string>

#include <unistd.h>

#include "stoker/errors.hpp"
#include "core/machine.hpp"
#include "config/discovery.hpp"
#include "config/option_table.hpp"

namespace stoker {

namespace {

caf::error bad(std::string message) {
  return make_error(errc::invalid_config, std::move(message));
}

bool given(const caf::settings& content, const char* key) {
  return caf::get_if(&content, key) != nullptr;
}

// The keys of the article's fused blur stage: a transform chain replaces
// that stage, so setting both says two different things.
constexpr const char* fused_blur_keys[] = {
  "pipeline.blur-repeat", "pipeline.blur-kernel", "pipeline.blur-impl",
  "pipeline.blur-isa",    "pipeline.sigma-min",   "pipeline.sigma-max"};

// What this node would listen on, against the rule: nothing beyond
// loopback unauthenticated unless asked for.
caf::error check_listening(const node_options& node) {
  // With TLS, a console beyond loopback takes only clients with a
  // certificate of the cluster's CA; without, a token is the least.
  if (!is_loopback(node.console.bind) && node.console.token.empty()
      && !node.tls.enabled())
    return bad("console.bind = \"" + node.console.bind
               + "\" reaches beyond this machine; expected console.token to "
                 "be set as well (or tls.*: the console then takes only "
                 "clients with a certificate of the cluster's CA)");
  bool listens = node.role == role_kind::head
                 || node.role == role_kind::trainer;
  auto unprotected = [&](const std::string& key, const std::string& bind) {
    return bad(key + " = \"" + bind
               + "\" reaches beyond this machine, and TLS is not configured; "
                 "expected tls.certificate, tls.key and tls.ca-file (or "
                 "tls.dir; tools/ops/make-certs makes them), or "
                 "cluster.insecure = true to run unauthenticated "
                 "(docs/security.md)");
  };
  if (node.tls.required && !node.tls.enabled()
      && node.role != role_kind::local)
    return bad("tls.required = true, and TLS is not configured; expected "
               "tls.dir (tools/ops/make-certs makes one), or tls.certificate, "
               "tls.key and tls.ca-file");
  if (!node.tls.enabled() && !node.cluster.insecure) {
    if (listens && !is_loopback(node.cluster.bind))
      return unprotected("cluster.bind", node.cluster.bind);
    bool serves = node.role == role_kind::head
                  || node.role == role_kind::local;
    if (serves && node.console.port != 0 && !is_loopback(node.console.bind))
      return unprotected("console.bind", node.console.bind);
    if (serves && node.metrics.port != 0 && !is_loopback(node.metrics.bind))
      return unprotected("metrics.bind", node.metrics.bind);
  }
  return caf::none;
}

// The checks that span keys, on values each of which is fine alone.
caf::error check_across_keys(const run_config& cfg,
                             const caf::settings& content) {
  auto& node = cfg.node;
  auto& p = cfg.pipeline;
  if ((node.role == role_kind::worker || node.role == role_kind::trainer)
      && node.cluster.head_host.empty())
    return bad("--role=" + to_string(node.role)
               + " needs --cluster.head=HOST:PORT (where the head listens)");
  if (node.resume && node.role == role_kind::worker)
    return bad("--resume with --role=worker: workers keep no state; "
               "expected --role=local, trainer or head");
  if (node.resume && node.role == role_kind::head
      && node.cluster.state_dir.empty())
    return bad("--resume with --role=head needs cluster.state-dir (where the "
               "head journaled the run)");
  if (node.resume && node.role != role_kind::head
      && node.trainer.checkpoint_dir.empty())
    return bad("--resume needs trainer.checkpoint-dir (where the checkpoint "
               "is)");
  // --print-nodes prints the plan and starts nothing: what this host
  // would listen on does not matter (it refused the plan on a trainer or
  // head host without tls.*, where discovery binds beyond loopback).
  if (!node.print_nodes)
    if (auto err = check_listening(node))
      return err;
  if (p.blur.kernel_size % 2 == 0)
    return bad("pipeline.blur-kernel = " + std::to_string(p.blur.kernel_size)
               + ": expected an odd kernel size (as GaussianBlur requires)");
  if (p.blur.sigma_min > p.blur.sigma_max)
    return bad("pipeline.sigma-min = " + std::to_string(p.blur.sigma_min)
               + ": expected at most pipeline.sigma-max ("
               + std::to_string(p.blur.sigma_max) + ")");
  if (!p.data.transforms.empty())
    for (auto key : fused_blur_keys)
      if (given(content, key))
        return bad(std::string{key}
                   + " is set, and so is pipeline.transforms: the "
                     "pipeline.blur-* and sigma-* keys configure the "
                     "article's fused blur stage, which a transform chain "
                     "replaces; expected one of the two (in a chain, blur "
                     "with a gaussian-blur(K, SMIN, SMAX, N) entry)");
  auto hedge = p.router.hedge_factor;
  if (hedge > 0.0 && hedge < 1.5)
    return bad("router.hedge-factor = " + std::to_string(hedge)
               + ": expected 0 (off) or at least 1.5 (a batch that late is a "
                 "straggler; below that every batch would be sent twice)");
  return caf::none;
}

} // namespace

caf::expected<run_config> read_run_config(const caf::settings& content) {
  run_config cfg;
  for (auto& decl : option_table())
    if (auto value = caf::get_if(&content, decl.name))
      if (auto err = decl.read(*value, cfg))
        return err;
  // One seed for every stage's draws; one timeout for every wait on nodes.
  auto& p = cfg.pipeline;
  p.synthetic.seed = p.blur.seed = p.data.seed = p.source.seed;
  p.router.no_worker_timeout = cfg.node.cluster.join_timeout;
  // The synthetic source makes exactly that many; a real one keeps a
  // subset of its samples only when the key is given.
  if (p.data.source.name == "synthetic"
      || given(content, "pipeline.dataset-size"))
    p.data.train_limit = p.source.dataset_size;
  if (cfg.node.cluster.discover != discover_kind::static_nodes) {
    if (given(content, "role"))
      return bad("--role with cluster.discover = "
                 + to_string(cfg.node.cluster.discover)
                 + ": discovery decides each host's role; expected the same "
                   "command line on every host, without --role");
    if (auto err = apply_platform_discovery(cfg))
      return err;
  }
  if (auto err = check_across_keys(cfg, content))
    return err;
  return cfg;
}

bool shows_progress(const node_options& node) {
  if (node.role != role_kind::head && node.role != role_kind::local)
    return false;
  if (node.log.format == log_format::json) // a collector reads whole lines
    return false;
  return node.progress == progress_mode::on
         || (node.progress == progress_mode::automatic
             && ::isatty(STDOUT_FILENO) == 1);
}

usage_mark usage_mark_now() noexcept {
  return usage_mark{process_cpu_seconds(), process_wall_seconds()};
}

node_usage node_usage_between(const node_options& node, usage_mark from,
                              usage_mark to) {
  node_usage u;
  u.node = node.name;
  u.host = node.host;
  u.cpu_s = std::max(0.0, to.cpu_s - from.cpu_s);
  u.wall_s = std::max(0.0, to.wall_s - from.wall_s);
  u.cores = machine_cores();
  u.price_per_hour = node.price_per_hour;
  if (u.price_per_hour <= 0.0)
    for (auto& [type, price] : node.prices)
      if (type == node.instance_type)
        u.price_per_hour = price;
  return u;
}

node_usage node_usage_now(const node_options& node) {
  return node_usage_between(node, node.run_started, usage_mark_now());
}

} // namespace stoker
