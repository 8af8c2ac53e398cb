#pragma once

// Registry entries of a "user" for the tests: a source whose images carry
// their sample id in their pixels, an affine transform, and a model that
// checks every image it trains on against the pixels its id must have
// after the transform (throwing, so the run fails, when one differs).
// Registered by tests/custom_node.cpp (stoker-test-node) and the registry
// suite.

#include <cmath>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include <torch/torch.h>

#include "stoker/errors.hpp"
#include "stoker/registry.hpp"

namespace stoker_test {

// Pixel `i` of sample `id`: the first two hold the id, the rest a pattern
// of it.
inline uint8_t id_pixel(uint64_t id, uint32_t i) {
  if (i == 0)
    return static_cast<uint8_t>(id % 256);
  if (i == 1)
    return static_cast<uint8_t>(id / 256 % 256);
  return static_cast<uint8_t>((id * 37 + i * 11) % 256);
}

class id_dataset final : public stoker::dataset {
public:
  id_dataset(uint64_t size, int height, int width)
    : size_(size), height_(height), width_(width) {
    // nop
  }

  uint64_t size() const override { return size_; }

  int64_t label(uint64_t index) const override {
    return static_cast<int64_t>(index % 4);
  }

  caf::expected<stoker::sample_input> read(uint64_t,
                                           uint64_t index) const override {
    stoker::sample_input in;
    in.pixels = cv::Mat(height_, width_, CV_8UC1);
    for (int i = 0; i < height_ * width_; ++i)
      in.pixels.ptr<uint8_t>()[i] = id_pixel(index, static_cast<uint32_t>(i));
    return in;
  }

  std::string name(uint64_t index) const override {
    return "id image " + std::to_string(index);
  }

private:
  uint64_t size_;
  int height_;
  int width_;
};

// id-images(HEIGHT, WIDTH): pipeline.dataset-size images, 4 classes.
inline stoker::source_def id_images_source() {
  stoker::source_def def;
  def.name = "id-images";
  def.min_args = def.max_args = 2;
  def.usage = "id-images(HEIGHT, WIDTH)";
  def.version = "1";
  def.resolve = [](const stoker::data_spec& data, const stoker::synthetic_spec&)
    -> caf::expected<stoker::source_view> {
    auto& a = data.source.args;
    if (a[0] < 2 || a[1] < 1 || a[0] > 256 || a[1] > 256)
      return stoker::make_error(stoker::errc::invalid_config,
                                "pipeline.source = \"" + data.source.text
                                  + "\": sizes from 2 to 256 expected");
    if (data.train_limit == 0 || data.train_limit > 65536)
      return stoker::make_error(stoker::errc::invalid_config,
                                "pipeline.source = \"id-images\" needs "
                                "pipeline.dataset-size from 1 to 65536");
    stoker::source_view v;
    v.input = {static_cast<uint32_t>(a[0]), static_cast<uint32_t>(a[1]), 1};
    v.train_size = data.train_limit;
    v.num_classes = 4;
    return v;
  };
  def.open = [](const stoker::data_spec& data, stoker::split,
                const stoker::synthetic_spec&)
    -> caf::expected<std::shared_ptr<const stoker::dataset>> {
    auto& a = data.source.args;
    return std::shared_ptr<const stoker::dataset>{std::make_shared<id_dataset>(
      data.train_size, static_cast<int>(a[0]), static_cast<int>(a[1]))};
  };
  return def;
}

// affine(SCALE, OFFSET): x * SCALE + OFFSET on float pixels.
inline stoker::transform_def affine_transform() {
  stoker::transform_def def;
  def.name = "affine";
  def.min_args = def.max_args = 2;
  def.usage = "affine(SCALE, OFFSET)";
  def.version = "1";
  def.check = [](const stoker::entry_spec& t, stoker::chain_state& st) {
    if (!st.is_float)
      return stoker::transform_error(t, "affine works on float pixels; put "
                                        "it after to-tensor");
    return caf::error{};
  };
  def.apply = [](const stoker::entry_spec& t, stoker::sample_input& s,
                 const stoker::counter_rng&) {
    cv::Mat out;
    s.pixels.convertTo(out, CV_32F, t.args[0], t.args[1]);
    s.pixels = out;
    return caf::error{};
  };
  return def;
}

// A linear classifier whose forward first checks each image: its id from
// its first two pixels, then every pixel against id_pixel through
// to-tensor and affine(scale, offset).
class check_affine_impl : public torch::nn::Module {
public:
  check_affine_impl(double scale, double offset, const stoker::vit_spec& m)
    : scale_(scale),
      offset_(offset),
      pixels_(int64_t{m.image_height} * m.image_width * m.channels),
      fc_(register_module("fc", torch::nn::Linear(pixels_, m.num_classes))) {
    // nop
  }

  torch::Tensor forward(torch::Tensor x) {
    auto cpu = x.to(torch::kCPU).contiguous();
    const float* p = cpu.data_ptr<float>();
    auto raw = [&](const float* img, int k) {
      return std::lround((img[k] - offset_) / scale_ * 255.0);
    };
    for (int64_t n = 0; n < cpu.size(0); ++n) {
      const float* img = p + n * pixels_;
      auto id = static_cast<uint64_t>(raw(img, 0) + 256 * raw(img, 1));
      for (int64_t k = 0; k < pixels_; ++k) {
        auto want = static_cast<float>(
          id_pixel(id, static_cast<uint32_t>(k)) / 255.0 * scale_ + offset_);
        if (std::fabs(img[k] - want) > 1e-4f)
          throw std::runtime_error(
            "check-affine: pixel " + std::to_string(k) + " of sample "
            + std::to_string(id) + " is " + std::to_string(img[k])
            + ", expected " + std::to_string(want));
      }
    }
    return fc_(x.flatten(1));
  }

private:
  double scale_;
  double offset_;
  int64_t pixels_;
  torch::nn::Linear fc_;
};
TORCH_MODULE_IMPL(check_affine, check_affine_impl);

// check-affine(SCALE, OFFSET), trained with plain SGD at trainer.lr.
inline stoker::model_def check_affine_model() {
  stoker::model_def def;
  def.name = "check-affine";
  def.min_args = def.max_args = 2;
  def.usage = "check-affine(SCALE, OFFSET)";
  def.version = "1";
  def.make = [](const stoker::entry_spec& e, const stoker::trainer_spec& spec) {
    return torch::nn::AnyModule{
      check_affine{e.args[0], e.args[1], spec.model}};
  };
  def.optimizer = [](std::vector<torch::Tensor> params,
                     const stoker::trainer_spec& spec)
    -> std::unique_ptr<torch::optim::Optimizer> {
    return std::make_unique<torch::optim::SGD>(std::move(params),
                                               torch::optim::SGDOptions(spec.lr));
  };
  return def;
}

// The built-ins plus the three above.
inline stoker::registry test_registry() {
  auto reg = stoker::builtin_registry();
  for (auto err : {reg.add(id_images_source()), reg.add(affine_transform()),
                   reg.add(check_affine_model())})
    if (err)
      throw std::logic_error(stoker::describe(err));
  return reg;
}

} // namespace stoker_test
