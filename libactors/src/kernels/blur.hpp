#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <caf/error.hpp>
#include <caf/expected.hpp>
#include <caf/meta/type_name.hpp>

#include "stoker/messages.hpp"
#include "stoker/options.hpp"

namespace stoker {

/// Whether this CPU (and OS) runs `isa`; automatic and scalar always.
bool cpu_supports(cpu_isa isa) noexcept;

/// The widest ISA this CPU runs: avx512, avx2 or scalar.
cpu_isa best_cpu_isa() noexcept;

/// What `p` runs as on this CPU: neither field automatic. Fails
/// (errc::invalid_config) for an ISA this CPU lacks, naming it and what
/// the CPU has, or for the opencv implementation with an ISA set.
struct blur_choice {
  blur_impl impl = blur_impl::opencv;
  cpu_isa isa = cpu_isa::scalar; ///< meaningful for stoker only
};
caf::expected<blur_choice> resolve_blur(const blur_params& p);

/// The normalized 1-D kernel exp(-x^2 / (2 sigma^2)), x = -r..r, r =
/// kernel_size / 2, summing to 1 (computed in double, stored as float).
std::vector<float> gaussian_kernel(float sigma, uint32_t kernel_size);

/// Sigma of blur call `call` (0-based) on sample `sample` in `epoch`: a pure
/// function of (seed, epoch, sample, call), so any worker draws the same.
float blur_sigma(const blur_params& p, uint64_t epoch, uint64_t sample,
                 uint32_t call) noexcept;

/// The taps of every blur call on one sample, call after call: `p.repeat`
/// kernels of `p.kernel_size` floats written to `out`, each
/// gaussian_kernel(blur_sigma(p, epoch, sample, call)). What the chain and
/// the CUDA stage take.
void blur_taps(const blur_params& p, uint64_t epoch, uint64_t sample,
               float* out);

/// The inverse: `src` CHW back to `dst` HWC. No overlap.
void chw_to_hwc(const float* src, float* dst, uint32_t height, uint32_t width,
                uint32_t channels) noexcept;

/// ToTensor's reordering: `src` HWC to `dst` CHW (no scaling: the synthetic
/// images are already float). `src` and `dst` must not overlap.
void hwc_to_chw(const float* src, float* dst, uint32_t height, uint32_t width,
                uint32_t channels) noexcept;

/// The same for a run of `pixels` interleaved pixels (`channels` each)
/// inside bigger planes: channel c's values go to dst + c * plane_stride.
/// hwc_to_chw is the whole image; make_synthetic_planes reorders piece by
/// piece as its generator writes them.
void hwc_to_chw_run(const float* src, float* dst, size_t pixels,
                    uint32_t channels, size_t plane_stride) noexcept;

/// Mirror index with the edge pixel not repeated (`dcba|abcd` -> `cb|abcd`,
/// OpenCV's BORDER_REFLECT_101); a size of 1 maps everything to 0.
int reflect101(int i, int size) noexcept;

/// Plain-loop separable blur of one plane (horizontal pass, then vertical),
/// accumulating in double: the reference the fast paths are tested against.
void blur_plane_reference(const float* src, float* dst, uint32_t height,
                          uint32_t width, const std::vector<float>& kernel);

/// One blur of one plane through OpenCV's sepFilter2D with
/// BORDER_REFLECT_101. `src` and `dst` must not overlap.
void blur_plane_opencv(const float* src, float* dst, uint32_t height,
                       uint32_t width, const std::vector<float>& kernel);

/// The same on an interleaved (HWC) image of 1..4 channels, each channel
/// filtered on its own.
void blur_image_opencv(const float* src, float* dst, uint32_t height,
                       uint32_t width, uint32_t channels,
                       const std::vector<float>& kernel);

/// The blur stage's scratch memory, kept from batch to batch by the one
/// thread that blurs with it (each worker owns one): the chain's aligned
/// image, strips and taps, OpenCV's ping-pong images. It grows to the
/// largest image seen and never shrinks, so a worker's steady state
/// allocates nothing here. Not thread-safe.
struct blur_scratch {
  std::vector<float> work;
  std::vector<float> strips;
  std::vector<float> taps;
  std::vector<float> ping;
  std::vector<float> pong;
};

/// The stage through the hand-written chain on `isa` (one the CPU runs,
/// not automatic; resolve_blur's choice): each image HWC to CHW into a
/// 64-byte aligned scratch image, every plane through all its blurs there
/// (call c with the taps of blur_taps), then copied back, which stamps
/// each image's checksum (batch.checksums) in the same pass. Reflect-101
/// borders. In place on the calling thread; the batch stays HWC-ordered
/// for apply_blur_stage to relabel. Throws std::invalid_argument for an
/// even kernel or one above 99, or an ISA this CPU does not run. Its
/// scratch memory is `scratch`'s.
void blur_stage_stoker(const blur_params& p, cpu_isa isa, image_batch& batch,
                       blur_scratch& scratch);

/// Blurs the interleaved (HWC) image `hwc` of 1..4 channels in place
/// `calls` times through the hand-written chain on `isa` (one the CPU
/// runs): call c with the `kernel_size` taps at taps + c * kernel_size,
/// each channel on its own, reflect-101 borders. What the gaussian-blur
/// transform runs (blur_image_opencv's results to 1e-5). Its scratch
/// memory is `scratch`'s. Throws std::invalid_argument as
/// blur_stage_stoker does.
void blur_image_chain(float* hwc, uint32_t height, uint32_t width,
                      uint32_t channels, const float* taps, uint32_t calls,
                      uint32_t kernel_size, cpu_isa isa,
                      blur_scratch& scratch);

/// The chain on `channels` planes of one image already in CHW order at
/// `planes` (blur_scratch::work, say): every plane through all `calls`
/// blurs, in place. blur_image_chain without the reordering; the same
/// errors.
void blur_planes_chain(float* planes, uint32_t height, uint32_t width,
                       uint32_t channels, const float* taps, uint32_t calls,
                       uint32_t kernel_size, cpu_isa isa,
                       blur_scratch& scratch);

/// A 64-byte aligned image of `floats` in `scratch.work` (grown once):
/// where the chain's vector loads and stores split no cache line.
float* aligned_work(blur_scratch& scratch, size_t floats);

/// Runs the whole stage on every image of `batch`, in place: the batch goes
/// in HWC and comes out CHW, through resolve_blur(p)'s implementation (the
/// two agree to 1e-5; the chain's ISAs agree bit for bit). Runs on the
/// calling thread (OpenCV's own threading is set per process by the node;
/// see run_node). Throws std::invalid_argument if the batch is not float32
/// HWC or `p` does not resolve on this CPU (workers check it first: see
/// batch_maker::open). Its scratch memory is `scratch`'s (a worker's own).
void apply_blur_stage(const blur_params& p, image_batch& batch,
                      blur_scratch& scratch);

/// The same with scratch memory of its own, freed on return: for tools and
/// tests (a worker keeps one blur_scratch for all its batches).
void apply_blur_stage(const blur_params& p, image_batch& batch);

/// The same stage on a CUDA device (blur_cuda.cu; a build without CUDA
/// sources has blur_cuda_none.cpp, whose open() says so): the trainer's
/// half of `pipeline.placement = gpu|auto`. One CUDA stream, and pinned
/// staging and device buffers grown to the largest batch seen, all owned
/// here. Not thread-safe: one owner, the trainer's (detached) thread.
class cuda_blur_stage {
public:
  /// Opens CUDA device `device`. The error says why not: no CUDA in this
  /// build, no device or driver (CUDA's own words), or a failed call.
  static caf::expected<cuda_blur_stage> open(int device = 0);

  cuda_blur_stage(cuda_blur_stage&&) noexcept;
  cuda_blur_stage& operator=(cuda_blur_stage&&) noexcept;
  ~cuda_blur_stage();

  /// apply_blur_stage's result computed on the GPU, in place in host
  /// memory: a float32 HWC batch goes in, CHW comes out; the sigmas are
  /// blur_sigma's draws, the border is reflect-101, as on the CPU. Returns
  /// when the batch is back in `batch.data`. Errors (errc::bad_batch for a
  /// batch that is not float32 HWC, errc::trainer_failure for a CUDA call)
  /// name the batch and the call; every CUDA call is checked.
  caf::error run(const blur_params& p, image_batch& batch);

  /// The device's name and compute capability ("NVIDIA H200 (sm_90)").
  const std::string& device_name() const noexcept;

  struct impl; // blur_cuda.cu

private:
  explicit cuda_blur_stage(std::unique_ptr<impl> x) noexcept;
  std::unique_ptr<impl> impl_;
};

} // namespace stoker
