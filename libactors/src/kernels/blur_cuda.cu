#include "kernels/blur.hpp"

#include <string>
#include <utility>

#include <cuda_runtime.h>

#include "stoker/errors.hpp"

// The blur stage on the GPU: one transpose HWC -> CHW, then per blur call a
// row pass and a column pass over every plane of the batch at once (one
// launch each, planes on the grid's z axis). Each block stages its tile
// plus the kernel's halo in shared memory, so every input element is read
// from global memory once per pass; the taps are paired (w[r-k] == w[r+k])
// to halve the multiplies. Tested against apply_blur_stage (max abs
// difference <= 1e-4), which sets the semantics.

namespace stoker {

namespace {

constexpr int tile_w = 32; // a warp along x: coalesced row loads
constexpr int tile_h = 8;
constexpr int threads = tile_w * tile_h;
// Static ceiling of dynamic shared memory without an opt-in per kernel.
constexpr size_t max_shared_bytes = 48 * 1024;

__device__ inline int reflect101_dev(int i, int size) {
  if (size == 1)
    return 0;
  while (i < 0 || i >= size)
    i = i < 0 ? -i : 2 * size - 2 - i;
  return i;
}

// dst[(n, c, px)] = src[(n, px, c)]: one thread per element.
__global__ void hwc_to_chw_kernel(const float* src, float* dst, size_t plane,
                                  int channels, size_t total) {
  size_t i = size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i >= total)
    return;
  size_t per_image = plane * static_cast<size_t>(channels);
  size_t n = i / per_image, rest = i % per_image;
  size_t c = rest / plane, px = rest % plane;
  dst[i] = src[n * per_image + px * channels + c];
}

// The taps of plane `z`'s image for blur call `call`, into shared memory.
__device__ inline const float* load_taps(float* taps, const float* weights,
                                         int channels, int repeat, int call,
                                         int ksize) {
  const float* wk = weights
                    + (size_t{blockIdx.z} / channels * repeat + call) * ksize;
  int tid = threadIdx.y * tile_w + threadIdx.x;
  for (int i = tid; i < ksize; i += threads)
    taps[i] = wk[i];
  return taps;
}

__global__ void blur_rows_kernel(const float* src, float* dst, int h, int w,
                                 int channels, const float* weights,
                                 int repeat, int call, int ksize) {
  extern __shared__ float shared[];
  int r = ksize / 2, span = tile_w + 2 * r;
  float* taps = shared;
  float* row = shared + ksize + threadIdx.y * span;
  load_taps(taps, weights, channels, repeat, call, ksize);
  size_t offset = size_t{blockIdx.z} * h * w;
  int x0 = blockIdx.x * tile_w;
  int y = blockIdx.y * tile_h + threadIdx.y;
  if (y < h)
    for (int i = threadIdx.x; i < span; i += tile_w)
      row[i] = src[offset + size_t(y) * w + reflect101_dev(x0 - r + i, w)];
  __syncthreads();
  int x = x0 + threadIdx.x;
  if (y >= h || x >= w)
    return;
  const float* at = row + threadIdx.x + r;
  float acc = taps[r] * at[0];
  for (int k = 1; k <= r; ++k)
    acc += taps[r + k] * (at[-k] + at[k]);
  dst[offset + size_t(y) * w + x] = acc;
}

__global__ void blur_cols_kernel(const float* src, float* dst, int h, int w,
                                 int channels, const float* weights,
                                 int repeat, int call, int ksize) {
  extern __shared__ float shared[];
  int r = ksize / 2, span = tile_h + 2 * r;
  float* taps = shared;
  float* block = shared + ksize; // span rows of tile_w
  load_taps(taps, weights, channels, repeat, call, ksize);
  size_t offset = size_t{blockIdx.z} * h * w;
  int x = blockIdx.x * tile_w + threadIdx.x;
  int y0 = blockIdx.y * tile_h;
  if (x < w)
    for (int j = threadIdx.y; j < span; j += tile_h)
      block[j * tile_w + threadIdx.x]
        = src[offset + size_t(reflect101_dev(y0 - r + j, h)) * w + x];
  __syncthreads();
  int y = y0 + threadIdx.y;
  if (y >= h || x >= w)
    return;
  const float* at = block + (threadIdx.y + r) * tile_w + threadIdx.x;
  float acc = taps[r] * at[0];
  for (int k = 1; k <= r; ++k)
    acc += taps[r + k] * (at[-k * tile_w] + at[k * tile_w]);
  dst[offset + size_t(y) * w + x] = acc;
}

struct device_free {
  void operator()(float* p) const noexcept { cudaFree(p); }
};
using device_ptr = std::unique_ptr<float, device_free>;

} // namespace

struct cuda_blur_stage::impl {
  int device = 0;
  std::string name;
  cudaStream_t stream = nullptr;
  device_ptr input, planes, scratch, weights;
  size_t image_capacity = 0, weight_capacity = 0; // floats
  std::vector<float> host_weights;

  ~impl() {
    if (stream)
      cudaStreamDestroy(stream);
  }
};

namespace {

caf::error cuda_failure(const std::string& context, const char* call,
                        cudaError_t status) {
  return make_error(errc::trainer_failure,
                    context + ": " + call + " failed: "
                      + cudaGetErrorName(status) + " ("
                      + cudaGetErrorString(status) + ")");
}

// Grows `buffer` to at least `floats` elements (contents not kept).
cudaError_t reserve(device_ptr& buffer, size_t& capacity, size_t floats) {
  if (floats <= capacity)
    return cudaSuccess;
  buffer.reset();
  capacity = 0;
  float* raw = nullptr;
  auto status = cudaMalloc(&raw, floats * sizeof(float));
  if (status != cudaSuccess)
    return status;
  buffer.reset(raw);
  capacity = floats;
  return cudaSuccess;
}

} // namespace

caf::expected<cuda_blur_stage> cuda_blur_stage::open(int device) {
  auto x = std::make_unique<impl>();
  x->device = device;
  std::string context = "CUDA blur on device " + std::to_string(device);
  int count = 0;
  if (auto status = cudaGetDeviceCount(&count); status != cudaSuccess)
    return cuda_failure(context, "cudaGetDeviceCount", status);
  if (device < 0 || device >= count)
    return make_error(errc::invalid_config,
                      context + ": no such device (this machine has "
                        + std::to_string(count) + ")");
  if (auto status = cudaSetDevice(device); status != cudaSuccess)
    return cuda_failure(context, "cudaSetDevice", status);
  cudaDeviceProp prop;
  if (auto status = cudaGetDeviceProperties(&prop, device);
      status != cudaSuccess)
    return cuda_failure(context, "cudaGetDeviceProperties", status);
  x->name = std::string{prop.name} + " (sm_" + std::to_string(prop.major)
            + std::to_string(prop.minor) + ")";
  if (auto status = cudaStreamCreateWithFlags(&x->stream,
                                              cudaStreamNonBlocking);
      status != cudaSuccess)
    return cuda_failure(context, "cudaStreamCreate", status);
  return cuda_blur_stage{std::move(x)};
}

cuda_blur_stage::cuda_blur_stage(std::unique_ptr<impl> x) noexcept
  : impl_(std::move(x)) {
}

cuda_blur_stage::cuda_blur_stage(cuda_blur_stage&&) noexcept = default;
cuda_blur_stage&
cuda_blur_stage::operator=(cuda_blur_stage&&) noexcept = default;
cuda_blur_stage::~cuda_blur_stage() = default;

const std::string& cuda_blur_stage::device_name() const noexcept {
  return impl_->name;
}

caf::error cuda_blur_stage::run(const blur_params& p, image_batch& batch) {
  auto context = "CUDA blur, batch " + std::to_string(batch.batch_id);
  if (batch.type != dtype::float32 || batch.order != layout::hwc)
    return make_error(errc::bad_batch, context
                                         + ": expected float32 HWC, got "
                                         + to_string(batch.type) + " "
                                         + to_string(batch.order));
  int ksize = static_cast<int>(p.kernel_size);
  int r = ksize / 2;
  size_t shared_bytes
    = sizeof(float)
      * (ksize + std::max(tile_h * (tile_w + 2 * r), (tile_h + 2 * r) * tile_w));
  if (p.kernel_size % 2 == 0 || shared_bytes > max_shared_bytes)
    return make_error(errc::invalid_config,
                      context + ": kernel size "
                        + std::to_string(p.kernel_size)
                        + ", expected an odd size whose tile and halo fit in "
                          "48 KiB of shared memory (at most 365)");
  size_t plane = size_t{batch.height} * batch.width;
  size_t planes = batch.size() * batch.channels;
  size_t total = planes * plane;
  if (total == 0) {
    batch.order = layout::chw;
    return caf::none;
  }
  if (planes > 65535)
    return make_error(errc::bad_batch,
                      context + ": " + std::to_string(planes)
                        + " planes (images x channels), expected at most "
                          "65,535 per batch");
  auto& x = *impl_;
  auto check = [&](const char* call, cudaError_t status) {
    return status == cudaSuccess ? caf::error{}
                                 : cuda_failure(context, call, status);
  };
  if (auto err = check("cudaSetDevice", cudaSetDevice(x.device)))
    return err;
  // Every image's taps for every call: the same draws as the CPU path.
  size_t weight_count = batch.size() * p.repeat * p.kernel_size;
  x.host_weights.resize(weight_count);
  for (size_t i = 0; i < batch.size(); ++i)
    blur_taps(p, batch.epoch, batch.sample_ids[i],
              x.host_weights.data() + i * p.repeat * p.kernel_size);
  if (total > x.image_capacity) { // all three at once, or none
    x.image_capacity = 0;
    size_t input_floats = 0, planes_floats = 0, scratch_floats = 0;
    if (auto err = check("cudaMalloc",
                         reserve(x.input, input_floats, total)))
      return err;
    if (auto err = check("cudaMalloc",
                         reserve(x.planes, planes_floats, total)))
      return err;
    if (auto err = check("cudaMalloc",
                         reserve(x.scratch, scratch_floats, total)))
      return err;
    x.image_capacity = total;
  }
  if (weight_count > 0)
    if (auto err = check("cudaMalloc", reserve(x.weights, x.weight_capacity,
                                               weight_count)))
      return err;
  if (auto err = check("cudaMemcpyAsync (images to the device)",
                       cudaMemcpyAsync(x.input.get(), batch.data.data(),
                                       total * sizeof(float),
                                       cudaMemcpyHostToDevice, x.stream)))
    return err;
  if (weight_count > 0)
    if (auto err = check("cudaMemcpyAsync (taps to the device)",
                         cudaMemcpyAsync(x.weights.get(),
                                         x.host_weights.data(),
                                         weight_count * sizeof(float),
                                         cudaMemcpyHostToDevice, x.stream)))
      return err;
  auto blocks = static_cast<unsigned>((total + threads - 1) / threads);
  hwc_to_chw_kernel<<<blocks, threads, 0, x.stream>>>(
    x.input.get(), x.planes.get(), plane, static_cast<int>(batch.channels),
    total);
  if (auto err = check("hwc_to_chw_kernel launch", cudaGetLastError()))
    return err;
  int h = static_cast<int>(batch.height), w = static_cast<int>(batch.width);
  dim3 block{tile_w, tile_h, 1};
  dim3 grid{static_cast<unsigned>((w + tile_w - 1) / tile_w),
            static_cast<unsigned>((h + tile_h - 1) / tile_h),
            static_cast<unsigned>(planes)};
  size_t rows_shared = sizeof(float) * (ksize + tile_h * (tile_w + 2 * r));
  size_t cols_shared = sizeof(float) * (ksize + (tile_h + 2 * r) * tile_w);
  auto channels = static_cast<int>(batch.channels);
  auto repeat = static_cast<int>(p.repeat);
  for (int call = 0; call < repeat; ++call) {
    blur_rows_kernel<<<grid, block, rows_shared, x.stream>>>(
      x.planes.get(), x.scratch.get(), h, w, channels, x.weights.get(),
      repeat, call, ksize);
    if (auto err = check("blur_rows_kernel launch", cudaGetLastError()))
      return err;
    blur_cols_kernel<<<grid, block, cols_shared, x.stream>>>(
      x.scratch.get(), x.planes.get(), h, w, channels, x.weights.get(),
      repeat, call, ksize);
    if (auto err = check("blur_cols_kernel launch", cudaGetLastError()))
      return err;
  }
  if (auto err = check("cudaMemcpyAsync (images to the host)",
                       cudaMemcpyAsync(batch.data.data(), x.planes.get(),
                                       total * sizeof(float),
                                       cudaMemcpyDeviceToHost, x.stream)))
    return err;
  // Kernel faults surface here, at the first synchronizing call.
  if (auto err = check("cudaStreamSynchronize",
                       cudaStreamSynchronize(x.stream)))
    return err;
  batch.order = layout::chw;
  return caf::none;
}

} // namespace stoker
