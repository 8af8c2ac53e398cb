#pragma once

// Decoding only the part of a JPEG a crop needs (libjpeg-turbo directly):
// the rows above and below the box are skipped, only its columns are
// decoded, and the IDCT scales by M/8 where the box stays at least the
// output size. Pure functions over the file's bytes; the fused decode+crop
// of the transform chain (transforms/) runs them.

#include <cstdint>
#include <optional>
#include <vector>

#include <caf/expected.hpp>
#include <opencv2/core.hpp>

#include "stoker/counter_rng.hpp"

namespace stoker {

/// What a JPEG's header says, read without decoding a pixel.
struct jpeg_header {
  int width = 0;
  int height = 0;
  int components = 0; ///< 1 (grayscale), 3 (YCbCr / RGB) or 4 (CMYK / YCCK)
  bool progressive = false;
  /// EXIF orientation (1: as stored; 2-8: OpenCV's decoder turns the image,
  /// so the region decoder does not take such files).
  int orientation = 1;
};

/// The header of `bytes` if it is a JPEG libjpeg reads; nothing otherwise
/// (another format, or a header too damaged to read).
std::optional<jpeg_header> read_jpeg_header(const std::vector<char>& bytes);

/// Whether decode_jpeg_region() takes a file of header `h`: 1 or 3
/// components and no EXIF turn (the rest goes through OpenCV's decoder,
/// which converts CMYK and turns by the EXIF tag).
bool region_decodable(const jpeg_header& h) noexcept;

/// The largest reduction M/8 (M: 1, 2 or 4, the scales libjpeg-turbo
/// decodes with SIMD) at which a `box_w` x `box_h` box of the full image
/// still covers three times `out_w` x `out_h` pixels (so that the
/// antialiased resample after it, not the IDCT's block average, shapes
/// the result); 8 (no reduction) otherwise.
int dct_scale_for(double box_w, double box_h, int out_w, int out_h) noexcept;

/// A decoded part of a JPEG.
struct jpeg_region {
  /// 8-bit RGB (or grayscale with `gray`), HWC, rows of the scaled image,
  /// continuous, with at least `read_ahead` readable bytes after the end
  /// of every row (after the last, padding): the resampler's vector loads
  /// read that far past a pixel.
  cv::Mat pixels;
  static constexpr int read_ahead = 128;
  /// The box asked for, in `pixels`' coordinates (the scaled image's,
  /// shifted to where the decoded part starts): fractional where M/8
  /// scaling does not land on whole pixels.
  cv::Rect2d box;
  /// Where the resample's taps may read, in the same coordinates: the box
  /// itself (a crop then a resize: torchvision's RandomResizedCrop), or
  /// the whole image as far as it was decoded (a resize then a crop: the
  /// pixels at the crop's edge mix in pixels beyond it, as Resize does).
  cv::Rect2d bounds;
  int scale = 8; ///< M: the image was decoded at M/8 of its size
};

/// Decodes the part of the JPEG `bytes` that covers `box` (full-size pixel
/// coordinates, fractional where a resize put it, inside the image) at
/// M/8 = dct_scale_for(box, out), to RGB (gray: one channel).
/// `beyond_box`: the resample reads the image around the box (as far as
/// its filter reaches) and `bounds` is the image; otherwise `bounds` is
/// the box. Errors (errc::io_failure) name what is wrong: not a JPEG, a
/// file region_decodable() refuses, a corrupt or truncated file (libjpeg's
/// warnings count as errors: a truncated file is skipped, never padded
/// with grey). Thread-safe: each call has its own decoder.
caf::expected<jpeg_region> decode_jpeg_region(const std::vector<char>& bytes,
                                              const cv::Rect2d& box, int out_w,
                                              int out_h, bool gray,
                                              bool beyond_box = false);

/// What the fused start does to the resampled pixels on the way out, in
/// the same pass: ToTensor's [0, 1], then (x - mean[c]) / stddev[c]
/// (Normalize; one value: every channel), mirrored left to right with
/// `flip`.
struct pixel_finish {
  bool flip = false;
  std::vector<float> mean{0.0f};
  std::vector<float> stddev{1.0f};
};

/// The region's box resampled to `out_w` x `out_h` float32 pixels,
/// finished by `finish` in the same pass. Where the box (at the decoded
/// scale) shrinks along either axis: torchvision's antialiased bilinear,
/// PIL's filter (a triangle as wide as the shrink, at least one pixel;
/// taps within `bounds`), in 14-bit fixed-point taps along x and float
/// along y, not rounded to 8 bits between: within one level of
/// torchvision's Resize of the same pixels. Where it enlarges both ways:
/// bilinear with half-pixel centres, output pixel x sampling the box at
/// box.x + (x + 0.5) * box.width / out_w - 0.5 (clamped to the box), as
/// cv::resize and PIL map them, in float. The same numbers on every CPU
/// (the AVX2 and AVX-512 paths give the portable path's bits).
cv::Mat resample_region(const jpeg_region& r, int out_w, int out_h,
                        const pixel_finish& finish = {});

/// As resample_region(), written as planes (CHW: the channels one after
/// the other, out_h x out_w each) into `planes`, which the caller owns and
/// sizes: the batch's memory, so the image is written once, in its final
/// layout. The same numbers as resample_region().
void resample_region_planes(const jpeg_region& r, int out_w, int out_h,
                            const pixel_finish& finish, float* planes);

/// Which code resampled a region: the antialiased filter with its x pass
/// portable or AVX-512 VBMI (for some block of 16 outputs at least; the
/// y pass as the path says), or the bilinear pass with its x pass
/// portable, AVX2 (three channels), AVX-512 VBMI, or portable with the
/// AVX2 row loops (one channel, or a path whose x pass fell back).
enum class resample_pass {
  antialiased,
  antialiased_avx512,
  portable,
  avx2_rows,
  avx2,
  avx512
};

/// As above through the code path `path`, which the CPU must support
/// (avx512 takes the VBMI x pass where the CPU permutes bytes and the
/// box's taps fit its table, else AVX2); returns what ran, for tests that
/// compare the paths and must know what they compared.
resample_pass resample_region_planes(const jpeg_region& r, int out_w,
                                     int out_h, const pixel_finish& finish,
                                     float* planes, simd_path path);

/// Whether this CPU runs the AVX-512 VBMI x pass (byte permutes).
bool supports_byte_permutes() noexcept;

} // namespace stoker
