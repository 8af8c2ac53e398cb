#pragma once

// What a head writes down about its run so that a head started again with
// --resume continues it instead of starting another (cluster.state-dir).

#include <cstdint>
#include <string>
#include <vector>

#include <caf/error.hpp>
#include <caf/expected.hpp>

namespace stoker {

/// The head's journal: the run it is (so a head resumed with other
/// settings is refused), how far it got, and whether it ended. What was
/// trained on lives with the trainer (its ledger, its checkpoints) and
/// comes back with it: a trainer that outlived the head says hello again
/// with every batch it trained; one restarted from its checkpoint with
/// what that holds. The journal's acknowledged batch ids tell the resumed
/// head that a trainer with none trained (a fresh process, no --resume)
/// cannot continue this run. Plain data; read and written whole.
struct head_journal {
  static constexpr const char* file_name = "head.journal";

  /// The run's identity: dataset size, epochs, batch size, seed, shuffle,
  /// as "key=value" words (compared word by word on resume).
  std::string run;
  bool finished = false; ///< the run ended: nothing to resume
  uint32_t heads = 1;    ///< heads that ran it: 1 + restarts
  uint64_t acked_batches = 0; ///< acknowledged over every head
  uint64_t acked_samples = 0;
  uint64_t checkpoints = 0; ///< checkpoints the trainers reported saved
  uint64_t run_ns = 0;      ///< time the run has run, over every head
  uint64_t acked_below = 0;           ///< every batch id below: acknowledged
  std::vector<uint64_t> acked_ids;    ///< and these, ascending
};

/// The journal as text: a header line, then "key = value" lines.
std::string encode_head_journal(const head_journal& j);

/// Parses encode_head_journal's text; errors name `where` (the file), the
/// line and what was expected.
caf::expected<head_journal> decode_head_journal(const std::string& text,
                                                const std::string& where);

/// `dir`/head.journal.
std::string head_journal_path(const std::string& dir);

/// Writes the journal to `dir` atomically (creating `dir` if missing).
caf::error write_head_journal(const std::string& dir, const head_journal& j);

/// Reads `dir`'s journal; a missing or malformed file is an error naming it.
caf::expected<head_journal> read_head_journal(const std::string& dir);

/// Empty if `journaled` and `now` (head_journal::run texts) are the same
/// run, else an error naming the first setting that differs.
caf::error check_same_run(const std::string& journaled, const std::string& now,
                          const std::string& where);

} // namespace stoker
