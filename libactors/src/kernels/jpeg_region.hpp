#pragma once

// Decoding only the part of a JPEG a crop needs (libjpeg-turbo directly):
// the rows above and below the box are skipped, only its columns are
// decoded, and the IDCT scales by M/8 where the box stays at least three
// times the output size. Pure functions over the file's bytes; the fused
// decode+crop of the transform chain (transforms/) runs them, then
// region_resample.hpp's resample.

#include <cstdint>
#include <optional>
#include <vector>

#include <caf/expected.hpp>
#include <opencv2/core.hpp>


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

} // namespace stoker
