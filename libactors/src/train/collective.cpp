#include "train/collective.hpp"

#include <algorithm>
#include <cstring>
#include <exception>

#ifdef STOKER_HAVE_GLOO
#  include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#  include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#include <torch/torch.h>

#include "stoker/errors.hpp"

// LibTorch's c10d does the collectives: Stoker only says who meets where.
// Debian's LibTorch ships ProcessGroupGloo behind USE_C10D_GLOO (set by
// CMake with STOKER_HAVE_GLOO when the gloo headers are found).

namespace stoker {

namespace {

using clock_type = std::chrono::steady_clock;

} // namespace

// -- the group ----------------------------------------------------------------

struct collective_group::impl {
  uint32_t rank = 0;
  uint32_t world = 1;
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<c10d::ProcessGroup> group;
  std::string where; // for errors: backend, store, rank
  uint64_t wait_ns = 0;

  // Runs `issue` (which starts collectives) and waits for all of them;
  // the time goes to wait_ns.
  template <class F>
  caf::error run(const char* what, F issue) {
    auto t0 = clock_type::now();
    try {
      std::vector<c10::intrusive_ptr<c10d::Work>> works;
      issue(works);
      for (auto& w : works)
        w->wait();
    } catch (const std::exception& e) {
      return make_error(errc::trainer_failure,
                        std::string{what} + " of " + where + " failed: "
                          + e.what()
                          + " (another rank died, or did not come within "
                            "trainer.collective-timeout)");
    }
    wait_ns += static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(clock_type::now()
                                                           - t0)
        .count());
    return caf::none;
  }
};

collective_group::collective_group(std::unique_ptr<impl> x)
  : impl_(std::move(x)) {
  // nop
}

collective_group::~collective_group() = default;

caf::error check_backend(collective_backend backend) {
  if (backend == collective_backend::nccl)
    return make_error(errc::invalid_config,
                      "trainer.backend = \"nccl\": this build's LibTorch "
                      "has no NCCL process group (Debian's is CPU-only); "
                      "expected \"auto\" or \"gloo\"");
#ifndef STOKER_HAVE_GLOO
  return make_error(errc::invalid_config,
                    "trainer.backend = \"" + to_string(backend)
                      + "\": this build has no gloo (install libgloo-dev "
                        "and rebuild); a data-parallel group of several "
                        "trainers needs it");
#else
  return caf::none;
#endif
}

caf::expected<std::unique_ptr<collective_group>>
collective_group::join(const collective_options& opts) {
  if (auto err = check_backend(opts.backend))
    return err;
  auto x = std::make_unique<impl>();
  x->rank = opts.rank;
  x->world = opts.world;
  x->where = "the trainers' gloo group (rank " + std::to_string(opts.rank)
             + " of " + std::to_string(opts.world) + ", meeting at "
             + opts.store_where + ")";
  if (!opts.store)
    return make_error(errc::run_failure,
                      "cannot join " + x->where + ": no store (internal)");
#ifdef STOKER_HAVE_GLOO
  try {
    opts.store->setTimeout(opts.timeout);
    x->store = c10::make_intrusive<c10d::PrefixStore>(
      "g" + std::to_string(opts.generation) + "/", opts.store);
    auto gloo_opts = c10d::ProcessGroupGloo::Options::create(opts.timeout);
    auto wildcard = opts.interface.empty() || opts.interface == "0.0.0.0";
    gloo_opts->devices.push_back(
      wildcard ? c10d::ProcessGroupGloo::createDefaultDevice()
               : c10d::ProcessGroupGloo::createDeviceForHostname(
                 opts.interface));
    x->group = c10::make_intrusive<c10d::ProcessGroupGloo>(
      x->store, static_cast<int>(opts.rank), static_cast<int>(opts.world),
      gloo_opts);
  } catch (const std::exception& e) {
    return make_error(errc::run_failure, "cannot join " + x->where + ": "
                                           + e.what());
  }
#endif
  return std::unique_ptr<collective_group>{new collective_group(std::move(x))};
}

uint32_t collective_group::rank() const noexcept {
  return impl_->rank;
}

uint32_t collective_group::world() const noexcept {
  return impl_->world;
}

caf::error collective_group::barrier() {
  return impl_->run("the step barrier", [&](auto& works) {
    works.push_back(impl_->group->barrier());
  });
}

caf::error collective_group::all_reduce_sum(std::vector<at::Tensor>& tensors) {
  return impl_->run("the gradient all-reduce", [&](auto& works) {
    for (auto& t : tensors) {
      std::vector<at::Tensor> one{t};
      works.push_back(impl_->group->allreduce(one));
    }
  });
}

caf::error
collective_group::broadcast_from_rank0(std::vector<at::Tensor>& tensors) {
  return impl_->run("the broadcast from rank 0", [&](auto& works) {
    for (auto& t : tensors) {
      std::vector<at::Tensor> one{t};
      c10d::BroadcastOptions b;
      b.rootRank = 0;
      works.push_back(impl_->group->broadcast(one, b));
    }
  });
}

caf::expected<std::vector<std::string>>
collective_group::all_gather_bytes(const std::string& mine) {
  auto world = static_cast<size_t>(impl_->world);
  try {
    auto size = torch::tensor({static_cast<int64_t>(mine.size())},
                              torch::kInt64);
    std::vector<std::vector<at::Tensor>> sizes(1);
    for (size_t r = 0; r < world; ++r)
      sizes[0].push_back(torch::zeros({1}, torch::kInt64));
    std::vector<at::Tensor> in{size};
    if (auto err = impl_->run("gathering sizes", [&](auto& works) {
          works.push_back(impl_->group->allgather(sizes, in));
        }))
      return err;
    int64_t longest = 0;
    for (auto& t : sizes[0])
      longest = std::max(longest, t.item<int64_t>());
    auto padded = torch::zeros({std::max<int64_t>(longest, 1)}, torch::kUInt8);
    std::memcpy(padded.data_ptr(), mine.data(), mine.size());
    std::vector<std::vector<at::Tensor>> all(1);
    for (size_t r = 0; r < world; ++r)
      all[0].push_back(torch::zeros_like(padded));
    std::vector<at::Tensor> one{padded};
    if (auto err = impl_->run("gathering cursors", [&](auto& works) {
          works.push_back(impl_->group->allgather(all, one));
        }))
      return err;
    std::vector<std::string> out;
    for (size_t r = 0; r < world; ++r)
      out.emplace_back(static_cast<const char*>(all[0][r].data_ptr()),
                       static_cast<size_t>(sizes[0][r].item<int64_t>()));
    return out;
  } catch (const std::exception& e) {
    return make_error(errc::trainer_failure,
                      "gathering of " + impl_->where + " failed: " + e.what());
  }
}

caf::expected<std::string> collective_group::broadcast_bytes(
  const std::string& mine) {
  try {
    std::vector<at::Tensor> size{torch::tensor(
      {static_cast<int64_t>(mine.size())}, torch::kInt64)};
    if (auto err = broadcast_from_rank0(size))
      return err;
    auto n = size[0].item<int64_t>();
    std::vector<at::Tensor> bytes{torch::zeros({std::max<int64_t>(n, 1)},
                                               torch::kUInt8)};
    if (impl_->rank == 0)
      std::memcpy(bytes[0].data_ptr(), mine.data(), mine.size());
    if (auto err = broadcast_from_rank0(bytes))
      return err;
    return std::string(static_cast<const char*>(bytes[0].data_ptr()),
                       static_cast<size_t>(n));
  } catch (const std::exception& e) {
    return make_error(errc::trainer_failure,
                      "broadcast of " + impl_->where + " failed: " + e.what());
  }
}

uint64_t collective_group::take_wait_ns() noexcept {
  auto out = impl_->wait_ns;
  impl_->wait_ns = 0;
  return out;
}

} // namespace stoker
