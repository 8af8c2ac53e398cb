#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <caf/error.hpp>
#include <caf/expected.hpp>

#include "stoker/messages.hpp"

namespace stoker {

/// The wire format of the direct worker->trainer batch stream (see
/// batch_channel.hpp). A frame is
///
///     prefix (20 bytes) | header (header_bytes) | data (data_bytes)
///
/// prefix: magic "STKB", protocol version (u16), reserved (u16), header_bytes
/// (u32), data_bytes (u64); header: every field of image_batch except
/// `data`; data: the image buffer as is. Integers are little-endian. The
/// image bytes are never copied into a frame: the sender writes them
/// straight from the batch, the receiver reads them straight into one.
struct frame_prefix {
  uint32_t header_bytes = 0;
  uint64_t data_bytes = 0;
};

constexpr uint32_t frame_magic = 0x424b5453; // "STKB" in memory order
/// 3: the batch's slot (rank, seq); 4: the skipped samples' sources; 5:
/// soft labels (a per-batch stage's).
constexpr uint16_t frame_version = 5;
constexpr size_t frame_prefix_bytes = 20;
/// No header is this big: 64 Ki samples with three 8-byte fields each, or
/// a batch of 4 Ki with soft labels over 1,000 classes.
constexpr uint32_t max_frame_header_bytes = 32u << 20;

/// Writes the prefix and header of `batch` into `out` (replacing its
/// contents); the frame's data is `batch.data`.
void encode_frame_head(const image_batch& batch, std::vector<char>& out);

/// Parses a prefix. Errors (errc::bad_batch) name what is wrong: a magic
/// that is not Stoker's (another protocol on the port), another protocol
/// version, a header over max_frame_header_bytes or data over
/// `max_data_bytes`.
caf::expected<frame_prefix> parse_frame_prefix(const char* bytes,
                                               uint64_t max_data_bytes);

/// Reads a header into `batch` (all fields but `data`) and checks that
/// `data_bytes` is what its shape and dtype take. Never reads past
/// `header + header_bytes`, whatever the bytes say.
caf::error decode_frame_header(const char* header, uint32_t header_bytes,
                               uint64_t data_bytes, image_batch& batch);

} // namespace stoker
