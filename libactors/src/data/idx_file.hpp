#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <caf/expected.hpp>

namespace stoker {

/// An IDX array of unsigned bytes (the MNIST / Fashion-MNIST format): its
/// dimensions (N, then rows and columns for images) and its elements in
/// row-major order.
struct idx_array {
  std::vector<uint32_t> dims;
  std::vector<uint8_t> data;

  /// Elements per item: the product of every dimension after the first.
  size_t item_size() const noexcept;
};

/// Reads an IDX file of unsigned bytes with `rank` dimensions (3 for
/// images, 1 for labels), gzip-compressed (".gz", detected by content) or
/// plain. Checks the magic number (0x0000 0x08 rank), that no dimension is
/// 0 or absurd, and that the data has exactly the size the header promises.
/// Errors (errc::invalid_config) name the file and what was wrong. Any
/// thread.
caf::expected<idx_array> read_idx(const std::string& path, uint32_t rank);

/// Only the header's dimensions (decompresses a few bytes): what the head
/// needs to plan a run without loading the data.
caf::expected<std::vector<uint32_t>> read_idx_dims(const std::string& path,
                                                   uint32_t rank);

} // namespace stoker
