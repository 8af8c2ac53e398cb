#include "kernels/jpeg_region.hpp"

#include <algorithm>
#include <cmath>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <string>

#include <jpeglib.h>

#include "stoker/errors.hpp"

namespace stoker {

namespace {

// libjpeg reports a fatal error by calling error_exit, which must not
// return: it jumps back to the setjmp of the call that started the work.
// Warnings (a truncated file, corrupt data libjpeg decodes around) are
// kept: a file with one is refused, not decoded with made-up pixels.
struct jpeg_failure {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
  int warnings;
};

extern "C" void on_jpeg_error(j_common_ptr c) {
  auto* f = reinterpret_cast<jpeg_failure*>(c->err);
  (*c->err->format_message)(c, f->message);
  std::longjmp(f->jump, 1);
}

extern "C" void on_jpeg_message(j_common_ptr c, int level) {
  if (level >= 0)
    return; // trace messages
  auto* f = reinterpret_cast<jpeg_failure*>(c->err);
  if (f->warnings++ == 0)
    (*c->err->format_message)(c, f->message);
}

// One decompressor and its error handler; destroyed on every path.
struct decoder {
  jpeg_decompress_struct info;
  jpeg_failure failure;

  decoder() {
    std::memset(&info, 0, sizeof(info));
    std::memset(&failure, 0, sizeof(failure));
    info.err = jpeg_std_error(&failure.mgr);
    failure.mgr.error_exit = on_jpeg_error;
    failure.mgr.emit_message = on_jpeg_message;
    jpeg_create_decompress(&info);
  }

  ~decoder() {
    jpeg_destroy_decompress(&info);
  }

  decoder(const decoder&) = delete;
  decoder& operator=(const decoder&) = delete;
};

uint16_t read16(const unsigned char* p, bool little) {
  return little ? static_cast<uint16_t>(p[0] | (p[1] << 8))
                : static_cast<uint16_t>((p[0] << 8) | p[1]);
}

uint32_t read32(const unsigned char* p, bool little) {
  return little ? static_cast<uint32_t>(p[0] | (p[1] << 8) | (p[2] << 16)
                                        | (uint32_t{p[3]} << 24))
                : static_cast<uint32_t>((uint32_t{p[0]} << 24) | (p[1] << 16)
                                        | (p[2] << 8) | p[3]);
}

// The orientation tag (0x0112) of IFD0 in an APP1 "Exif" segment; 1 when
// there is none or the segment does not parse.
int exif_orientation(const unsigned char* data, size_t size) {
  if (size < 14 || std::memcmp(data, "Exif\0\0", 6) != 0)
    return 1;
  const unsigned char* tiff = data + 6;
  size_t n = size - 6;
  bool little = tiff[0] == 'I' && tiff[1] == 'I';
  if (!little && !(tiff[0] == 'M' && tiff[1] == 'M'))
    return 1;
  uint32_t ifd = read32(tiff + 4, little);
  if (ifd > n || n - ifd < 2)
    return 1;
  uint16_t entries = read16(tiff + ifd, little);
  for (uint32_t i = 0; i < entries; ++i) {
    size_t at = size_t{ifd} + 2 + size_t{i} * 12;
    if (at + 12 > n)
      return 1;
    if (read16(tiff + at, little) == 0x0112) {
      int value = read16(tiff + at + 8, little);
      return value >= 1 && value <= 8 ? value : 1;
    }
  }
  return 1;
}

// Reads the header; false (with the failure's message) if libjpeg cannot.
// Only plain locals here: a longjmp lands in this frame.
bool read_header(decoder& d, const std::vector<char>& bytes) {
  if (setjmp(d.failure.jump))
    return false;
  jpeg_mem_src(&d.info, reinterpret_cast<const unsigned char*>(bytes.data()),
               static_cast<unsigned long>(bytes.size()));
  jpeg_save_markers(&d.info, JPEG_APP0 + 1, 0xFFFF);
  return jpeg_read_header(&d.info, TRUE) == JPEG_HEADER_OK;
}

jpeg_header header_of(const decoder& d) {
  jpeg_header h;
  h.width = static_cast<int>(d.info.image_width);
  h.height = static_cast<int>(d.info.image_height);
  h.components = d.info.num_components;
  h.progressive = d.info.progressive_mode != 0;
  for (auto* m = d.info.marker_list; m != nullptr; m = m->next)
    if (m->marker == JPEG_APP0 + 1) {
      h.orientation = exif_orientation(m->data, m->data_length);
      if (h.orientation != 1)
        break;
    }
  return h;
}

bool is_jpeg(const std::vector<char>& bytes) {
  return bytes.size() >= 3 && static_cast<unsigned char>(bytes[0]) == 0xFF
         && static_cast<unsigned char>(bytes[1]) == 0xD8
         && static_cast<unsigned char>(bytes[2]) == 0xFF;
}

// What decode_rows() is asked for and found (plain values only).
struct region_plan {
  int scale;                  // M of M/8
  bool gray;
  JDIMENSION x0, width;       // columns wanted, scaled (crop adjusts them)
  JDIMENSION y0, y1;          // rows wanted, scaled
  JDIMENSION out_width;       // the scaled image's width
  JDIMENSION out_height;
};

// Starts the decoder at plan.scale, crops to the columns wanted (libjpeg
// widens them to whole iMCUs and says where they start), skips the rows
// above. False on libjpeg's error. A frame of plain locals (longjmp).
bool start_region(decoder& d, region_plan& p) {
  if (setjmp(d.failure.jump))
    return false;
  d.info.scale_num = static_cast<unsigned int>(p.scale);
  d.info.scale_denom = 8;
  d.info.out_color_space = p.gray ? JCS_GRAYSCALE : JCS_RGB;
  d.info.dct_method = JDCT_ISLOW; // OpenCV's choice: the same pixels
  if (!jpeg_start_decompress(&d.info))
    return false;
  p.out_width = d.info.output_width;
  p.out_height = d.info.output_height;
  return true;
}

bool crop_and_skip(decoder& d, region_plan& p) {
  if (setjmp(d.failure.jump))
    return false;
  if (p.x0 > 0 || p.width < d.info.output_width)
    jpeg_crop_scanline(&d.info, &p.x0, &p.width);
  if (p.y0 > 0 && jpeg_skip_scanlines(&d.info, p.y0) != p.y0)
    return false;
  return true;
}

// Reads rows [y0, y1) into `out` (already the cropped width).
bool read_rows(decoder& d, const region_plan& p, unsigned char* out,
               size_t stride) {
  if (setjmp(d.failure.jump))
    return false;
  for (JDIMENSION row = p.y0; row < p.y1;) {
    JSAMPROW line = out + size_t{row - p.y0} * stride;
    JDIMENSION got = jpeg_read_scanlines(&d.info, &line, 1);
    if (got == 0)
      return false;
    row += got;
  }
  jpeg_abort_decompress(&d.info); // the rows below are not needed
  return true;
}

caf::error failure_of(const decoder& d, const std::string& what) {
  std::string why = d.failure.message[0] != '\0'
                      ? std::string{d.failure.message}
                      : std::string{"libjpeg stopped"};
  return make_error(errc::io_failure, what + ": " + why);
}

} // namespace

std::optional<jpeg_header> read_jpeg_header(const std::vector<char>& bytes) {
  if (!is_jpeg(bytes))
    return std::nullopt;
  decoder d;
  if (!read_header(d, bytes))
    return std::nullopt;
  return header_of(d);
}

bool region_decodable(const jpeg_header& h) noexcept {
  return (h.components == 1 || h.components == 3) && h.orientation == 1
         && h.width > 0 && h.height > 0;
}

int dct_scale_for(double box_w, double box_h, int out_w, int out_h) noexcept {
  // Only 1/8, 2/8 and 4/8: libjpeg-turbo's IDCT and upsampling have SIMD
  // code for these; 3/8, 5/8, 6/8 and 7/8 run plain C, slower than the
  // full-size decode (7/8 of a 400x321 photo: 522 us, the whole: 415 us).
  // At least three times the output after the reduction: the IDCT's
  // reduction is a box filter over its 8x8 blocks; the antialiased
  // resample after it (torchvision's triangle, three pixels and wider)
  // then dominates, and the result stays within 40 dB of resizing the
  // full decode (tested on real photos; reducing to just the output size
  // gave 28-36 dB, to twice it left retina.jpg's resize(256) +
  // center-crop(224) 154 pixels 2-4 levels from torchvision's).
  for (int m : {1, 2, 4})
    if (box_w * m >= out_w * 24 && box_h * m >= out_h * 24)
      return m;
  return 8;
}

caf::expected<jpeg_region> decode_jpeg_region(const std::vector<char>& bytes,
                                              const cv::Rect2d& box, int out_w,
                                              int out_h, bool gray,
                                              bool beyond_box) {
  auto bytes_text = std::to_string(bytes.size()) + " bytes";
  if (!is_jpeg(bytes))
    return make_error(errc::io_failure,
                      "not a JPEG (" + bytes_text + ")");
  decoder d;
  if (!read_header(d, bytes))
    return failure_of(d, "a JPEG whose header does not read (" + bytes_text
                           + ")");
  auto h = header_of(d);
  if (!region_decodable(h))
    return make_error(errc::io_failure,
                      "a JPEG the region decoder does not take ("
                        + std::to_string(h.components)
                        + " components, EXIF orientation "
                        + std::to_string(h.orientation) + ")");
  // A box a resize computed may pass the edge by a rounding error.
  constexpr double slack = 1e-6;
  auto num = [](double v) {
    char text[32];
    std::snprintf(text, sizeof(text), "%g", v);
    return std::string{text};
  };
  if (!(box.width > 0 && box.height > 0 && box.x >= -slack && box.y >= -slack
        && box.x + box.width <= h.width + slack
        && box.y + box.height <= h.height + slack))
    return make_error(errc::invalid_config,
                      "crop box " + num(box.width) + "x" + num(box.height)
                        + "+" + num(box.x) + "+" + num(box.y)
                        + " is not inside the " + std::to_string(h.width)
                        + "x" + std::to_string(h.height) + " image");
  region_plan p{};
  p.scale = dct_scale_for(box.width, box.height, out_w, out_h);
  p.gray = gray;
  if (!start_region(d, p))
    return failure_of(d, "a corrupt JPEG (" + bytes_text + ")");
  // The box at M/8, and the whole pixels that hold it with a margin of two
  // on every side: a decoded part's outermost column and row lack their
  // neighbours for chroma upsampling (a crop starting on an iMCU edge
  // differed by up to 17 levels in its first column), and a bilinear
  // sample at the box's edge reads one pixel beyond it.
  double f = p.scale / 8.0;
  cv::Rect2d scaled{box.x * f, box.y * f, box.width * f, box.height * f};
  auto clamp = [](double v, JDIMENSION hi) {
    return static_cast<JDIMENSION>(
      std::clamp(v, 0.0, static_cast<double>(hi)));
  };
  // Reading beyond the box: as far as the filter reaches (its support is
  // the shrink, at least one pixel) too.
  auto reach = [&](double length, int out) {
    return beyond_box ? std::ceil(std::max(1.0, length / out)) + 2.0 : 2.0;
  };
  double mx = reach(scaled.width, out_w);
  double my = reach(scaled.height, out_h);
  JDIMENSION x0 = clamp(std::floor(scaled.x) - mx, p.out_width);
  JDIMENSION x1 = clamp(std::ceil(scaled.x + scaled.width) + mx,
                        p.out_width);
  p.y0 = clamp(std::floor(scaled.y) - my, p.out_height);
  p.y1 = clamp(std::ceil(scaled.y + scaled.height) + my, p.out_height);
  p.x0 = x0;
  p.width = std::max<JDIMENSION>(1, x1 - x0);
  if (!crop_and_skip(d, p))
    return failure_of(d, "a corrupt JPEG (" + bytes_text + ")");
  int channels = gray ? 1 : 3;
  jpeg_region r;
  r.scale = p.scale;
  // Rows of padding after the last: the resampler's vector loads read
  // up to jpeg_region::read_ahead bytes past a row's pixels.
  const auto rows = static_cast<int>(p.y1 - p.y0);
  const auto row_bytes = static_cast<int>(p.width) * channels;
  const int padding = (jpeg_region::read_ahead + row_bytes - 1) / row_bytes;
  cv::Mat padded(rows + padding, static_cast<int>(p.width), CV_8UC(channels));
  r.pixels = padded.rowRange(0, rows);
  if (!read_rows(d, p, r.pixels.data, r.pixels.step[0]))
    return failure_of(d, "a corrupt JPEG (" + bytes_text + ")");
  if (d.failure.warnings > 0)
    return failure_of(d, "a corrupt or truncated JPEG (" + bytes_text + ")");
  r.box = cv::Rect2d{scaled.x - p.x0, scaled.y - p.y0, scaled.width,
                     scaled.height};
  r.bounds = beyond_box ? cv::Rect2d{0.0, 0.0,
                                     static_cast<double>(r.pixels.cols),
                                     static_cast<double>(r.pixels.rows)}
                        : r.box;
  return r;
}

} // namespace stoker
