#include "transforms/python_stage.hpp"

#include <algorithm>
#include <thread>

#include "stoker/errors.hpp"

// A Python stage's processes shared by a node's worker threads (the
// process itself, its protocol and its start: python_stage.cpp).

namespace stoker {

python_stage_pool::python_stage_pool(python_stage_options options,
                                     size_t max_processes)
  : options_(std::move(options)),
    max_processes_(std::max<size_t>(1, max_processes)) {
}

caf::error python_stage_pool::prime() {
  // All of them at once, each starting on a thread of its own: an
  // interpreter that imports torch takes a second or two of CPU, which
  // must not fall inside the run's steady state (a second process started
  // on the first concurrent call cost a 2-worker run a third of its rate).
  std::vector<caf::expected<std::unique_ptr<python_stage_process>>> made;
  for (size_t i = 0; i < max_processes_; ++i)
    made.emplace_back(caf::error{});
  std::vector<std::thread> starting;
  for (size_t i = 0; i < max_processes_; ++i)
    starting.emplace_back([this, &made, i] {
      made[i] = python_stage_process::start(options_);
      // One that died starting (killed, out of memory) is started again
      // once; an import that fails (invalid_config) would fail again.
      if (!made[i] && is(made[i].error(), errc::io_failure))
        made[i] = python_stage_process::start(options_);
    });
  for (auto& t : starting)
    t.join();
  std::lock_guard<std::mutex> guard{mutex_};
  for (auto& m : made) {
    if (!m)
      return std::move(m.error()); // the others end with `made`
    ++running_;
    ++started_;
    idle_.push_back(std::move(*m));
  }
  return caf::none;
}

uint64_t python_stage_pool::started() const {
  std::lock_guard<std::mutex> guard{mutex_};
  return started_;
}

template <class Call>
auto python_stage_pool::on_a_process(Call&& call)
  -> decltype(call(std::declval<python_stage_process&>())) {
  caf::error last;
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::unique_ptr<python_stage_process> process;
    {
      std::unique_lock<std::mutex> lock{mutex_};
      auto deadline = std::chrono::steady_clock::now()
                      + options_.call_timeout + options_.import_timeout;
      while (idle_.empty() && running_ >= max_processes_)
        if (idle_cv_.wait_until(lock, deadline) == std::cv_status::timeout)
          return make_error(errc::io_failure,
                            options_.entry_text() + ": no process of "
                              + "the stage was free within "
                              + std::to_string(std::chrono::duration_cast<
                                                 std::chrono::seconds>(
                                                 options_.call_timeout
                                                 + options_.import_timeout)
                                                 .count())
                              + " s");
      if (!idle_.empty()) {
        process = std::move(idle_.back());
        idle_.pop_back();
      } else {
        ++running_;
        ++started_;
      }
    }
    if (!process) {
      auto made = python_stage_process::start(options_);
      if (!made) {
        std::lock_guard<std::mutex> guard{mutex_};
        --running_;
        idle_cv_.notify_one();
        return std::move(made.error());
      }
      process = std::move(*made);
    }
    auto out = call(*process);
    bool alive = process->alive();
    bool timed_out = process->timed_out();
    if (!alive)
      process.reset(); // reaped (or killed) outside the lock
    {
      std::lock_guard<std::mutex> guard{mutex_};
      if (alive)
        idle_.push_back(std::move(process));
      else
        --running_;
    }
    idle_cv_.notify_one();
    if (out || alive || timed_out) // a slow function is not tried again
      return out;
    last = std::move(out.error()); // died in the call: once more, afresh
  }
  return last;
}

caf::expected<cv::Mat> python_stage_pool::call(const cv::Mat& image,
                                               uint64_t seed,
                                               std::string* traceback) {
  return on_a_process([&](python_stage_process& process) {
    return process.call(image, seed, traceback);
  });
}

caf::expected<std::vector<caf::expected<cv::Mat>>>
python_stage_pool::call_many(const std::vector<cv::Mat>& images,
                             const std::vector<uint64_t>& seeds,
                             std::vector<std::string>* tracebacks) {
  return on_a_process([&](python_stage_process& process) {
    return process.call_many(images, seeds, tracebacks);
  });
}

caf::expected<std::vector<float>>
python_stage_pool::call_batch(const batch_view& batch, uint64_t seed,
                              std::string* traceback) {
  // The memory is overwritten only from the reply (after the exchange),
  // so a process that dies mid-call leaves `batch` as it was.
  return on_a_process([&](python_stage_process& process) {
    return process.call_batch(batch, seed, traceback);
  });
}

} // namespace stoker
