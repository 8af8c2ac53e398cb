#include "my_entries.hpp"

#include <opencv2/core.hpp>

stoker::transform_def brightness_jitter_transform() {
  stoker::transform_def def;
  def.name = "brightness-jitter";
  def.min_args = def.max_args = 1;
  def.usage = "brightness-jitter(AMOUNT) with 0 <= AMOUNT < 1";
  def.version = "1";
  // On the head, before any image is read: the argument's range.
  def.check = [](const stoker::entry_spec& t, stoker::chain_state& state) {
    if (!(t.args[0] >= 0 && t.args[0] < 1))
      return stoker::transform_error(t, "expected 0 <= AMOUNT < 1");
    if (state.encoded)
      return stoker::transform_error(t, "put it after decode");
    return caf::error{}; // the shape stays as it is
  };
  // On a worker, per image. The draw comes from this entry's own generator
  // (seed, epoch, sample, position), so any worker makes the same image.
  // The input may be the source's memory: write a new Mat.
  def.apply = [](const stoker::entry_spec& t, stoker::sample_input& sample,
                 const stoker::counter_rng& rng) {
    double factor = 1.0 + t.args[0] * (2.0 * rng.uniform(0) - 1.0);
    cv::Mat out;
    sample.pixels.convertTo(out, sample.pixels.type(), factor); // saturates
    sample.pixels = out;
    return caf::error{};
  };
  def.eval = [](const stoker::entry_spec&) {
    return std::vector<stoker::entry_spec>{}; // no augmentation in eval
  };
  return def;
}
