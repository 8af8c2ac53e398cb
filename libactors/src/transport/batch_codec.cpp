#include "transport/batch_codec.hpp"

#include <stdexcept>
#include <string>

#include "kernels/half.hpp"

namespace stoker {

namespace {

// A buffer of `bytes` from `pool`, or a fresh one.
std::vector<char> new_buffer(size_t bytes, buffer_pool* pool) {
  return pool != nullptr ? pool->acquire(bytes) : std::vector<char>(bytes);
}

// The batch's old buffer, back to `pool` if there is one.
void give_back(std::vector<char>&& old, buffer_pool* pool) {
  if (pool != nullptr)
    pool->release(std::move(old));
}

} // namespace

void encode_batch(image_batch& batch, dtype wire, buffer_pool* pool) {
  if (wire == dtype::float32)
    return;
  if (batch.type != dtype::float32)
    throw std::invalid_argument("encode_batch: batch "
                                + std::to_string(batch.batch_id) + " is "
                                + to_string(batch.type)
                                + ", expected float32");
  size_t n = batch.size() * batch.image_elements();
  auto out = new_buffer(n * sizeof(uint16_t), pool);
  auto in = reinterpret_cast<const float*>(batch.data.data());
  auto half = reinterpret_cast<uint16_t*>(out.data());
  if (wire == dtype::float16)
    floats_to_halves(in, half, n);
  else
    floats_to_bfloat16s(in, half, n);
  std::swap(batch.data, out);
  give_back(std::move(out), pool);
  batch.type = wire;
  batch.checksums.clear(); // of the float32 data: stamped again after this
}

void decode_batch(image_batch& batch, buffer_pool* pool) {
  if (batch.type == dtype::float32)
    return;
  size_t n = batch.size() * batch.image_elements();
  auto out = new_buffer(n * sizeof(float), pool);
  auto in = reinterpret_cast<const uint16_t*>(batch.data.data());
  auto full = reinterpret_cast<float*>(out.data());
  if (batch.type == dtype::float16)
    halves_to_floats(in, full, n);
  else
    bfloat16s_to_floats(in, full, n);
  std::swap(batch.data, out);
  give_back(std::move(out), pool);
  batch.type = dtype::float32;
}

} // namespace stoker
