#pragma once

// stoker layer: core

#include <string>

#include <caf/atom.hpp>
#include <caf/error.hpp>

namespace stoker {

/// Error codes of Stoker's own category. Every error carries a message that
/// names the bad value and what was expected; describe() returns it.
enum class errc : uint8_t {
  invalid_config = 1, ///< a config key or value is wrong (exit code 2)
  bad_batch,          ///< a batch does not match what the run promised
  io_failure,         ///< a file could not be read or written
  trainer_failure,    ///< the training step failed
  run_failure,        ///< an actor of the run failed or exited early
  out_of_memory,      ///< a worker could not allocate a batch
  stopped,            ///< ended on purpose (a training loop closed early)
  /// A transform failed on one sample (a Python stage's exception): the
  /// message starts with the entry as written; the sample is skipped.
  transform_failure,
};

/// The atom that tags Stoker's error category in caf::error.
constexpr caf::atom_value error_category = caf::atom("stoker");

/// A Stoker error with a human-readable message.
caf::error make_error(errc code, std::string message);

/// The message of `err`: Stoker's own text for its category; CAF's errors
/// (an actor's exit reason, a system error, a parse error) in plain words,
/// never CAF's rendering (`exit_reason(...)`, `sec::...`).
std::string describe(const caf::error& err);

/// True if `err` belongs to Stoker's category and has code `code`.
bool is(const caf::error& err, errc code) noexcept;

} // namespace stoker
