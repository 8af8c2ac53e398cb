#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <sstream>

#include <torch/csrc/utils/tensor_flatten.h>
#include <torch/torch.h>

#include "stoker/errors.hpp"
#include "stoker/registry.hpp"
#include "kernels/cuda_devices.hpp"
#include "train/collective.hpp"
#include "train/step_engine.hpp"

namespace stoker {

namespace {

// Gradients go to the all-reduce in flattened buckets of about this size:
// a few calls per step instead of one per parameter tensor (what PyTorch's
// DDP does with its 25 MB default).
constexpr size_t bucket_bytes = size_t{25} << 20;

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
    // Soft labels (a per-batch stage's MixUp) are the loss's class
    // probabilities, as torch's cross_entropy takes them.
    auto labels = b.soft_labels.empty()
                    ? torch::from_blob(const_cast<int64_t*>(b.labels.data()),
                                       {n}, torch::kInt64)
                    : torch::from_blob(const_cast<float*>(
                                         b.soft_labels.data()),
                                       {n, int64_t{b.label_classes}},
                                       torch::kFloat32);
    if (device_.is_cpu())
      return {images, labels};
    return {images.pin_memory().to(device_, /*non_blocking=*/true),
            labels.pin_memory().to(device_, /*non_blocking=*/true)};
  }

  std::optional<uint64_t> last_device_ns() const override {
    return last_device_ns_;
  }

  caf::expected<eval_result> evaluate(image_batch& b) override {
    try {
      torch::NoGradGuard no_grad;
      model_.ptr()->eval();
      auto [images, labels] = tensors_of(b);
      auto logits = model_.forward(images);
      model_.ptr()->train();
      eval_result out;
      out.correct = static_cast<uint64_t>(
        logits.argmax(1)
          .eq(labels.dim() == 2 ? labels.argmax(1) : labels)
          .sum()
          .item<int64_t>());
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

  caf::error join_group(std::shared_ptr<collective_group> group) override {
    group_ = std::move(group);
    try {
      // Every rank starts from rank 0's model.
      torch::NoGradGuard no_grad;
      std::vector<at::Tensor> state;
      for (auto& p : model_.ptr()->parameters())
        state.push_back(p);
      for (auto& b : model_.ptr()->buffers())
        state.push_back(b);
      return group_->broadcast_from_rank0(state);
    } catch (const std::exception& e) {
      return make_error(errc::trainer_failure,
                        std::string{"cannot take rank 0's model: "}
                          + e.what());
    }
  }

  // After the local backward: each rank's gradients, weighted by its
  // samples, summed over the ranks in a few flat buckets; the sums are
  // waited for, then divided by the group's samples: the gradient of the
  // mean loss over the whole global batch, whatever each rank's share.
  // Returns the global mean loss, or nothing when the step had no samples.
  caf::expected<std::optional<double>> reduce_gradients(int64_t n,
                                                        double local_loss) {
    std::vector<at::Tensor> grads;
    for (auto& p : model_.ptr()->parameters()) {
      if (!p.requires_grad())
        continue;
      if (!p.grad().defined()) // an empty batch: no backward ran
        p.mutable_grad() = torch::zeros_like(p);
      grads.push_back(p.grad());
    }
    std::vector<std::vector<at::Tensor>> buckets(1);
    size_t filled = 0;
    for (auto& g : grads) {
      auto bytes = static_cast<size_t>(g.numel()) * g.element_size();
      if (filled > 0 && filled + bytes > bucket_bytes) {
        buckets.emplace_back();
        filled = 0;
      }
      buckets.back().push_back(g);
      filled += bytes;
    }
    std::vector<at::Tensor> flat;
    auto weight = static_cast<double>(n);
    for (auto& bucket : buckets)
      if (!bucket.empty())
        flat.push_back(torch::utils::flatten_dense_tensors(bucket).mul_(
          weight));
    // The samples and the loss summed over them travel with the gradients.
    flat.push_back(torch::tensor({weight, weight * local_loss},
                                 torch::TensorOptions()
                                   .dtype(torch::kFloat64)
                                   .device(device_)));
    if (auto err = group_->all_reduce_sum(flat))
      return err;
    auto sums = flat.back().cpu();
    double total = sums[0].item<double>();
    if (total <= 0.0)
      return std::optional<double>{}; // no rank had a sample
    for (size_t k = 0; k + 1 < flat.size(); ++k) {
      flat[k].div_(total);
      auto parts = torch::utils::unflatten_dense_tensors(flat[k],
                                                         buckets[k]);
      for (size_t j = 0; j < parts.size(); ++j)
        buckets[k][j].copy_(parts[j]);
    }
    return std::optional<double>{sums[1].item<double>() / total};
  }

  caf::expected<step_result> group_step(const image_batch& b) {
    optimizer_->zero_grad();
    auto n = static_cast<int64_t>(b.size());
    double local = 0.0;
    if (n > 0) {
      auto [images, labels] = tensors_of(b);
      auto loss = torch::nn::functional::cross_entropy(
        model_.forward(images), labels);
      loss.backward();
      local = loss.item<double>();
    }
    auto global = reduce_gradients(n, local);
    if (!global)
      return std::move(global.error());
    step_result out;
    out.collective_ns = group_->take_wait_ns();
    if (!*global) {
      out.loss = std::numeric_limits<double>::quiet_NaN();
      return out;
    }
    optimizer_->step();
    out.loss = **global;
    return out;
  }

  caf::expected<step_result> step(image_batch& b) override {
    try {
      if (timer_)
        if (auto err = timer_->start())
          return err;
      step_result out;
      if (group_) {
        auto done = group_step(b);
        if (!done)
          return done;
        out = *done;
      } else {
        auto [images, labels] = tensors_of(b);
        optimizer_->zero_grad();
        auto loss = torch::nn::functional::cross_entropy(
          model_.forward(images), labels);
        loss.backward();
        optimizer_->step();
        out.loss = loss.item<double>();
      }
      double value = out.loss;
      if (timer_) {
        auto device_ns = timer_->stop_ns();
        if (!device_ns)
          return std::move(device_ns.error());
        last_device_ns_ = *device_ns;
      }
      if (!std::isfinite(value) && !(group_ && std::isnan(value)
                                     && b.size() == 0))
        return make_error(errc::trainer_failure,
                          "batch " + std::to_string(b.batch_id) + ": loss is "
                            + std::to_string(value)
                            + ", expected a finite number (lower trainer.lr?)");
      return out;
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
  std::shared_ptr<collective_group> group_; // a data-parallel group
  std::optional<uint64_t> last_device_ns_;
};

} // namespace

caf::expected<std::unique_ptr<step_engine>>
make_torch_engine(const trainer_spec& spec, const trainer_local_spec& local,
                  const registry& reg, uint32_t local_index) {
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
                        : torch::Device(
                          torch::kCUDA,
                          static_cast<c10::DeviceIndex>(
                            local_index
                            % std::max<size_t>(1, torch::cuda::device_count())));
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

uint32_t trainers_on_node(const trainer_local_spec& local) {
  if (local.count > 0)
    return local.count;
  if (local.device == device_kind::sim || local.device == device_kind::cpu)
    return 1;
  auto gpus = torch::cuda::is_available() ? torch::cuda::device_count() : 0;
  return static_cast<uint32_t>(std::max<size_t>(1, gpus));
}

} // namespace stoker
