#include "config/run_config.hpp"

#include <cmath>
#include <limits>
#include <thread>

#include <unistd.h>

#include <caf/config_value.hpp>

#include "stoker/dataset.hpp"
#include "stoker/errors.hpp"
#include "stoker/registry.hpp"
#include "data/resolve.hpp"
#include "kernels/blur.hpp"

namespace stoker {

double learning_rate_at(const trainer_spec& spec, uint64_t step) {
  if (spec.schedule != lr_schedule::cosine || spec.total_steps == 0)
    return spec.lr;
  double done = static_cast<double>(std::min(step, spec.total_steps))
                / static_cast<double>(spec.total_steps);
  return spec.lr * 0.5 * (1.0 + std::cos(3.14159265358979323846 * done));
}

std::optional<std::pair<std::string, uint16_t>>
parse_host_port(std::string_view text) {
  auto colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0
      || colon + 1 == text.size())
    return std::nullopt;
  uint32_t port = 0;
  for (char ch : text.substr(colon + 1)) {
    if (ch < '0' || ch > '9')
      return std::nullopt;
    port = port * 10 + static_cast<uint32_t>(ch - '0');
    if (port > 65535)
      return std::nullopt;
  }
  if (port == 0)
    return std::nullopt;
  return std::make_pair(std::string{text.substr(0, colon)},
                        static_cast<uint16_t>(port));
}

caf::expected<node_spec> parse_node_spec(std::string_view entry) {
  auto bad = [&] {
    return make_error(errc::invalid_config,
                      "\"" + std::string{entry}
                        + "\": expected NAME:worker[:WORKERS] or "
                          "NAME:trainer");
  };
  node_spec node;
  auto first = entry.find(':');
  if (first == std::string_view::npos || first == 0)
    return bad();
  node.name = std::string{entry.substr(0, first)};
  auto rest = entry.substr(first + 1);
  auto second = rest.find(':');
  node.role = std::string{rest.substr(0, second)};
  if (node.role != "worker" && node.role != "trainer")
    return bad();
  if (second != std::string_view::npos) {
    auto count = rest.substr(second + 1);
    if (node.role != "worker" || count.empty() || count.size() > 4)
      return bad();
    for (char ch : count) {
      if (ch < '0' || ch > '9')
        return bad();
      node.workers = node.workers * 10 + static_cast<uint32_t>(ch - '0');
    }
  }
  return node;
}

namespace {

// Reads typed values out of the settings, collecting the first error. Keys
// are fully qualified ("router.window"); a missing key keeps the default.
class reader {
public:
  explicit reader(const caf::settings& content) : content_(content) {
    // nop
  }

  template <class T>
  void unsigned_int(std::string_view key, T& out, int64_t min,
                    int64_t max = std::numeric_limits<T>::max()) {
    auto v = find(key);
    if (v == nullptr)
      return;
    auto x = caf::get_if<int64_t>(v);
    if (x == nullptr || *x < min || *x > max) {
      fail(key, *v,
           "an integer from " + std::to_string(min) + " to "
             + std::to_string(max));
      return;
    }
    out = static_cast<T>(*x);
  }

  void real(std::string_view key, double& out, double min, double max) {
    auto v = find(key);
    if (v == nullptr)
      return;
    // `2` is an integer to CAF's parser; take it as a number too.
    std::optional<double> x;
    if (auto d = caf::get_if<double>(v))
      x = *d;
    else if (auto i = caf::get_if<int64_t>(v))
      x = static_cast<double>(*i);
    if (!x || !(*x >= min && *x <= max)) {
      fail(key, *v,
           "a number from " + std::to_string(min) + " to "
             + std::to_string(max));
      return;
    }
    out = *x;
  }

  void duration(std::string_view key, std::chrono::milliseconds& out) {
    auto v = find(key);
    if (v == nullptr)
      return;
    if (auto x = caf::get_if<caf::timespan>(v); x && x->count() > 0)
      out = std::chrono::duration_cast<std::chrono::milliseconds>(*x);
    else
      fail(key, *v, "a positive duration such as 500ms or 10s");
  }

  void text_list(std::string_view key, std::vector<std::string>& out) {
    auto v = find(key);
    if (v == nullptr)
      return;
    if (auto x = caf::get_if<std::vector<std::string>>(v))
      out = *x;
    else
      fail(key, *v, "a list of quoted strings, e.g. [\"a\", \"b\"]");
  }

  void boolean(std::string_view key, bool& out) {
    auto v = find(key);
    if (v == nullptr)
      return;
    if (auto x = caf::get_if<bool>(v))
      out = *x;
    else
      fail(key, *v, "true or false");
  }

  void text(std::string_view key, std::string& out) {
    auto v = find(key);
    if (v == nullptr)
      return;
    if (auto x = caf::get_if<std::string>(v))
      out = *x;
    else
      fail(key, *v, "a quoted string");
  }

  // A registry entry, "name" or "name(a, b)" (the name is checked later).
  void entry(std::string_view key, entry_spec& out) {
    std::string text;
    auto v = find(key);
    if (v == nullptr)
      return;
    this->text(key, text);
    if (err_)
      return;
    if (auto x = parse_entry(text))
      out = std::move(*x);
    else
      fail(std::string{key} + " = " + describe(x.error()));
  }

  // A string that must be one of a fixed set, parsed by `parse`.
  template <class T, class Parse>
  void choice(std::string_view key, T& out, Parse parse,
              const char* expected) {
    std::string name;
    auto v = find(key);
    if (v == nullptr)
      return;
    text(key, name);
    if (err_)
      return;
    if (auto x = parse(name))
      out = *x;
    else
      fail(key, *v, expected);
  }

  void fail(std::string_view key, const caf::config_value& v,
            const std::string& expected) {
    fail(std::string{key} + " = " + to_string(v) + ": expected " + expected);
  }

  void fail(std::string message) {
    if (!err_)
      err_ = make_error(errc::invalid_config, std::move(message));
  }

  caf::error& error() { return err_; }

private:
  const caf::config_value* find(std::string_view key) {
    return caf::get_if(&content_, key);
  }

  const caf::settings& content_;
  caf::error err_;
};

} // namespace

uint64_t batch_wire_bytes(const run_config& cfg) {
  auto& s = cfg.data.output;
  return uint64_t{cfg.source.batch_size} * s.height * s.width * s.channels
         * dtype_size(cfg.transport);
}

caf::expected<run_config> read_run_config(const caf::settings& content,
                                          const registry& reg) {
  run_config cfg;
  reader r{content};
  constexpr int64_t u32_max = std::numeric_limits<uint32_t>::max();
  r.text("role", cfg.role);
  if (cfg.role != "local" && cfg.role != "head" && cfg.role != "worker"
      && cfg.role != "trainer")
    r.fail("--role=" + cfg.role
           + ": expected local, head, worker or trainer");
  cfg.node_name = cfg.role + "-" + std::to_string(::getpid());
  r.text("node.name", cfg.node_name);
  char hostname[256] = "localhost";
  ::gethostname(hostname, sizeof(hostname) - 1);
  cfg.node_host = hostname;
  r.text("node.host", cfg.node_host);
  // -- cluster
  auto& c = cfg.cluster;
  r.text("cluster.bind", c.bind);
  r.unsigned_int("cluster.port", c.port, 0, 65535);
  r.duration("cluster.join-timeout", c.join_timeout);
  r.duration("cluster.connect-timeout", c.connect_timeout);
  r.duration("cluster.heartbeat-timeout", cfg.router.heartbeat_timeout);
  cfg.router.no_worker_timeout = c.join_timeout;
  std::vector<std::string> nodes;
  r.text_list("cluster.nodes", nodes);
  for (auto& entry : nodes) {
    if (auto node = parse_node_spec(entry))
      c.nodes.push_back(std::move(*node));
    else
      r.fail("cluster.nodes: " + describe(node.error()));
  }
  r.text("cluster.port-file", c.port_file);
  std::string head;
  r.text("cluster.head", head);
  if (!head.empty()) {
    if (auto hp = parse_host_port(head)) {
      c.head_host = hp->first;
      c.head_port = hp->second;
    } else {
      r.fail("cluster.head = \"" + head
             + "\": expected HOST:PORT, e.g. 127.0.0.1:4242");
    }
  }
  if ((cfg.role == "worker" || cfg.role == "trainer") && head.empty())
    r.fail("--role=" + cfg.role
           + " needs --cluster.head=HOST:PORT (where the head listens)");
  r.text("report", cfg.report_path);
  r.boolean("console.terminal", cfg.console.terminal);
  r.unsigned_int("console.port", cfg.console.port, 0, 65535);
  r.text("console.bind", cfg.console.bind);
  r.text("console.token", cfg.console.token);
  r.boolean("resume", cfg.resume);
  // -- pipeline: the synthetic dataset, the source, the blur stage
  uint64_t seed = 0;
  r.unsigned_int("pipeline.seed", seed, 0, std::numeric_limits<int64_t>::max());
  r.unsigned_int("pipeline.dataset-size", cfg.source.dataset_size, 1,
                 std::numeric_limits<int64_t>::max());
  r.unsigned_int("pipeline.batch-size", cfg.source.batch_size, 1, 65536);
  r.unsigned_int("pipeline.epochs", cfg.source.epochs, 1, 1000000);
  r.boolean("pipeline.shuffle", cfg.source.shuffle);
  r.unsigned_int("pipeline.height", cfg.synthetic.height, 1, 16384);
  r.unsigned_int("pipeline.width", cfg.synthetic.width, 1, 16384);
  r.unsigned_int("pipeline.channels", cfg.synthetic.channels, 1, 4);
  r.unsigned_int("pipeline.num-classes", cfg.synthetic.num_classes, 1,
                 1000000);
  r.unsigned_int("pipeline.blur-repeat", cfg.blur.repeat, 0, 1000);
  r.unsigned_int("pipeline.blur-kernel", cfg.blur.kernel_size, 1, 99);
  double sigma_min = cfg.blur.sigma_min, sigma_max = cfg.blur.sigma_max;
  r.real("pipeline.sigma-min", sigma_min, 1e-3, 100.0);
  r.real("pipeline.sigma-max", sigma_max, 1e-3, 100.0);
  cfg.source.seed = cfg.synthetic.seed = cfg.blur.seed = seed;
  cfg.blur.sigma_min = static_cast<float>(sigma_min);
  cfg.blur.sigma_max = static_cast<float>(sigma_max);
  r.choice("pipeline.blur-impl", cfg.blur.impl, parse_enum<blur_impl>,
           "\"auto\", \"opencv\" or \"stoker\"");
  r.choice("pipeline.blur-isa", cfg.blur.isa, parse_enum<cpu_isa>,
           "\"auto\", \"avx512\", \"avx2\" or \"scalar\"");
  if (auto choice = resolve_blur(cfg.blur);
      !choice && (cfg.blur.impl == blur_impl::opencv || cfg.role == "local"))
    r.fail(describe(choice.error())); // a worker node checks its own CPU
  if (cfg.blur.kernel_size % 2 == 0)
    r.fail("pipeline.blur-kernel = " + std::to_string(cfg.blur.kernel_size)
           + ": expected an odd kernel size (as GaussianBlur requires)");
  if (sigma_min > sigma_max)
    r.fail("pipeline.sigma-min = " + std::to_string(sigma_min)
           + ": expected at most pipeline.sigma-max ("
           + std::to_string(sigma_max) + ")");
  // -- real data: the source, its files, the transform chains
  auto& d = cfg.data;
  r.entry("pipeline.source", d.source);
  if (!r.error())
    if (auto err = reg.check_source(d.source))
      r.fail(describe(err));
  r.text("pipeline.data", d.data);
  r.text("pipeline.eval-data", d.eval_data);
  r.unsigned_int("pipeline.eval-size", d.eval_limit, 0,
                 std::numeric_limits<int64_t>::max());
  // The synthetic source makes exactly that many; a real one keeps a subset
  // of its samples when the key is given.
  if (d.source.name == "synthetic"
      || caf::get_if(&content, "pipeline.dataset-size") != nullptr)
    d.train_limit = cfg.source.dataset_size;
  for (auto [key, chain] :
       {std::pair{"pipeline.transforms", &d.transforms},
        std::pair{"pipeline.eval-transforms", &d.eval_transforms}}) {
    std::vector<std::string> entries;
    r.text_list(key, entries);
    for (auto& entry : entries) {
      auto t = parse_entry(entry);
      if (!t)
        r.fail(std::string{key} + ": " + describe(t.error()));
      else if (auto err = reg.check_transform(*t, key))
        r.fail(describe(err));
      else
        chain->push_back(std::move(*t));
    }
  }
  r.boolean("trainer.eval", d.eval);
  r.choice("pipeline.placement", cfg.router.placement, parse_enum<blur_placement>,
           "\"cpu\", \"gpu\" or \"auto\"");
  if (cfg.router.placement != blur_placement::cpu
      && !fused_synthetic(d))
    r.fail("pipeline.placement = \"" + to_string(cfg.router.placement)
           + "\": the GPU runs the article's blur stage only (the "
             "synthetic source without pipeline.transforms); expected "
             "\"cpu\" with this pipeline");
  // -- router and workers
  auto& rs = cfg.router;
  r.choice("router.policy", rs.policy, parse_enum<routing_policy>,
           "\"least-loaded\", \"round-robin\", \"local-only\" or "
           "\"power-of-two\"");
  r.unsigned_int("router.window", rs.window, 1, 100000);
  r.unsigned_int("router.max-inflight-bytes", rs.max_inflight_bytes, 1,
                 std::numeric_limits<int64_t>::max());
  r.real("router.idle-target", rs.idle_target, 0.0, 1.0);
  r.duration("router.report-interval", rs.report_interval);
  r.real("router.hedge-factor", rs.hedge_factor, 0.0, 1000.0);
  if (rs.hedge_factor > 0.0 && rs.hedge_factor < 1.5)
    r.fail("router.hedge-factor = " + std::to_string(rs.hedge_factor)
           + ": expected 0 (off) or at least 1.5 (a batch that late is a "
             "straggler; below that every batch would be sent twice)");
  r.real("worker.slowdown", cfg.slowdown, 1.0, 1000.0);
  r.unsigned_int("worker.count", cfg.workers, 0, 4096);
  r.choice("transport.dtype", cfg.transport, parse_enum<dtype>,
           "\"float32\", \"float16\" or \"bfloat16\"");
  r.boolean("transport.batch-stream", cfg.batch_stream);
  if (cfg.workers == 0)
    cfg.workers = std::max(1u, std::thread::hardware_concurrency());
  // -- trainer and model
  auto& t = cfg.trainer;
  r.choice("trainer.device", t.device, parse_enum<device_kind>,
           "\"auto\", \"cuda\", \"cpu\" or \"sim\"");
  r.unsigned_int("trainer.sim-step-ms", t.sim_step_ms, 0, 3600000);
  r.unsigned_int("trainer.log-every", t.log_every, 1, u32_max);
  r.unsigned_int("trainer.prefetch", t.prefetch, 1, 100000);
  r.real("trainer.lr", t.lr, 0.0, 1e3);
  r.real("trainer.momentum", t.momentum, 0.0, 1.0);
  r.unsigned_int("trainer.threads", t.threads, 0, 4096);
  r.text("trainer.checkpoint-dir", t.checkpoint_dir);
  r.unsigned_int("trainer.checkpoint-every", t.checkpoint_every, 1, u32_max);
  r.entry("trainer.model", t.model_entry);
  if (!r.error())
    if (auto err = reg.check_model(t.model_entry))
      r.fail(describe(err));
  r.choice("trainer.optimizer", t.optimizer, parse_enum<optimizer_kind>,
           "\"sgd\" or \"adamw\"");
  r.real("trainer.weight-decay", t.weight_decay, 0.0, 10.0);
  r.choice("trainer.lr-schedule", t.schedule, parse_enum<lr_schedule>,
           "\"constant\" or \"cosine\"");
  if (cfg.resume && cfg.role != "local" && cfg.role != "trainer")
    r.fail("--resume with --role=" + cfg.role
           + ": only the trainer resumes; expected --role=local or "
             "--role=trainer");
  else if (cfg.resume && t.checkpoint_dir.empty())
    r.fail("--resume needs trainer.checkpoint-dir (where the checkpoint "
           "is)");
  auto& m = t.model;
  r.unsigned_int("model.patch-size", m.patch_size, 1, 4096);
  r.unsigned_int("model.width", m.width, 1, 65536);
  r.unsigned_int("model.depth", m.depth, 1, 1000);
  r.unsigned_int("model.heads", m.heads, 1, 1024);
  r.unsigned_int("model.mlp-dim", m.mlp_dim, 1, 1 << 20);
  // The head and a local run look at the data (a synthetic source has no
  // files to look at); other roles get what they found from the head.
  if (!r.error()
      && (cfg.role == "head" || cfg.role == "local"
          || d.source.name == "synthetic"))
    if (auto err = resolve_data(d, cfg.source, cfg.synthetic, reg))
      return err;
  if (cfg.source.batch_size > 0)
    t.total_steps = (cfg.source.dataset_size + cfg.source.batch_size - 1)
                    / cfg.source.batch_size * cfg.source.epochs;
  m.image_height = d.output.height;
  m.image_width = d.output.width;
  m.channels = d.output.channels;
  m.num_classes = d.num_classes;
  bool sized = m.image_height > 0; // resolved here (head, local)
  if (auto def = reg.model(t.model_entry.name);
      def != nullptr && t.device != device_kind::sim && sized && !r.error()
      && def->check) {
    try {
      if (auto err = def->check(t.model_entry, t))
        r.fail(describe(err));
    } catch (const std::exception& e) {
      r.fail("trainer.model = \"" + t.model_entry.text
             + "\": its check threw: " + e.what());
    }
  }
  if (r.error())
    return std::move(r.error());
  stamp_versions(cfg, reg); // what the head's nodes must have
  return cfg;
}

} // namespace stoker
