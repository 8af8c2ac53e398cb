#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <caf/error.hpp>
#include <caf/expected.hpp>

namespace stoker {

/// Which run a checkpoint belongs to: a resumed run must be the same run.
struct run_identity {
  uint64_t dataset_size = 0;
  uint32_t epochs = 0;
  uint32_t batch_size = 0;
  uint64_t seed = 0;
  bool shuffle = true;
};

/// What a trainer saves every trainer.checkpoint-every steps: enough to go
/// on as if it had never stopped. The data cursor is the set of batch ids
/// trained on (all below `done_below`, plus `done_ids`) and the delivery
/// ledger's bits; the model and optimizer are opaque blobs of the engine
/// (empty for the simulated accelerator).
struct checkpoint {
  run_identity run;
  uint64_t step = 0;
  uint64_t done_below = 0;
  std::vector<uint64_t> done_ids;
  std::vector<uint8_t> ledger_bits; ///< epochs x dataset_size bits, packed
  uint64_t delivered = 0;           ///< the ledger's counters
  uint64_t duplicates = 0;
  std::string engine_state;
  /// A data-parallel group's: the rank's place in its sequence of batches
  /// (the next slot.seq it runs).
  uint64_t next_seq = 0;
  /// A data-parallel group's checkpoint (rank 0 writes it): every rank's
  /// cursor, by rank, each encode_checkpoint() of a checkpoint without
  /// engine state. Empty for one trainer.
  std::vector<std::string> ranks;
};

/// The bytes of `ckpt` (the file's format, also what a group sends).
std::string encode_checkpoint(const checkpoint& ckpt);

/// Reads what encode_checkpoint() gave; `where` names it in errors.
caf::expected<checkpoint> decode_checkpoint(const std::string& bytes,
                                            const std::string& where);

/// The file a checkpoint lives in, inside `dir`.
std::string checkpoint_path(const std::string& dir);

/// Writes `ckpt` to `dir` atomically: a temp file, fsync, rename, fsync of
/// the directory. A crash at any point leaves the previous checkpoint or
/// the new one, never a torn file. Errors (errc::io_failure) name the path.
caf::error write_checkpoint(const checkpoint& ckpt, const std::string& dir);

/// Reads the checkpoint in `dir`. Errors name the path and what is wrong:
/// none there, not a Stoker checkpoint, another format version, truncated.
caf::expected<checkpoint> read_checkpoint(const std::string& dir);

/// Whether a checkpoint of `saved` may resume a run of `now`; the error
/// (errc::invalid_config) names the first setting that differs.
caf::error check_resumable(const run_identity& saved, const run_identity& now);

/// The size of the group that saved `ckpt`: its ranks' cursors, or 1 for a
/// lone trainer's file.
uint32_t checkpoint_world(const checkpoint& ckpt) noexcept;

/// Whether a checkpoint saved by a group of `saved` trainers (`where`
/// names it) may resume a group of `world`. A group's file holds each
/// rank's cursor, and each rank trained its own batches of an epoch plan
/// that depends on the group's size: any other size would train a rank's
/// batches again, or never. The error (errc::invalid_config) names both
/// sizes and the key that sets them.
caf::error check_resume_world(uint32_t saved, uint32_t world,
                              const std::string& where);

} // namespace stoker
