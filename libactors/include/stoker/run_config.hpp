#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <caf/expected.hpp>
#include <caf/settings.hpp>

#include "stoker/blur.hpp"
#include "stoker/epoch_source.hpp"
#include "stoker/routing.hpp"
#include "stoker/synthetic_mapper.hpp"

namespace stoker {

/// Where the trainer runs its steps.
enum class device_kind {
  auto_select, ///< CUDA when LibTorch sees a GPU, else CPU
  cuda,
  cpu,
  sim, ///< a simulated accelerator: waits sim_step_ms, checks each batch
};

/// Parses "auto", "cuda", "cpu" or "sim".
std::optional<device_kind> parse_device(std::string_view name);

/// The config-file name of `d`.
std::string to_string(device_kind d);

/// Sizes of the Vision Transformer (timm's ViT-B/16 by default).
struct vit_spec {
  uint32_t image_height = 224;
  uint32_t image_width = 224;
  uint32_t channels = 3;
  uint32_t patch_size = 16;
  uint32_t width = 768;
  uint32_t depth = 12;
  uint32_t heads = 12;
  uint32_t mlp_dim = 3072;
  uint32_t num_classes = 1000;
};

/// Everything a trainer needs to know.
struct trainer_spec {
  device_kind device = device_kind::auto_select;
  uint32_t sim_step_ms = 50;
  uint32_t log_every = 100;
  uint32_t prefetch = 4; ///< credits: batches the trainer is ready to buffer
  double lr = 0.001;
  double momentum = 0.9;
  uint32_t threads = 0; ///< LibTorch intra-op threads; 0 = LibTorch default
  vit_spec model;
};

/// One node's whole configuration, validated. Built by read_run_config.
struct run_config {
  std::string role = "local";
  std::string config_source; ///< the file (or embedded default) it came from
  std::string report_path;   ///< empty: no JSON report
  synthetic_spec synthetic;
  /// The article's workload: 1000 steps of batch 64.
  source_spec source{64000, 64, 1, true, 0};
  blur_params blur;
  routing_policy policy = routing_policy::least_loaded;
  uint32_t window = 8; ///< batches leased but not yet acknowledged, at most
  uint32_t workers = 0; ///< CPU workers; 0 = one per core
  trainer_spec trainer;
};

/// Reads and validates a run_config from CAF's parsed settings (file, then
/// command line). Any bad value yields errc::invalid_config with a message
/// naming the key, the value and what was expected.
caf::expected<run_config> read_run_config(const caf::settings& content);

} // namespace stoker
