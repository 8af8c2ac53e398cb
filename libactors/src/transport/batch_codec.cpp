#include "transport/batch_codec.hpp"

#include <stdexcept>
#include <string>

#include "kernels/half.hpp"

namespace stoker {

void encode_batch(image_batch& batch, dtype wire) {
  if (wire == dtype::float32)
    return;
  if (batch.type != dtype::float32)
    throw std::invalid_argument("encode_batch: batch "
                                + std::to_string(batch.batch_id) + " is "
                                + to_string(batch.type)
                                + ", expected float32");
  size_t n = batch.size() * batch.image_elements();
  std::vector<char> out(n * sizeof(uint16_t));
  auto in = reinterpret_cast<const float*>(batch.data.data());
  auto half = reinterpret_cast<uint16_t*>(out.data());
  if (wire == dtype::float16)
    floats_to_halves(in, half, n);
  else
    floats_to_bfloat16s(in, half, n);
  batch.data = std::move(out);
  batch.type = wire;
}

void decode_batch(image_batch& batch) {
  if (batch.type == dtype::float32)
    return;
  size_t n = batch.size() * batch.image_elements();
  std::vector<char> out(n * sizeof(float));
  auto in = reinterpret_cast<const uint16_t*>(batch.data.data());
  auto full = reinterpret_cast<float*>(out.data());
  if (batch.type == dtype::float16)
    halves_to_floats(in, full, n);
  else
    bfloat16s_to_floats(in, full, n);
  batch.data = std::move(out);
  batch.type = dtype::float32;
}

} // namespace stoker
