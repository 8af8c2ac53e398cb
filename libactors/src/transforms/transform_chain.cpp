#include "transforms/transform_chain.hpp"

#include <atomic>
#include <chrono>
#include <cmath>
#include <exception>
#include <string_view>

#include "stoker/errors.hpp"
#include "kernels/jpeg_region.hpp"
#include "kernels/region_resample.hpp"
#include "transforms/python_stage.hpp"

namespace stoker {

namespace {

uint64_t elapsed_ns(std::chrono::steady_clock::time_point since) {
  return static_cast<uint64_t>(
    std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::steady_clock::now() - since)
      .count());
}

// A Python entry's processes, started (primed) now: its import's error
// before any sample.
caf::expected<std::shared_ptr<python_stage_pool>>
stage_pool(const std::string& ref, std::string entry,
           const python_binding& python) {
  python_stage_options options;
  options.ref = ref;
  options.entry = std::move(entry);
  options.executable = python.spec.executable;
  options.path = python.spec.path;
  auto pool = std::make_shared<python_stage_pool>(std::move(options),
                                                  python.processes);
  if (auto err = pool->prime())
    return err;
  return pool;
}

// A Python entry's failed call: the first exception's whole traceback goes
// to the log, once per entry (`told`); each is counted in the report.
void tell_first_traceback(const std::shared_ptr<const log_sink>& log,
                          std::atomic<bool>& told, const std::string& entry,
                          std::string traceback) {
  while (!traceback.empty() && traceback.back() == '\n')
    traceback.pop_back();
  if (log && !traceback.empty() && !told.exchange(true))
    log->say(log_level::warning,
             entry + ": the first exception's traceback (later ones are "
                     "counted in the report, not logged):\n"
               + traceback);
}

counter_rng rng_for(const draw_key& key, size_t entry) {
  return counter_rng{{key.seed, key.epoch, key.sample,
                      static_cast<rng_stage>(
                        static_cast<uint32_t>(rng_stage::transforms)
                        + static_cast<uint32_t>(entry))}};
}

} // namespace

caf::expected<image_shape> check_chain(const std::vector<transform_spec>& chain,
                                       image_shape input, bool files,
                                       const registry& reg) {
  chain_state st;
  st.shape = input;
  st.files = st.encoded = files;
  for (auto& t : chain) {
    if (auto err = reg.check_transform(t, "pipeline.transforms"))
      return err;
    auto& def = *reg.transform(t.name);
    if (def.per_batch && &t != &chain.back())
      return transform_error(t, "runs on the whole batch once its samples "
                                "are made: expected it last in "
                                "pipeline.transforms");
    if (st.encoded && !def.takes_files)
      return transform_error(t, "the source gives image files; expected "
                                "\"decode\" as the first transform");
    if (def.check) {
      caf::error err;
      try {
        err = def.check(t, st);
      } catch (const std::exception& e) {
        err = transform_error(t, std::string{"its check threw: "} + e.what());
      }
      if (err)
        return err;
    }
  }
  if (st.encoded)
    return make_error(errc::invalid_config,
                      "pipeline.transforms: the source gives image files; "
                      "expected \"decode\" first");
  if (st.shape.height == 0 || st.shape.width == 0)
    return make_error(errc::invalid_config,
                      "pipeline.transforms: the images' size varies; expected "
                      "a resize(HEIGHT, WIDTH), center-crop, random-crop or "
                      "random-resized-crop that fixes it");
  return st.shape;
}

std::vector<transform_spec>
eval_chain_of(const std::vector<transform_spec>& train, const registry& reg) {
  std::vector<transform_spec> out;
  for (auto& t : train) {
    auto def = reg.transform(t.name);
    if (def == nullptr || !def->eval) {
      out.push_back(t);
      continue;
    }
    for (auto& e : def->eval(t))
      out.push_back(std::move(e));
  }
  return out;
}

namespace {

constexpr const char* failure_prefix = "transform ";

} // namespace

std::string transform_failure_source(const std::string& message) {
  auto close = message.find(')');
  auto space = message.find(' ');
  auto end = close != std::string::npos && close < space ? close + 1 : space;
  return failure_prefix + message.substr(0, end);
}

bool is_transform_failure_source(const std::string& source) noexcept {
  return source.rfind(failure_prefix, 0) == 0;
}

std::string failed_transform_of(const std::string& source) {
  return is_transform_failure_source(source)
           ? source.substr(std::string_view{failure_prefix}.size())
           : source;
}

caf::expected<transform_chain>
transform_chain::bind(const std::vector<transform_spec>& chain,
                      const registry& reg, bool decode_region,
                      const python_binding* python) {
  transform_chain out;
  for (auto& t : chain) {
    if (auto err = reg.check_transform(t, "pipeline.transforms"))
      return err;
    if (reg.transform(t.name)->per_batch) { // last (check_chain)
      out.batch_entry_ = t;
      out.batch_index_ = out.specs_.size();
      continue;
    }
    out.specs_.push_back(t);
    out.defs_.push_back(*reg.transform(t.name));
  }
  auto named = [&](size_t k, const char* name) {
    return k < chain.size() && chain[k].name == name;
  };
  if (decode_region && named(0, "decode")) {
    if (named(1, "random-resized-crop"))
      out.crop_entries_ = 2;
    else if (named(1, "resize") && chain[1].args.size() == 1
             && named(2, "center-crop"))
      out.crop_entries_ = 3;
  }
  if (out.crop_entries_ > 0) {
    // The resampling pass writes float pixels: a flip, ToTensor and
    // Normalize right after the crop are done in it too.
    size_t k = out.crop_entries_;
    if (named(k, "horizontal-flip"))
      out.flip_entry_ = k++;
    if (named(k, "to-tensor")) {
      ++k;
      if (named(k, "normalize"))
        out.normalize_entry_ = k++;
    }
    out.fused_ = k;
    for (size_t e = 0; e < k; ++e)
      out.fused_name_ += (e ? " + " : "") + chain[e].text;
  }
  if (python) {
    for (size_t k = 0; k < out.specs_.size(); ++k)
      if (out.defs_[k].takes_ref)
        if (auto err = out.bind_python(k, *python))
          return err;
    if (out.has_batch_entry()) {
      auto pool = stage_pool(out.batch_entry_.ref,
                             "python-batch(" + out.batch_entry_.ref + ")",
                             *python);
      if (!pool)
        return std::move(pool.error());
      out.batch_pool_ = std::move(*pool);
      out.batch_told_ = std::make_shared<std::atomic<bool>>(false);
      out.log_ = python->log;
    }
  }
  return out;
}

caf::error transform_chain::apply_batch(image_batch& batch, uint64_t seed,
                                        uint32_t classes,
                                        chain_tally* tally) const {
  if (!has_batch_entry() || batch.size() == 0)
    return caf::none;
  if (!batch_pool_)
    return make_error(errc::transform_failure,
                      batch_entry_.text + " runs only in a chain bound with "
                                          "a node's python settings (a "
                                          "worker's)");
  auto t0 = std::chrono::steady_clock::now();
  auto words = rng_for(draw_key{seed, batch.epoch, batch.sample_ids.front()},
                       batch_index_)
                 .block(0);
  batch_view view{batch.image(0), batch.labels.data(), batch.size(),
                  batch.channels, batch.height, batch.width, classes};
  std::string traceback;
  auto soft = batch_pool_->call_batch(
    view, python_stage_seed(words[0], words[1]), &traceback);
  if (!soft) {
    tell_first_traceback(log_, *batch_told_, batch_entry_.text,
                         std::move(traceback));
    return make_error(errc::transform_failure, describe(soft.error()));
  }
  batch.label_classes = soft->empty() ? 0 : classes;
  batch.soft_labels = std::move(*soft);
  batch.checksums.clear();
  if (tally)
    add_stage_time(tally->stages, batch_entry_.text, batch.size(),
                   elapsed_ns(t0));
  return caf::none;
}

caf::error transform_chain::bind_python(size_t k,
                                        const python_binding& python) {
  auto primed = stage_pool(specs_[k].ref, {}, python);
  if (!primed)
    return std::move(primed.error());
  auto pool = std::move(*primed);
  // Right after a fused crop without to-tensor the pixels come as the
  // pass's [0, 1] floats; the function is promised the bytes the unfused
  // chain has there.
  bool after_fused_bytes = fused_ == k && fused_ > 0
                           && (fused_ == crop_entries_
                               || specs_[fused_ - 1].name
                                    == "horizontal-flip");
  // The first exception's whole traceback, once (each is counted).
  auto told = std::make_shared<std::atomic<bool>>(false);
  defs_[k].apply = [pool, after_fused_bytes, told, log = python.log,
                    entry = specs_[k].text](const entry_spec&,
                                            sample_input& s,
                                            const counter_rng& rng) {
    cv::Mat in = s.pixels;
    if (after_fused_bytes && in.depth() == CV_32F)
      in.convertTo(in, CV_8U, 255.0);
    auto words = rng.block(0);
    std::string traceback;
    auto made = pool->call(in, python_stage_seed(words[0], words[1]),
                           &traceback);
    if (!made) { // the sample fails, not the worker
      tell_first_traceback(log, *told, entry, std::move(traceback));
      return make_error(errc::transform_failure, describe(made.error()));
    }
    s.pixels = std::move(*made);
    return caf::error{};
  };
  return caf::none;
}

caf::expected<bool> transform_chain::apply_fused(sample_input& input,
                                                 const draw_key& key,
                                                 chain_tally* tally,
                                                 float* chw) const {
  if (input.encoded.empty())
    return false;
  auto h = read_jpeg_header(input.encoded);
  if (!h || !region_decodable(*h))
    return false; // OpenCV's decoder: PNG, CMYK, EXIF-turned files
  bool gray = !specs_[0].args.empty() && specs_[0].args[0] == 1;
  auto& a = specs_[1].args;
  cv::Rect2d box;
  int out_w = 0;
  int out_h = 0;
  if (crop_entries_ == 2) {
    // random-resized-crop's box, drawn from its own generator as unfused.
    box = random_resized_box(h->height, h->width, a.size() > 1 ? a[1] : 0.08,
                             a.size() > 2 ? a[2] : 1.0,
                             a.size() > 3 ? a[3] : 3.0 / 4.0,
                             a.size() > 4 ? a[4] : 4.0 / 3.0, rng_for(key, 1));
    out_w = out_h = static_cast<int>(a[0]);
  } else {
    // resize(S) (the shorter side becomes S, the other rounded down) then
    // center-crop: the crop's box in the file's pixels.
    auto s = static_cast<double>(a[0]);
    double rh, rw;
    if (h->height <= h->width) {
      rh = s;
      rw = std::floor(s * h->width / h->height);
    } else {
      rw = s;
      rh = std::floor(s * h->height / h->width);
    }
    auto& c = specs_[2].args;
    out_h = static_cast<int>(c[0]);
    out_w = static_cast<int>(c.size() == 2 ? c[1] : c[0]);
    if (rh < out_h || rw < out_w)
      return false; // center-crop pads: the entries one by one
    auto top = static_cast<double>(python_round((rh - out_h) / 2.0));
    auto left = static_cast<double>(python_round((rw - out_w) / 2.0));
    double sx = h->width / rw;
    double sy = h->height / rh;
    box = cv::Rect2d{left * sx, top * sy, out_w * sx, out_h * sy};
  }
  pixel_finish finish;
  if (flip_entry_ > 0) { // horizontal_flip's draw, from its own generator
    auto& f = specs_[flip_entry_].args;
    finish.flip = rng_for(key, flip_entry_).uniform(0) < (f.empty() ? 0.5
                                                                    : f[0]);
  }
  if (normalize_entry_ > 0) {
    auto& n = specs_[normalize_entry_].args;
    auto half = n.size() / 2;
    finish.mean.assign(n.begin(), n.begin() + static_cast<long>(half));
    finish.stddev.assign(n.begin() + static_cast<long>(half), n.end());
  }
  auto t0 = std::chrono::steady_clock::now();
  // resize then center-crop: the crop's edge pixels mix in the image
  // beyond it, as torchvision's Resize of the whole image does.
  auto region = decode_jpeg_region(input.encoded, box, out_w, out_h, gray,
                                   crop_entries_ != 2);
  if (!region)
    return std::move(region.error());
  if (tally) {
    tally->ns += elapsed_ns(t0);
    ++tally->files;
    tally->decoded_pixels += region->pixels.total();
    tally->file_pixels += static_cast<uint64_t>(h->width)
                          * static_cast<uint64_t>(h->height);
  }
  if (chw) // the whole chain: into the caller's planes
    resample_region_planes(*region, out_w, out_h, finish, chw);
  else
    input.pixels = resample_region(*region, out_w, out_h, finish);
  input.encoded = {};
  return true;
}

caf::expected<cv::Mat> transform_chain::apply(sample_input input,
                                              const draw_key& key,
                                              chain_tally* tally) const {
  return apply_planes(std::move(input), key, nullptr, tally);
}

caf::expected<cv::Mat> transform_chain::apply_planes(sample_input input,
                                                     const draw_key& key,
                                                     float* chw,
                                                     chain_tally* tally) const {
  size_t k = 0;
  auto t0 = std::chrono::steady_clock::now();
  // The stage that ended now: its time since the last one's end.
  auto stage_done = [&](const std::string& name) {
    auto t1 = std::chrono::steady_clock::now();
    add_stage_time(tally->stages, name, 1,
                   static_cast<uint64_t>(
                     std::chrono::duration_cast<std::chrono::nanoseconds>(
                       t1 - t0)
                       .count()));
    t0 = t1;
  };
  if (fused_ > 0) {
    bool whole = chw != nullptr && fused_ == specs_.size();
    auto fused = apply_fused(input, key, tally, whole ? chw : nullptr);
    if (!fused)
      return std::move(fused.error());
    if (*fused && tally)
      stage_done(fused_name_);
    if (*fused && whole)
      return cv::Mat{}; // written into `chw`
    if (*fused)
      k = fused_;
  }
  if (k == 0 && tally && !specs_.empty() && defs_[0].takes_files) {
    // The whole file decoded: every pixel of it made.
    auto d0 = std::chrono::steady_clock::now();
    if (auto err = defs_[0].apply(specs_[0], input, rng_for(key, 0)))
      return err;
    tally->ns += elapsed_ns(d0);
    ++tally->files;
    tally->decoded_pixels += input.pixels.total();
    tally->file_pixels += input.pixels.total();
    stage_done(specs_[0].text);
    k = 1;
  }
  for (; k < specs_.size(); ++k) {
    if (auto err = defs_[k].apply(specs_[k], input, rng_for(key, k)))
      return err;
    if (tally)
      stage_done(specs_[k].text);
  }
  return to_float(input.pixels);
}

caf::expected<cv::Mat> apply_chain(const std::vector<transform_spec>& chain,
                                   sample_input input, const draw_key& key,
                                   const registry& reg, bool decode_region) {
  auto bound = transform_chain::bind(chain, reg, decode_region);
  if (!bound)
    return std::move(bound.error());
  return bound->apply(std::move(input), key);
}

} // namespace stoker
