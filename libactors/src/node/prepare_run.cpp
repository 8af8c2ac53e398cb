#include "node/prepare_run.hpp"

#include <algorithm>
#include <exception>
#include <thread>

#include <unistd.h>

#include "stoker/errors.hpp"
#include "stoker/registry.hpp"
#include "core/machine.hpp"
#include "data/resolve.hpp"
#include "kernels/blur.hpp"
#include "transport/sockets.hpp"

namespace stoker {

namespace {

void complete_node(node_options& node) {
  if (node.name.empty())
    node.name = to_string(node.role) + "-" + std::to_string(::getpid());
  if (node.host.empty()) {
    char hostname[256] = "localhost";
    ::gethostname(hostname, sizeof(hostname) - 1);
    node.host = hostname;
  }
  if (node.workers == 0)
    node.workers = std::max(1u, std::thread::hardware_concurrency());
}

std::string shape_of(const pipeline_options& p) {
  auto& o = p.data.output;
  return std::to_string(p.source.batch_size) + " images of "
         + std::to_string(o.height) + "x" + std::to_string(o.width) + "x"
         + std::to_string(o.channels);
}

} // namespace

caf::error check_batch_fits(const pipeline_options& p,
                            uint64_t machine_bytes) {
  auto wire = batch_wire_bytes(p);
  auto floats = batch_float_bytes(p);
  if (wire > p.router.max_inflight_bytes)
    return make_error(
      errc::invalid_config,
      "a batch of " + shape_of(p) + " (pipeline.batch-size and the image "
        + "shape) is " + human_bytes(wire) + " on the wire ("
        + to_string(p.transport.wire) + "), more than "
        + "router.max-inflight-bytes = "
        + std::to_string(p.router.max_inflight_bytes) + " ("
        + human_bytes(p.router.max_inflight_bytes)
        + "); expected a batch that fits in it: a smaller batch or image, "
          "or a larger router.max-inflight-bytes");
  if (machine_bytes > 0 && floats > machine_bytes)
    return make_error(
      errc::invalid_config,
      "a batch of " + shape_of(p) + " is " + human_bytes(floats)
        + " as float32, more than this machine's memory ("
        + human_bytes(machine_bytes)
        + "); expected a batch that fits: a smaller batch or image");
  return caf::none;
}

namespace {

caf::error check_names(const pipeline_options& p, const registry& reg) {
  if (auto err = reg.check_source(p.data.source))
    return err;
  for (auto [key, chain] :
       {std::pair{"pipeline.transforms", &p.data.transforms},
        std::pair{"pipeline.eval-transforms", &p.data.eval_transforms}})
    for (auto& entry : *chain)
      if (auto err = reg.check_transform(entry, key))
        return err;
  return reg.check_model(p.trainer.model_entry);
}

// The model's own check, once the data says what it will see.
caf::error check_model(const pipeline_options& p, const registry& reg) {
  auto def = reg.model(p.trainer.model_entry.name);
  if (def == nullptr || !def->check)
    return caf::none;
  try {
    return def->check(p.trainer.model_entry, p.trainer);
  } catch (const std::exception& e) {
    return make_error(errc::invalid_config,
                      "trainer.model = \"" + p.trainer.model_entry.text
                        + "\": its check threw: " + e.what());
  }
}

} // namespace

caf::error prepare_run(run_config& cfg, const registry& reg) {
  complete_node(cfg.node);
  auto& p = cfg.pipeline;
  // A worker node checks its own CPU when it opens the blur stage.
  bool local = cfg.node.role == role_kind::local;
  if (auto choice = resolve_blur(p.blur);
      !choice && (p.blur.impl == blur_impl::opencv || local))
    return std::move(choice.error());
  if (auto err = check_names(p, reg))
    return err;
  // Decided once, here: how every worker of the run makes a batch.
  p.kind = fused_synthetic(p.data) ? pipeline_kind::fused_blur
                                   : pipeline_kind::transform_chain;
  if (p.router.placement != blur_placement::cpu
      && p.kind != pipeline_kind::fused_blur)
    return make_error(errc::invalid_config,
                      "pipeline.placement = \"" + to_string(p.router.placement)
                        + "\": the GPU runs the article's blur stage only "
                          "(the synthetic source without "
                          "pipeline.transforms); expected \"cpu\" with this "
                          "pipeline");
  // The head and a local run look at the data (a synthetic source has no
  // files to look at); other roles get what they found from the head.
  bool looks = cfg.node.role == role_kind::head
               || cfg.node.role == role_kind::local
               || p.data.source.name == "synthetic";
  if (looks)
    if (auto err = resolve_data(p.data, p.source, p.synthetic, reg))
      return err;
  p.trainer.total_steps = (p.source.dataset_size + p.source.batch_size - 1)
                          / p.source.batch_size * p.source.epochs;
  auto& m = p.trainer.model;
  m.image_height = p.data.output.height;
  m.image_width = p.data.output.width;
  m.channels = p.data.output.channels;
  m.num_classes = p.data.num_classes;
  if (looks) {
    // Before anything is allocated: a batch that can never fit here.
    if (auto err = check_batch_fits(p, physical_memory_bytes()))
      return err;
    if (cfg.node.trainer.device != device_kind::sim)
      if (auto err = check_model(p, reg))
        return err;
  }
  stamp_versions(p, reg); // what the head's nodes must have
  return caf::none;
}

caf::error check_ports_free(const node_options& node) {
  struct listener {
    const char* key;
    const char* bind_key;
    const std::string& bind;
    uint16_t port;
  };
  std::vector<listener> ports{
    {"metrics.port", "metrics.bind", node.metrics.bind, node.metrics.port},
    {"console.port", "console.bind", node.console.bind, node.console.port}};
  if (node.role == role_kind::head)
    ports.push_back(
      {"cluster.port", "cluster.bind", node.cluster.bind, node.cluster.port});
  for (auto& l : ports) {
    if (l.port == 0)
      continue;
    // Listen, then close at once: the port is free now.
    auto taken = detail::tcp_listen(l.bind, l.port, l.key);
    if (taken) {
      ::close(taken->fd);
      continue;
    }
    auto why = describe(taken.error());
    auto colon = why.rfind(": ");
    return make_error(errc::invalid_config,
                      std::string{l.key} + " = " + std::to_string(l.port)
                        + ": cannot listen on " + l.bind + ":"
                        + std::to_string(l.port) + " ("
                        + (colon == std::string::npos ? why
                                                      : why.substr(colon + 2))
                        + "); expected a free port (or 0), and an address "
                          "of this machine in "
                        + l.bind_key);
  }
  return caf::none;
}

} // namespace stoker
