#include <cmath>
#include <cstring>
#include <sstream>

#include <torch/torch.h>

#include "stoker/errors.hpp"
#include "stoker/registry.hpp"
#include "kernels/cuda_devices.hpp"
#include "train/step_engine.hpp"

namespace stoker {

namespace {

std::unique_ptr<torch::optim::Optimizer>
make_optimizer(const model_def& def, const trainer_spec& spec,
               std::vector<torch::Tensor> parameters) {
  if (def.optimizer) {
    auto custom = def.optimizer(std::move(parameters), spec);
    if (!custom)
      throw std::runtime_error("model '" + def.name
                               + "': its optimizer function returned none");
    return custom;
  }
  if (spec.optimizer == optimizer_kind::adamw)
    return std::make_unique<torch::optim::AdamW>(
      std::move(parameters),
      torch::optim::AdamWOptions(spec.lr).weight_decay(spec.weight_decay));
  return std::make_unique<torch::optim::SGD>(
    std::move(parameters), torch::optim::SGDOptions(spec.lr)
                             .momentum(spec.momentum)
                             .weight_decay(spec.weight_decay));
}

class torch_engine final : public step_engine {
public:
  torch_engine(const model_def& def, const trainer_spec& spec,
               torch::Device dev, std::optional<cuda_step_timer> timer)
    : device_(dev),
      model_(def.make(spec.model_entry, spec)),
      timer_(std::move(timer)) {
    if (model_.is_empty())
      throw std::runtime_error("model '" + def.name
                               + "': its make function returned no module");
    // On the device before the optimizer holds the parameters.
    model_.ptr()->to(device_);
    optimizer_ = make_optimizer(def, spec, model_.ptr()->parameters());
    model_.ptr()->train();
  }

  // Views of the batch's buffers on the device: from_blob does not copy.
  // On CPU the view is used as it is; to a GPU the images go through
  // pinned (page-locked) memory, which lets the copy be asynchronous: it
  // is queued on the stream ahead of the step's kernels instead of
  // stalling the host while the DMA runs.
  std::pair<torch::Tensor, torch::Tensor> tensors_of(const image_batch& b) {
    auto n = static_cast<int64_t>(b.size());
    auto images = torch::from_blob(const_cast<char*>(b.data.data()),
                                   {n, b.channels, b.height, b.width},
                                   torch::kFloat32);
    auto labels = torch::from_blob(const_cast<int64_t*>(b.labels.data()), {n},
                                   torch::kInt64);
    if (device_.is_cpu())
      return {images, labels};
    return {images.pin_memory().to(device_, /*non_blocking=*/true),
            labels.pin_memory().to(device_, /*non_blocking=*/true)};
  }

  std::optional<uint64_t> last_device_ns() const override {
    return last_device_ns_;
  }

  caf::expected<eval_result> evaluate(const image_batch& b) override {
    try {
      torch::NoGradGuard no_grad;
      model_.ptr()->eval();
      auto [images, labels] = tensors_of(b);
      auto logits = model_.forward(images);
      model_.ptr()->train();
      eval_result out;
      out.correct = static_cast<uint64_t>(
        logits.argmax(1).eq(labels).sum().item<int64_t>());
      out.loss_sum = torch::nn::functional::cross_entropy(
                       logits, labels,
                       torch::nn::functional::CrossEntropyFuncOptions()
                         .reduction(torch::kSum))
                       .item<double>();
      return out;
    } catch (const std::exception& e) {
      model_.ptr()->train();
      return make_error(errc::trainer_failure,
                        "batch " + std::to_string(b.batch_id)
                          + ": evaluation failed: " + e.what());
    }
  }

  caf::expected<step_result> step(const image_batch& b) override {
    try {
      if (timer_)
        if (auto err = timer_->start())
          return err;
      auto [images, labels] = tensors_of(b);
      optimizer_->zero_grad();
      auto loss = torch::nn::functional::cross_entropy(
        model_.forward(images), labels);
      loss.backward();
      optimizer_->step();
      double value = loss.item<double>();
      if (timer_) {
        auto device_ns = timer_->stop_ns();
        if (!device_ns)
          return std::move(device_ns.error());
        last_device_ns_ = *device_ns;
      }
      if (!std::isfinite(value))
        return make_error(errc::trainer_failure,
                          "batch " + std::to_string(b.batch_id) + ": loss is "
                            + std::to_string(value)
                            + ", expected a finite number (lower trainer.lr?)");
      return step_result{value};
    } catch (const std::exception& e) {
      return make_error(errc::trainer_failure,
                        "batch " + std::to_string(b.batch_id)
                          + ": training step failed: " + e.what());
    }
  }

  void set_learning_rate(double lr) override {
    for (auto& group : optimizer_->param_groups())
      group.options().set_lr(lr);
  }

  std::string device() const override {
    return device_.str();
  }

  bool simulated() const override {
    return false;
  }

  caf::expected<std::string> save_state() override {
    try {
      // Two archives, each length-prefixed: model, then optimizer.
      std::string out;
      auto append = [&](torch::serialize::OutputArchive& archive) {
        std::ostringstream bytes;
        archive.save_to(bytes);
        auto text = bytes.str();
        uint64_t size = text.size();
        out.append(reinterpret_cast<const char*>(&size), sizeof(size));
        out += text;
      };
      torch::serialize::OutputArchive model_archive;
      model_.ptr()->save(model_archive);
      append(model_archive);
      torch::serialize::OutputArchive optimizer_archive;
      optimizer_->save(optimizer_archive);
      append(optimizer_archive);
      return out;
    } catch (const std::exception& e) {
      return make_error(errc::trainer_failure,
                        std::string{"cannot save the model: "} + e.what());
    }
  }

  caf::error load_state(const std::string& state) override {
    size_t at = 0;
    auto next = [&](std::string& part) {
      uint64_t size = 0;
      if (state.size() - at < sizeof(size))
        return false;
      std::memcpy(&size, state.data() + at, sizeof(size));
      at += sizeof(size);
      if (size > state.size() - at)
        return false;
      part = state.substr(at, size);
      at += size;
      return true;
    };
    std::string model_bytes, optimizer_bytes;
    if (!next(model_bytes) || !next(optimizer_bytes) || at != state.size())
      return make_error(errc::invalid_config,
                        "--resume: the checkpoint holds no model for "
                        "trainer.device = \""
                          + device_.str()
                          + "\" (saved by the simulated accelerator?)");
    try {
      std::istringstream model_in{model_bytes};
      torch::serialize::InputArchive model_archive;
      model_archive.load_from(model_in, device_);
      model_.ptr()->load(model_archive);
      std::istringstream optimizer_in{optimizer_bytes};
      torch::serialize::InputArchive optimizer_archive;
      optimizer_archive.load_from(optimizer_in, device_);
      optimizer_->load(optimizer_archive);
    } catch (const std::exception& e) {
      return make_error(errc::invalid_config,
                        std::string{"--resume: the checkpoint's model does "
                                    "not fit this one (same model.* "
                                    "settings expected): "}
                          + e.what());
    }
    return caf::none;
  }

private:
  torch::Device device_;
  torch::nn::AnyModule model_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  std::optional<cuda_step_timer> timer_; // on CUDA: the device's busy time
  std::optional<uint64_t> last_device_ns_;
};

} // namespace

caf::expected<std::unique_ptr<step_engine>>
make_torch_engine(const trainer_spec& spec, const trainer_local_spec& local,
                  const registry& reg) {
  if (auto err = reg.check_model(spec.model_entry))
    return err;
  auto& def = *reg.model(spec.model_entry.name);
  bool has_cuda = torch::cuda::is_available();
  if (local.device == device_kind::cuda && !has_cuda)
    return make_error(errc::invalid_config,
                      "trainer.device = \"cuda\": LibTorch sees no CUDA "
                      "device (Debian's LibTorch is CPU-only); expected "
                      "\"auto\", \"cpu\" or \"sim\"");
  if (local.threads > 0)
    torch::set_num_threads(static_cast<int>(local.threads));
  torch::Device dev = local.device == device_kind::cpu || !has_cuda
                        ? torch::Device(torch::kCPU)
                        : torch::Device(torch::kCUDA, 0);
  std::optional<cuda_step_timer> timer;
  if (dev.is_cuda()) {
    // LibTorch queues on the legacy default stream unless told otherwise:
    // the events there bracket each step's kernels.
    auto opened = cuda_step_timer::open(dev.index());
    if (!opened)
      return make_error(errc::invalid_config,
                        "trainer.device = \"" + dev.str()
                          + "\": LibTorch sees the GPU but "
                          + describe(opened.error()));
    timer = std::move(*opened);
  }
  try {
    return std::unique_ptr<step_engine>{
      std::make_unique<torch_engine>(def, spec, dev, std::move(timer))};
  } catch (const std::exception& e) {
    return make_error(errc::trainer_failure,
                      "trainer.model = \"" + spec.model_entry.text
                        + "\": cannot build it on " + dev.str() + ": "
                        + e.what());
  }
}

} // namespace stoker
