// PIL's resample, ported from Pillow's libImaging/Resample.c (bilinear
// filter, 8 bits a channel), with vector twins that give its bytes.
//
// Integer arithmetic throughout, so every twin's sums are the same
// whatever their order: per output, 2^21 plus the taps' 22-bit weights
// times the bytes, shifted down and clamped to a byte. Along x (a gather:
// each output's taps start at a column of their own) the AVX-512 VBMI twin
// does 16 outputs of one channel a step: a block's taps lie within 128
// bytes of the row, and a zero-masking byte permute fetches one tap of
// each output as a 32-bit lane, which a 32-bit multiply weighs (22-bit
// weights times bytes need 30 bits: no 16-bit multiply-add, which would
// change PIL's bytes). Along y (rows times one weight each) the same loop
// compiled for AVX2 and AVX-512 vectorizes by itself.
#include "kernels/pil_resample.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#if defined(__x86_64__)
#  include <immintrin.h>
#endif

#include "kernels/jpeg_region.hpp"
#include "kernels/region_resample_parts.hpp"

namespace stoker {

namespace {

using resample_detail::plan_vbmi_blocks;
using resample_detail::vbmi_blocks;

constexpr int precision_bits = 32 - 8 - 2;
constexpr int32_t half = 1 << (precision_bits - 1);
constexpr int block = 16; // outputs a VBMI step makes

// One axis, the taps in 22-bit fixed point.
using pil_taps = resample_detail::tap_bank<int32_t>;

pil_taps coefficients(int in_size, int out_size) {
  pil_taps t;
  const double scale = static_cast<double>(in_size) / out_size;
  const double filter_scale = std::max(scale, 1.0);
  const double support = 1.0 * filter_scale; // bilinear: support 1
  t.width = static_cast<int>(std::ceil(support)) * 2 + 1;
  auto n = static_cast<size_t>(out_size);
  t.first.resize(n);
  t.count.resize(n);
  t.weights.assign(n * static_cast<size_t>(t.width), 0);
  std::vector<double> w(static_cast<size_t>(t.width));
  for (int i = 0; i < out_size; ++i) {
    const double center = (i + 0.5) * scale;
    // Pillow's rounding: (int)(v + 0.5), truncating toward zero.
    int lo = std::max(static_cast<int>(center - support + 0.5), 0);
    int hi = std::min(static_cast<int>(center + support + 0.5), in_size);
    int count = std::min(hi - lo, t.width);
    double sum = 0.0;
    for (int x = 0; x < count; ++x) {
      double d = std::abs((x + lo - center + 0.5) / filter_scale);
      w[static_cast<size_t>(x)] = d < 1.0 ? 1.0 - d : 0.0;
      sum += w[static_cast<size_t>(x)];
    }
    auto at = static_cast<size_t>(i) * static_cast<size_t>(t.width);
    for (int x = 0; x < count; ++x) {
      double v = w[static_cast<size_t>(x)];
      if (sum != 0.0)
        v /= sum;
      v *= static_cast<double>(1 << precision_bits);
      t.weights[at + static_cast<size_t>(x)] =
        static_cast<int32_t>(v < 0 ? v - 0.5 : v + 0.5);
    }
    t.first[static_cast<size_t>(i)] = lo;
    t.count[static_cast<size_t>(i)] = count;
    t.most = std::max(t.most, count);
  }
  return t;
}

uint8_t clip8(int32_t v) {
  if (v >= (1 << precision_bits << 8))
    return 255;
  if (v <= 0)
    return 0;
  return static_cast<uint8_t>(v >> precision_bits);
}

// Outputs [from, to) of one row along x. The portable twin.
template <int C>
void along_x(const uint8_t* in, const pil_taps& t, int from, int to,
             uint8_t* out) {
  for (int x = from; x < to; ++x) {
    auto xi = static_cast<size_t>(x);
    const int32_t* k = t.weights.data() + xi * static_cast<size_t>(t.width);
    const uint8_t* px = in + static_cast<size_t>(t.first[xi]) * C;
    for (int c = 0; c < C; ++c) {
      int32_t acc = half;
      for (int j = 0; j < t.count[xi]; ++j)
        acc += px[j * C + c] * k[j];
      out[xi * C + static_cast<size_t>(c)] = clip8(acc);
    }
  }
}

// The VBMI pass's view of the x taps: where its tables come from (the row,
// channel c's indices plus c, or each channel's plane: plan_vbmi_blocks),
// and per block and tap the permute's 64 index bytes (byte 4m: the tap of
// output m; the other bytes zeroed by the mask) and the 16 outputs'
// weights.
struct x_tables {
  vbmi_blocks blocks;
  std::vector<uint8_t> index;
  std::vector<int32_t> weights;
  int taps = 0;
};

template <int C>
x_tables tables_for(const pil_taps& t) {
  x_tables v;
  v.taps = t.most;
  v.blocks = plan_vbmi_blocks(t.first, t.count, C);
  const int stride = v.blocks.planar ? 1 : C;
  const auto taps = static_cast<size_t>(v.taps);
  const auto blocks = v.blocks.starts.size();
  v.index.assign(blocks * taps * 64, 0);
  v.weights.assign(blocks * taps * block, 0);
  for (size_t b = 0; b < blocks; ++b) {
    if (v.blocks.starts[b] < 0)
      continue;
    for (size_t m = 0; m < block; ++m) {
      const size_t x = b * block + m;
      const int at = (t.first[x] - v.blocks.starts[b]) * stride;
      for (size_t j = 0; j < taps; ++j) {
        // A tap past the output's count weighs 0: any byte will do (the
        // permute reads an index's low 7 bits).
        v.index[(b * taps + j) * 64 + 4 * m] =
          static_cast<uint8_t>(at + static_cast<int>(j) * stride);
        v.weights[(b * taps + j) * block + m] =
          t.weights[x * static_cast<size_t>(t.width) + j];
      }
    }
  }
  return v;
}

#if defined(__x86_64__)
// GCC 12 warns about _mm512_undefined_* inside its own headers.
#  pragma GCC diagnostic push
#  pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#  pragma GCC diagnostic ignored "-Wuninitialized"
// The VBMI twin (one or three channels). `in`, and with a planar plan
// each of `planes` (channel c's bytes of the plan's columns), has 128
// readable bytes past its pixels, which a block's table may take in; a
// tap there weighs 0.
template <int C, bool Planar>
__attribute__((target("avx512f,avx512bw,avx512vbmi"))) void
along_x_vbmi(const uint8_t* in, const uint8_t* const* planes,
             const pil_taps& t, const x_tables& v, int n, uint8_t* out) {
  const int* block_first = v.blocks.starts.data();
  const size_t blocks = v.blocks.starts.size();
  const auto taps = static_cast<size_t>(v.taps);
  const __mmask64 low_bytes = 0x1111111111111111ULL;
  // Channel c of output m (lane 16c + m) to byte 3m + c.
  alignas(64) uint8_t weave[64] = {};
  for (int m = 0; m < block; ++m)
    for (int c = 0; c < C; ++c)
      weave[m * C + c] = static_cast<uint8_t>(c * block + m);
  const __m512i interleave = _mm512_load_si512(weave);
  const __m512i zero = _mm512_setzero_si512();
  const __m512i most = _mm512_set1_epi32(255);
  for (size_t b = 0; b < blocks; ++b) {
    const int x = static_cast<int>(b) * block;
    if (block_first[b] < 0) {
      along_x<C>(in, t, x, x + block, out);
      continue;
    }
    __m512i t0, t1;
    if constexpr (!Planar) {
      const uint8_t* row = in + static_cast<size_t>(block_first[b]) * C;
      t0 = _mm512_loadu_si512(row);
      t1 = _mm512_loadu_si512(row + 64);
    }
    const uint8_t* index = v.index.data() + b * taps * 64;
    const int32_t* w = v.weights.data() + b * taps * block;
    __m128i packed[C];
    for (int c = 0; c < C; ++c) {
      if constexpr (Planar) {
        const uint8_t* plane =
          planes[c] + static_cast<size_t>(block_first[b] - v.blocks.col_lo);
        t0 = _mm512_loadu_si512(plane);
        t1 = _mm512_loadu_si512(plane + 64);
      }
      const __m512i shift =
        _mm512_set1_epi8(static_cast<char>(Planar ? 0 : c));
      __m512i acc = _mm512_set1_epi32(half);
      for (size_t j = 0; j < taps; ++j) {
        __m512i idx = _mm512_add_epi8(_mm512_loadu_si512(index + j * 64),
                                      shift);
        __m512i tap = _mm512_maskz_permutex2var_epi8(low_bytes, t0, idx, t1);
        acc = _mm512_add_epi32(
          acc, _mm512_mullo_epi32(tap, _mm512_loadu_si512(w + j * block)));
      }
      // clip8: (acc >> 22) within [0, 255].
      __m512i v8 = _mm512_min_epi32(
        _mm512_max_epi32(_mm512_srai_epi32(acc, precision_bits), zero), most);
      packed[c] = _mm512_cvtepi32_epi8(v8);
    }
    if constexpr (C == 1) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + x), packed[0]);
    } else {
      __m512i bytes = _mm512_castsi128_si512(packed[0]);
      bytes = _mm512_inserti32x4(bytes, packed[1], 1);
      bytes = _mm512_inserti32x4(bytes, packed[2], 2);
      _mm512_mask_storeu_epi8(out + static_cast<size_t>(x) * 3,
                              (1ULL << 48) - 1,
                              _mm512_permutexvar_epi8(interleave, bytes));
    }
  }
  along_x<C>(in, t, static_cast<int>(blocks) * block, n, out);
}
#  pragma GCC diagnostic pop
#endif

// One output row along y: 2^21 plus each row times its weight, clamped.
// One body, inlined into each ISA's twin (which the compiler vectorizes);
// integer sums, so the same bytes.
__attribute__((always_inline)) inline void
along_y_body(const uint8_t* const* rows, const int32_t* k, int count,
             int32_t* acc, uint8_t* out, size_t n) {
  for (size_t i = 0; i < n; ++i)
    acc[i] = half + rows[0][i] * k[0];
  for (int j = 1; j < count; ++j) {
    const uint8_t* row = rows[j];
    const int32_t w = k[j];
    for (size_t i = 0; i < n; ++i)
      acc[i] += row[i] * w;
  }
  for (size_t i = 0; i < n; ++i)
    out[i] = static_cast<uint8_t>(
      std::clamp(acc[i] >> precision_bits, 0, 255));
}

void along_y(const uint8_t* const* rows, const int32_t* k, int count,
             int32_t* acc, uint8_t* out, size_t n) {
  along_y_body(rows, k, count, acc, out, n);
}

#if defined(__x86_64__)
__attribute__((target("avx2"))) void
along_y_avx2(const uint8_t* const* rows, const int32_t* k, int count,
             int32_t* acc, uint8_t* out, size_t n) {
  along_y_body(rows, k, count, acc, out, n);
}

__attribute__((target("avx512f,avx512bw"))) void
along_y_avx512(const uint8_t* const* rows, const int32_t* k, int count,
               int32_t* acc, uint8_t* out, size_t n) {
  along_y_body(rows, k, count, acc, out, n);
}
#endif

bool vbmi_for(int channels, simd_path path) {
#if defined(__x86_64__)
  return path == simd_path::avx512 && supports_byte_permutes()
         && (channels == 1 || channels == 3);
#else
  (void) channels;
  (void) path;
  return false;
#endif
}

template <int C>
void horizontal(const cv::Mat& img, cv::Mat& wide, simd_path path) {
  const auto t = coefficients(img.cols, wide.cols);
  bool vbmi = false;
  x_tables v;
  if constexpr (C == 1 || C == 3) {
    vbmi = vbmi_for(C, path);
    if (vbmi)
      v = tables_for<C>(t);
  }
  // The VBMI twin's tables read up to 128 bytes past a row's pixels: a
  // row with that much of the Mat's memory after it (the next rows, or
  // the rest of the image a crop is a view of) goes as is, one nearer its
  // end through a padded copy.
  const auto bytes = static_cast<size_t>(img.cols) * img.elemSize();
  std::vector<uint8_t> padded;
  const auto plane = static_cast<size_t>(v.blocks.col_hi - v.blocks.col_lo)
                     + jpeg_region::read_ahead;
  std::vector<uint8_t> split(C == 3 && v.blocks.planar ? 3 * plane : 0);
  for (int y = 0; y < img.rows; ++y) {
    const uint8_t* in = img.ptr<uint8_t>(y);
    uint8_t* out = wide.ptr<uint8_t>(y);
#if defined(__x86_64__)
    if constexpr (C == 1 || C == 3) {
      if (vbmi) {
        if (static_cast<size_t>(img.datalimit - in)
            < bytes + jpeg_region::read_ahead) {
          padded.assign(in, in + bytes);
          padded.resize(bytes + jpeg_region::read_ahead, 0);
          in = padded.data();
        }
        if constexpr (C == 3) {
          if (v.blocks.planar) {
            uint8_t* to[3] = {split.data(), split.data() + plane,
                              split.data() + 2 * plane};
            resample_detail::split_channels_vbmi(
              in + static_cast<size_t>(v.blocks.col_lo) * 3,
              static_cast<size_t>(v.blocks.col_hi - v.blocks.col_lo), to);
            const uint8_t* planes[3] = {to[0], to[1], to[2]};
            along_x_vbmi<C, true>(in, planes, t, v, wide.cols, out);
            continue;
          }
        }
        along_x_vbmi<C, false>(in, nullptr, t, v, wide.cols, out);
        continue;
      }
    }
#endif
    along_x<C>(in, t, 0, wide.cols, out);
  }
}

cv::Mat vertical(const cv::Mat& src, int out_h, simd_path path) {
  const auto t = coefficients(src.rows, out_h);
  cv::Mat out(out_h, src.cols, src.type());
  const size_t n = static_cast<size_t>(src.cols) * src.elemSize();
  std::vector<int32_t> acc(n);
  std::vector<const uint8_t*> rows(static_cast<size_t>(t.width));
  auto kernel = along_y;
#if defined(__x86_64__)
  if (path == simd_path::avx2)
    kernel = along_y_avx2;
  else if (path == simd_path::avx512)
    kernel = along_y_avx512;
#else
  (void) path;
#endif
  for (int y = 0; y < out_h; ++y) {
    const auto yi = static_cast<size_t>(y);
    for (int j = 0; j < t.count[yi]; ++j)
      rows[static_cast<size_t>(j)] = src.ptr<uint8_t>(t.first[yi] + j);
    kernel(rows.data(), t.weights.data() + yi * static_cast<size_t>(t.width),
           t.count[yi], acc.data(), out.ptr<uint8_t>(y), n);
  }
  return out;
}

} // namespace

cv::Mat pil_resize(const cv::Mat& img, int out_h, int out_w,
                   simd_path path) {
  cv::Mat src = img;
  if (out_w != img.cols) { // horizontal pass, rounded to 8 bits
    cv::Mat wide(img.rows, out_w, img.type());
    switch (img.channels()) {
    case 1: horizontal<1>(img, wide, path); break;
    case 2: horizontal<2>(img, wide, path); break;
    case 3: horizontal<3>(img, wide, path); break;
    default: horizontal<4>(img, wide, path); break;
    }
    src = wide;
  }
  if (out_h == src.rows)
    return src;
  return vertical(src, out_h, path);
}

bool pil_resize_uses_vbmi(int channels, int in_w, int out_w,
                          simd_path path) {
  if (!vbmi_for(channels, path) || in_w == out_w)
    return false;
  const auto t = coefficients(in_w, out_w);
  auto starts = plan_vbmi_blocks(t.first, t.count, channels).starts;
  return std::any_of(starts.begin(), starts.end(),
                     [](int s) { return s >= 0; });
}

} // namespace stoker
