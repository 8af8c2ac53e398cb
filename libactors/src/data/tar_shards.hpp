#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include <caf/expected.hpp>

namespace stoker {

/// The shard files `data` names, in order: a directory (its `*.tar` files,
/// sorted by name), one `.tar` file, or a brace pattern as WebDataset
/// writes them (`train-{000000..000146}.tar`: a zero-padded range, or
/// `{a,b,c}`; several braces multiply). Errors (errc::invalid_config) name
/// `data` and the first shard that is missing or not a regular file.
caf::expected<std::vector<std::string>>
expand_shards(const std::string& data);

namespace detail {

/// The error of shards `data` (errc::invalid_config): "shards "DATA": WHAT".
caf::error shards_error(const std::string& data, const std::string& what);

/// Whether `s` is a whole number of 1 to 18 decimal digits.
bool all_digits(const std::string& s);

} // namespace detail

/// One sample of a WebDataset shard: the members sharing a key (the
/// member name up to the first dot of its last path component), read
/// as WebDataset groups them: consecutive members with the same key.
struct tar_sample {
  uint32_t shard = 0;  ///< index into shard_listing::shards
  uint64_t offset = 0; ///< of the image member's bytes in the shard file
  uint64_t size = 0;   ///< of the image member
  int64_t label = -1;  ///< from KEY.cls (text) or KEY.json ("label"/"cls")
  std::string member;  ///< the image member's name (KEY.jpg), or the key
};

/// What list_tar_shards found: every sample of every shard, in shard order
/// and member order within a shard. A group that cannot be a training
/// sample (no image member, no label, a member cut off by the end of a
/// truncated shard) is still a sample, with `problems` saying why: reading
/// it fails, naming the shard and the member, so the worker skips it and
/// the report counts it each epoch, as it does a corrupt file in an image
/// folder. A header that fails its checksum is skipped with the blocks up
/// to the next header that holds (as GNU tar does); those bytes become one
/// such sample, named by their range, and the members after them are read.
struct shard_listing {
  std::vector<std::string> shards;   ///< paths, in order
  std::vector<uint64_t> counts;      ///< samples per shard
  std::vector<tar_sample> samples;   ///< in shard order
  std::unordered_map<uint64_t, std::string> problems; ///< by sample index
  /// Damage to the shards themselves, a line each naming the shard: byte
  /// ranges that could not be read, a shard that ends early (where, and
  /// how many samples were indexed before the cut). For the log and the
  /// report: what a shard lost cannot be counted in samples.
  std::vector<std::string> damage;
  uint32_t num_classes = 0;          ///< the largest label + 1
  std::string fingerprint;           ///< of the shards' names, sizes, keys
};

/// Lists the shards of `data` (expand_shards) and indexes each by reading
/// its tar headers (ustar, GNU long names, pax `path` and `size` records)
/// and its label members; image bytes stay unread. `limit` > 0 keeps the
/// first `limit` samples in shard order (the shards are shuffled when
/// written: tools/data/make-shards), so a limited run reads fewer shards.
/// Errors (errc::invalid_config) name `data`, the shard and what was
/// expected: no shard, a shard that cannot be read, no sample in any.
caf::expected<shard_listing> list_tar_shards(const std::string& data,
                                             uint64_t limit);

/// The bytes of sample `index`'s image member, read with pread from its
/// shard; any thread. Errors (errc::io_failure) name the shard and the
/// member: the sample's problem, or a read that came up short.
caf::expected<std::vector<char>> read_tar_sample(const shard_listing& listing,
                                                 uint64_t index);

/// "SHARD:MEMBER" for messages and the report.
std::string tar_sample_name(const shard_listing& listing, uint64_t index);

} // namespace stoker
