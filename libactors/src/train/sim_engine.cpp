#include <chrono>
#include <cmath>
#include <limits>
#include <thread>

#include "stoker/errors.hpp"
#include "train/collective.hpp"
#include "train/step_engine.hpp"

namespace stoker {

namespace {

class sim_engine final : public step_engine {
public:
  explicit sim_engine(uint32_t step_ms) : step_ms_(step_ms) {
    // nop
  }

  caf::expected<step_result> step(image_batch& batch) override {
    // Sleeping, not spinning: a simulated accelerator takes no host CPU,
    // just like a real one that is busy with its own kernels.
    if (batch.size() > 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(step_ms_));
    step_result out{std::numeric_limits<double>::quiet_NaN(), 0};
    if (group_) {
      // Nothing to exchange, but the group's step semantics: no rank
      // starts step k+1 before every rank finished step k.
      if (auto err = group_->barrier())
        return err;
      out.collective_ns = group_->take_wait_ns();
    }
    return out;
  }

  caf::error join_group(std::shared_ptr<collective_group> group) override {
    group_ = std::move(group);
    return caf::none;
  }

  caf::expected<eval_result> evaluate(image_batch&) override {
    // Forward passes only: about a third of a training step.
    std::this_thread::sleep_for(std::chrono::milliseconds(step_ms_ / 3));
    return eval_result{0, std::numeric_limits<double>::quiet_NaN()};
  }

  void set_learning_rate(double) override {
    // no model, nothing to learn
  }

  std::string device() const override {
    return "sim";
  }

  bool simulated() const override {
    return true;
  }

  caf::expected<std::string> save_state() override {
    return std::string{}; // no model: the cursor is the whole checkpoint
  }

  caf::error load_state(const std::string& state) override {
    if (!state.empty())
      return make_error(errc::invalid_config,
                        "--resume: the checkpoint holds a model ("
                          + std::to_string(state.size())
                          + " bytes), but trainer.device = \"sim\" has "
                            "none; expected the device it was saved with");
    return caf::none;
  }

private:
  uint32_t step_ms_;
  std::shared_ptr<collective_group> group_;
};

} // namespace

std::unique_ptr<step_engine> make_sim_engine(uint32_t step_ms) {
  return std::make_unique<sim_engine>(step_ms);
}

caf::expected<std::unique_ptr<step_engine>>
make_step_engine(const trainer_spec& spec, const trainer_local_spec& local,
                 const registry& reg, uint32_t local_index) {
  if (local.device == device_kind::sim)
    return make_sim_engine(static_cast<uint32_t>(
      std::lround(spec.sim_step_ms * local.sim_slowdown)));
  return make_torch_engine(spec, local, reg, local_index);
}

} // namespace stoker
