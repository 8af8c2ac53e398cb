#include "transforms/transform_chain.hpp"

#include <algorithm>
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
           const python_binding& python, bool pil = false,
           bool bytes_from_floats = false) {
  python_stage_options options;
  options.ref = ref;
  options.entry = std::move(entry);
  options.pil = pil;
  options.bytes_from_floats = bytes_from_floats;
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
    out.log_ = python->log;
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
  bool pil = specs_[k].name == "python-pil";
  // Right after a fused crop without to-tensor the pixels come as the
  // pass's [0, 1] floats; the function is promised the bytes the unfused
  // chain has there (made as they cross: no pass of their own).
  bool after_fused_bytes = fused_ == k && fused_ > 0
                           && (fused_ == crop_entries_
                               || specs_[fused_ - 1].name
                                    == "horizontal-flip");
  auto pool = stage_pool(specs_[k].ref,
                         pil ? "python-pil(" + specs_[k].ref + ")"
                             : std::string{},
                         python, pil, after_fused_bytes);
  if (!pool)
    return std::move(pool.error());
  python_entry e;
  e.index = k;
  e.pool = std::move(*pool);
  e.told = std::make_shared<std::atomic<bool>>(false);
  python_.push_back(std::move(e));
  return caf::none;
}

void transform_chain::apply_python(const python_entry& entry,
                                   std::vector<chain_job>& jobs,
                                   const std::vector<size_t>& live,
                                   chain_tally* tally) const {
  size_t k = entry.index;
  // In groups of up to 8 MiB: each group is one wake-up of the process,
  // and stays in the last-level cache (a whole batch of float images
  // would pass 77 MB through memory: 6x the function's own time).
  constexpr size_t group_bytes = size_t{8} << 20;
  for (size_t b = 0; b < live.size();) {
    auto t0 = std::chrono::steady_clock::now();
    std::vector<size_t> group;
    std::vector<cv::Mat> images;
    std::vector<uint64_t> seeds;
    for (size_t bytes = 0; b < live.size() && (group.empty()
                                               || bytes < group_bytes);
         ++b) {
      auto i = live[b];
      const cv::Mat& in = jobs[i].input.pixels;
      bytes += in.total() * in.elemSize();
      auto words = rng_for(jobs[i].key, k).block(0);
      group.push_back(i);
      images.push_back(in);
      seeds.push_back(python_stage_seed(words[0], words[1]));
    }
    std::vector<std::string> tracebacks;
    auto made = entry.pool->call_many(images, seeds, &tracebacks);
    if (!made) {
      // Its process ended in the call (twice) or a sample ran past its
      // call timeout (a minute): each sample alone then, so one that kills
      // its process or hangs fails by itself, as it would alone (a hang
      // costs its timeout twice).
      std::vector<caf::expected<cv::Mat>> each;
      tracebacks.assign(group.size(), std::string{});
      for (size_t j = 0; j < group.size(); ++j)
        each.push_back(entry.pool->call(images[j], seeds[j],
                                        &tracebacks[j]));
      made = std::move(each);
    }
    for (size_t j = 0; j < group.size(); ++j) {
      auto& job = jobs[group[j]];
      auto& one = (*made)[j];
      if (!one) { // the sample fails, not the worker
        tell_first_traceback(log_, *entry.told, specs_[k].text,
                             std::move(tracebacks[j]));
        job.result = make_error(errc::transform_failure,
                                describe(one.error()));
        continue;
      }
      job.input.pixels = std::move(*one);
    }
    if (tally)
      add_stage_time(tally->stages, specs_[k].text, group.size(),
                     elapsed_ns(t0));
  }
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

caf::expected<size_t> transform_chain::apply_start(sample_input& input,
                                                   const draw_key& key,
                                                   float* chw,
                                                   chain_tally* tally) const {
  auto t0 = std::chrono::steady_clock::now();
  if (fused_ > 0) {
    bool whole = chw != nullptr && fused_ == specs_.size();
    auto fused = apply_fused(input, key, tally, whole ? chw : nullptr);
    if (!fused)
      return std::move(fused.error());
    if (*fused) {
      if (tally)
        add_stage_time(tally->stages, fused_name_, 1, elapsed_ns(t0));
      return fused_;
    }
  }
  if (tally && !specs_.empty() && defs_[0].takes_files) {
    // The whole file decoded: every pixel of it made.
    auto d0 = std::chrono::steady_clock::now();
    if (auto err = defs_[0].apply(specs_[0], input, rng_for(key, 0)))
      return err;
    tally->ns += elapsed_ns(d0);
    ++tally->files;
    tally->decoded_pixels += input.pixels.total();
    tally->file_pixels += input.pixels.total();
    add_stage_time(tally->stages, specs_[0].text, 1, elapsed_ns(t0));
    return size_t{1};
  }
  return size_t{0};
}

caf::error transform_chain::apply_entries(sample_input& input,
                                          const draw_key& key, size_t k,
                                          size_t end,
                                          chain_tally* tally) const {
  for (; k < end; ++k) {
    auto t0 = std::chrono::steady_clock::now();
    if (auto err = defs_[k].apply(specs_[k], input, rng_for(key, k)))
      return err;
    if (tally)
      add_stage_time(tally->stages, specs_[k].text, 1, elapsed_ns(t0));
  }
  return caf::none;
}

caf::expected<cv::Mat> transform_chain::apply_planes(sample_input input,
                                                     const draw_key& key,
                                                     float* chw,
                                                     chain_tally* tally) const {
  if (!python_.empty()) { // one sample, one crossing
    std::vector<chain_job> one(1);
    one[0].input = std::move(input);
    one[0].key = key;
    apply_many(one, tally);
    return std::move(one[0].result);
  }
  auto k = apply_start(input, key, chw, tally);
  if (!k)
    return std::move(k.error());
  if (*k == specs_.size() && chw != nullptr && fused_ == specs_.size())
    return cv::Mat{}; // written into `chw`
  if (auto err = apply_entries(input, key, *k, specs_.size(), tally))
    return err;
  return to_float(input.pixels);
}

void transform_chain::apply_many(std::vector<chain_job>& jobs,
                                 chain_tally* tally) const {
  if (python_.empty()) {
    for (auto& job : jobs)
      if (job.result)
        job.result = apply_planes(std::move(job.input), job.key, nullptr,
                                  tally);
    return;
  }
  // Each job's next entry; a job whose result is an error is done.
  std::vector<size_t> next(jobs.size(), 0);
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (!jobs[i].result)
      continue;
    auto k = apply_start(jobs[i].input, jobs[i].key, nullptr, tally);
    if (!k)
      jobs[i].result = std::move(k.error());
    else
      next[i] = *k;
  }
  for (size_t p = 0; p <= python_.size(); ++p) {
    // Up to the next Python entry (or the end), sample by sample.
    size_t stop = p < python_.size() ? python_[p].index : specs_.size();
    std::vector<size_t> live;
    for (size_t i = 0; i < jobs.size(); ++i) {
      if (!jobs[i].result)
        continue;
      if (auto err = apply_entries(jobs[i].input, jobs[i].key, next[i], stop,
                                   tally)) {
        jobs[i].result = std::move(err);
        continue;
      }
      next[i] = stop + 1;
      live.push_back(i);
    }
    if (p < python_.size())
      apply_python(python_[p], jobs, live, tally);
  }
  for (auto& job : jobs)
    if (job.result)
      job.result = to_float(job.input.pixels);
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
