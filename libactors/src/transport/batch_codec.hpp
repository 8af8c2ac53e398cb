#pragma once

#include "stoker/messages.hpp"
#include "transport/buffer_pool.hpp"

namespace stoker {

/// Converts a float32 batch to `wire` (float16 or bfloat16, rounding to
/// nearest even) in place, halving its buffer; float32 leaves it as is.
/// With a `pool` the new buffer comes from it and the old one goes back.
/// Runs on the calling thread (a worker, before it sends the batch).
/// Throws std::invalid_argument if the batch is not float32.
void encode_batch(image_batch& batch, dtype wire,
                  buffer_pool* pool = nullptr);

/// Converts a batch back to float32 in place (exact from either 16-bit
/// type); a float32 batch is left as is. With a `pool` the new buffer
/// comes from it and the old one goes back. Runs on the trainer's thread.
void decode_batch(image_batch& batch, buffer_pool* pool = nullptr);

} // namespace stoker
