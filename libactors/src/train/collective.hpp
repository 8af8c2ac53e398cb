#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <caf/error.hpp>
#include <caf/expected.hpp>

#include "stoker/options.hpp"

namespace stoker {

/// Where a rank meets the others and how long it waits for them.
struct collective_options {
  uint32_t rank = 0;
  uint32_t world = 1;
  /// The group's rendezvous store (make_actor_store over the head's store
  /// actor; a test may use c10d's HashStore). Shared by every forming.
  c10::intrusive_ptr<c10d::Store> store;
  /// Where the store is, for messages ("the head's store").
  std::string store_where = "the group's store";
  /// The address this rank's collective traffic uses (its cluster.bind;
  /// "0.0.0.0" or empty: the interface its host name resolves to).
  std::string interface = "127.0.0.1";
  collective_backend backend = collective_backend::automatic;
  /// Which forming of the group this is: a group formed again after a
  /// lost rank meets under its own key prefix on the same store.
  uint32_t generation = 0;
  /// Joining, and each collective: a rank that does not come within it
  /// fails the others' call instead of hanging them.
  std::chrono::milliseconds timeout{60000};
};

/// One rank's membership of a data-parallel group: LibTorch's own c10d
/// process group (ProcessGroupGloo over CPU tensors; NCCL only where the
/// LibTorch in use has it). Calls block the calling thread (the trainer's
/// own) until every rank made the same call, or fail after the timeout.
/// Every rank must make the same calls in the same order. Not
/// thread-safe: owned by one trainer's step engine.
class collective_group {
public:
  /// Joins the group (blocks until all `world` ranks joined, up to the
  /// timeout). Errors name the backend, the store's address and the rank.
  static caf::expected<std::unique_ptr<collective_group>>
  join(const collective_options& opts);

  ~collective_group();

  uint32_t rank() const noexcept;
  uint32_t world() const noexcept;

  /// Waits until every rank reached its barrier.
  caf::error barrier();

  /// Sums each tensor over the ranks, in place: all calls are issued
  /// first, then waited for (they overlap on the backend's threads).
  /// Tensors are dense and contiguous; each is one collective call.
  caf::error all_reduce_sum(std::vector<at::Tensor>& tensors);

  /// Overwrites each tensor with rank 0's, in place.
  caf::error broadcast_from_rank0(std::vector<at::Tensor>& tensors);

  /// Every rank's `mine`, by rank.
  caf::expected<std::vector<std::string>>
  all_gather_bytes(const std::string& mine);

  /// Rank 0's `mine` on every rank.
  caf::expected<std::string> broadcast_bytes(const std::string& mine);

  /// Time spent in this group's calls since the last take (then reset).
  uint64_t take_wait_ns() noexcept;

private:
  struct impl;
  explicit collective_group(std::unique_ptr<impl> x);
  std::unique_ptr<impl> impl_;
};

/// Whether this build can make a group with `backend` (auto: gloo).
caf::error check_backend(collective_backend backend);

} // namespace stoker
