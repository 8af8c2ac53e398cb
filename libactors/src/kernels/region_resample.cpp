// The resampling half of the fused JPEG start (region_resample.hpp): the
// bilinear pass for a box that enlarges, and the choice between it and
// the antialiased pass (region_antialias.cpp).
#include "kernels/region_resample.hpp"

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include <opencv2/core.hpp>

#if defined(__x86_64__)
#  include <immintrin.h>
#endif

#include "core/cpu_features.hpp"
#include "kernels/region_resample_parts.hpp"
#include "stoker/counter_rng.hpp"

namespace stoker {

namespace {

using namespace resample_detail;

// One axis of a bilinear resample: for each output index the two source
// indices (clamped to the source) and the weight of the second.
struct taps {
  std::vector<int> lo, hi;
  std::vector<float> w;
};

taps taps_for(double start, double length, int out, int size) {
  taps t;
  t.lo.resize(static_cast<size_t>(out));
  t.hi.resize(static_cast<size_t>(out));
  t.w.resize(static_cast<size_t>(out));
  double step = length / out;
  for (int i = 0; i < out; ++i) {
    // Clamped to the box, as a resize of the cropped image is at its
    // edges (the region holds a pixel beyond them for the reduced case).
    double at = start + (i + 0.5) * step - 0.5;
    at = std::clamp(at, start, std::max(start, start + length - 1.0));
    at = std::clamp(at, 0.0, static_cast<double>(size - 1));
    int lo = static_cast<int>(std::floor(at));
    t.lo[static_cast<size_t>(i)] = lo;
    t.hi[static_cast<size_t>(i)] = std::min(lo + 1, size - 1);
    t.w[static_cast<size_t>(i)] = static_cast<float>(at - lo);
  }
  return t;
}


// The full-scale bilinear resample, in two passes over float rows (the
// arithmetic of a per-pixel bilinear, in the same order, so the same
// numbers): along x, each source row the output needs is lerped once into
// a row per channel, already in output order (mirrored with the flip:
// the taps are reversed); along y, two such rows are blended and
// finished, contiguous, into the output's rows. The x pass is the costly
// one, with three twins doing each element's operations in the same
// order (a test compares their bits): the portable loop over the row
// widened to floats; AVX2, two pixels a register from unaligned loads,
// four registers transposed into eight pixels per channel (AVX2 gathers
// ran 2.5x slower on the Zen 5 VM); AVX-512 VBMI, byte permutes straight
// from the row (no widening pass). Per ImageNet-sized photo, writing into
// a batch: cv::resize + cv::split + the finish 90 us, portable 110, AVX2
// 61, AVX-512 44.
struct bilinear_plan {
  taps xs;                  // in output order
  taps ys;
  int first_column = 0;     // the first source column any tap reads
  int columns = 0;          // how many from there (the widened row)
  std::vector<int> offsets; // per output x: (xs.lo - first_column) * C
  // The AVX-512 pass's view of the same taps, per block of 16 outputs:
  // the column its table of bytes starts at, and the byte each lane of
  // its first and second tap permute picks (lanes 16c..16c+15: channel c
  // of the 16 outputs). Empty where that pass does not run, or where some
  // block's taps span more than the 128-byte table holds (a shrink of
  // about 2.5 or more).
  std::vector<int> block_first;
  std::vector<uint8_t> first_tap;
  std::vector<uint8_t> second_tap;
};

template <int C>
bilinear_plan bilinear_for(const cv::Mat& src, const cv::Rect2d& b,
                           int out_w, int out_h, bool flip, bool byte_tables) {
  bilinear_plan p;
  p.xs = taps_for(b.x, b.width, out_w, src.cols);
  p.ys = taps_for(b.y, b.height, out_h, src.rows);
  p.first_column = p.xs.lo.front();
  p.columns = std::min(p.xs.lo.back() + 2, src.cols) - p.first_column;
  if (flip) {
    std::reverse(p.xs.lo.begin(), p.xs.lo.end());
    std::reverse(p.xs.w.begin(), p.xs.w.end());
  }
  p.offsets.resize(p.xs.lo.size());
  for (size_t x = 0; x < p.offsets.size(); ++x)
    p.offsets[x] = (p.xs.lo[x] - p.first_column) * C;
  if (!byte_tables) // only the AVX-512 pass reads them
    return p;
  constexpr int block = 16;
  constexpr int table = jpeg_region::read_ahead; // bytes a block reads
  const int blocks = out_w / block;
  p.block_first.resize(static_cast<size_t>(blocks));
  p.first_tap.assign(static_cast<size_t>(blocks) * 64, 0);
  p.second_tap.assign(static_cast<size_t>(blocks) * 64, 0);
  for (int k = 0; k < blocks; ++k) {
    auto from = p.xs.lo.begin() + k * block;
    auto [least, most] = std::minmax_element(from, from + block);
    if ((*most + 1 - *least) * C + C > table) { // a tap outside the table
      p.block_first.clear();
      break;
    }
    p.block_first[static_cast<size_t>(k)] = *least - p.first_column;
    for (int i = 0; i < block; ++i)
      for (int c = 0; c < C; ++c) {
        auto lane = static_cast<size_t>(k * 64 + c * block + i);
        p.first_tap[lane] = static_cast<uint8_t>((from[i] - *least) * C + c);
        p.second_tap[lane] = static_cast<uint8_t>(p.first_tap[lane] + C);
      }
  }
  return p;
}

// Bytes to floats (exact). The portable twin and an AVX2 one chosen by
// the caller's path, not by target_clones at load time: the tests compare
// both on any AVX2 machine, where a default clone would never run.
void widen_row(const uint8_t* in, float* out, size_t n) {
  for (size_t i = 0; i < n; ++i)
    out[i] = static_cast<float>(in[i]);
}

#if defined(__x86_64__)
__attribute__((target("avx2"))) void
widen_row_avx2(const uint8_t* in, float* out, size_t n) {
  for (size_t i = 0; i < n; ++i)
    out[i] = static_cast<float>(in[i]);
}
#endif

// One widened row along x into one row per channel: out_c[x] =
// f[o + c] + w[x] * (f[o + C + c] - f[o + c]), o = offsets[x]. Where a
// tap is clamped to the last column its weight is 0, so the pixel after
// it (zeros past the row) adds nothing. The portable twin.
template <int C>
void lerp_along_x(const float* f, const int* offsets, const float* w,
                  int n, float* const* out) {
  for (int x = 0; x < n; ++x) {
    const float* p = f + offsets[x];
    for (int c = 0; c < C; ++c)
      out[c][x] = p[c] + w[x] * (p[C + c] - p[c]);
  }
}

#if defined(__x86_64__)
// The AVX2 twin for three channels. Each register holds pixel x + k in
// its low half and x + k + 4 in its high half as [R G B -], loaded
// unaligned (the fourth lane reads the next value or the row's zero
// padding and is dropped); four registers transpose into R, G and B of
// eight pixels.
__attribute__((target("avx2"))) void
lerp_along_x_rgb_avx2(const float* f, const int* offsets, const float* w,
                      int n, float* const* out) {
  int x = 0;
  for (; x + 8 <= n; x += 8) {
    __m256 r[4];
    for (int k = 0; k < 4; ++k) {
      const float* p = f + offsets[x + k];
      const float* q = f + offsets[x + k + 4];
      __m256 a = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(p)),
                                      _mm_loadu_ps(q), 1);
      __m256 b = _mm256_insertf128_ps(
        _mm256_castps128_ps256(_mm_loadu_ps(p + 3)), _mm_loadu_ps(q + 3), 1);
      __m256 wv = _mm256_insertf128_ps(
        _mm256_castps128_ps256(_mm_broadcast_ss(w + x + k)),
        _mm_broadcast_ss(w + x + k + 4), 1);
      r[k] = _mm256_add_ps(a, _mm256_mul_ps(wv, _mm256_sub_ps(b, a)));
    }
    __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]); // R0 R1 G0 G1 | R4 R5 G4 G5
    __m256 t1 = _mm256_unpackhi_ps(r[0], r[1]); // B0 B1 - - | B4 B5 - -
    __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]);
    __m256 t3 = _mm256_unpackhi_ps(r[2], r[3]);
    _mm256_storeu_ps(out[0] + x, _mm256_shuffle_ps(t0, t2, 0x44));
    _mm256_storeu_ps(out[1] + x, _mm256_shuffle_ps(t0, t2, 0xEE));
    _mm256_storeu_ps(out[2] + x, _mm256_shuffle_ps(t1, t3, 0x44));
  }
  float* const rest[3] = {out[0] + x, out[1] + x, out[2] + x};
  lerp_along_x<3>(f, offsets + x, w + x, n - x, rest);
}

// GCC 12 warns about _mm512_undefined_* inside its own headers.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// 16 bytes widened to 16 floats.
__attribute__((target("avx512f,avx512bw,avx512vbmi"))) inline __m512
channel(__m128i bytes) {
  return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(bytes));
}

// a + w * (b - a), 16 lanes: lerp_along_x's operations.
__attribute__((target("avx512f,avx512bw,avx512vbmi"))) inline __m512
lerp16(__m512 a, __m512 b, __m512 w) {
  return _mm512_add_ps(a, _mm512_mul_ps(w, _mm512_sub_ps(b, a)));
}

// The source row's bytes along x, 16 outputs a step, with no widening
// pass: a block's taps lie within 128 bytes from its first column, and
// two byte permutes (AVX-512 VBMI) fetch the first and second tap of its
// 16 outputs, every channel, which then widen in registers. The portable
// twin's operations per element (on the same bytes as floats), so the
// same numbers. `row` has jpeg_region::read_ahead (128) readable bytes
// past its pixels, which a table may take in; what lies there counts only
// where a tap's weight is 0.
template <int C>
__attribute__((target("avx512f,avx512bw,avx512vbmi"))) void
lerp_bytes_avx512(const uint8_t* row, const bilinear_plan& p, int n,
                  float* const* out) {
  // Local copies: the stores below could alias the plan's vectors for
  // all the compiler knows, which reloaded them every step.
  const float* w = p.xs.w.data();
  const int* block_first = p.block_first.data();
  const size_t blocks = p.block_first.size();
  const uint8_t* first_tap = p.first_tap.data();
  const uint8_t* second_tap = p.second_tap.data();
  float* const rows[3] = {out[0], C == 3 ? out[1] : nullptr,
                          C == 3 ? out[2] : nullptr};
  int x = 0;
  for (size_t k = 0; k < blocks; ++k, x += 16) {
    const uint8_t* table = row + static_cast<size_t>(block_first[k]) * C;
    __m512i t0 = _mm512_loadu_si512(table);
    __m512i t1 = _mm512_loadu_si512(table + 64);
    __m512i a = _mm512_permutex2var_epi8(
      t0, _mm512_loadu_si512(first_tap + k * 64), t1);
    __m512i b = _mm512_permutex2var_epi8(
      t0, _mm512_loadu_si512(second_tap + k * 64), t1);
    __m512 wv = _mm512_loadu_ps(w + x);
    _mm512_storeu_ps(rows[0] + x,
                     lerp16(channel(_mm512_castsi512_si128(a)),
                            channel(_mm512_castsi512_si128(b)), wv));
    if constexpr (C == 3) {
      _mm512_storeu_ps(rows[1] + x,
                       lerp16(channel(_mm512_extracti32x4_epi32(a, 1)),
                              channel(_mm512_extracti32x4_epi32(b, 1)), wv));
      _mm512_storeu_ps(rows[2] + x,
                       lerp16(channel(_mm512_extracti32x4_epi32(a, 2)),
                              channel(_mm512_extracti32x4_epi32(b, 2)), wv));
    }
  }
  for (; x < n; ++x) {
    const uint8_t* q =
      row + static_cast<size_t>(p.offsets[static_cast<size_t>(x)]);
    for (int c = 0; c < C; ++c) {
      auto first = static_cast<float>(q[c]);
      out[c][x] = first + w[x] * (static_cast<float>(q[C + c]) - first);
    }
  }
}

#pragma GCC diagnostic pop

#endif

// Along y, finished: out[i] = (top + wy * (bottom - top)) * scale + shift.
// Twins as widen_row's (the same operations in the same order, no FMA
// contraction: the same bits).
void blend_rows(const float* top, const float* bottom, float wy, float scale,
                float shift, float* out, size_t n) {
  for (size_t i = 0; i < n; ++i)
    out[i] = (top[i] + wy * (bottom[i] - top[i])) * scale + shift;
}

#if defined(__x86_64__)
__attribute__((target("avx2"))) void
blend_rows_avx2(const float* top, const float* bottom, float wy, float scale,
                float shift, float* out, size_t n) {
  for (size_t i = 0; i < n; ++i)
    out[i] = (top[i] + wy * (bottom[i] - top[i])) * scale + shift;
}
#endif

template <int C>
resample_pass resample_bilinear(const cv::Mat& src, const cv::Rect2d& box,
                                const pixel_finish& finish,
                                const float_image& out, simd_path path) {
  const finish_of<C> fin{finish};
  const int out_w = out.cols;
  const auto n = static_cast<size_t>(out_w);
  bool byte_tables = false;
#if defined(__x86_64__)
  byte_tables = path == simd_path::avx512 && supports_byte_permutes();
#endif
  auto p = bilinear_for<C>(src, box, out_w, out.rows, finish.flip,
                           byte_tables);
  // Which x pass: AVX-512 where the CPU permutes bytes and every block's
  // taps fit its table, else AVX2 for three channels, else the portable
  // loop.
  enum class pass { portable, avx2, avx512 };
  pass how = pass::portable;
#if defined(__x86_64__)
  if (byte_tables && !p.block_first.empty())
    how = pass::avx512;
  else if (C == 3 && path != simd_path::portable)
    how = pass::avx2;
#endif
  // The row loops: AVX2 builds wherever the path is not the portable one.
  auto widen = widen_row;
  auto blend = blend_rows;
#if defined(__x86_64__)
  if (path != simd_path::portable) {
    widen = widen_row_avx2;
    blend = blend_rows_avx2;
  }
#endif
  // The other passes read the row widened to floats, with zeros after it
  // (a pixel and a float for lerp_along_x's vector loads). Where a tap is
  // clamped to the last column its weight is 0, so what lies after it
  // adds nothing.
  const auto row_bytes = static_cast<size_t>(p.columns) * C;
  std::vector<float> wide(how == pass::avx512 ? 0 : row_bytes + C + 1, 0.0f);
  // Two source rows along x (C rows each), keyed by the source row.
  std::vector<float> along_x(2 * C * n);
  int held[2] = {-1, -1};
  auto row = [&](int r) -> const float* {
    float* rows = along_x.data() + static_cast<size_t>(r & 1) * C * n;
    if (held[r & 1] == r)
      return rows;
    held[r & 1] = r;
    const uint8_t* in =
      src.ptr<uint8_t>(r) + static_cast<size_t>(p.first_column) * C;
    float* per_channel[C];
    for (int c = 0; c < C; ++c)
      per_channel[c] = rows + static_cast<size_t>(c) * n;
#if defined(__x86_64__)
    if (how == pass::avx512) { // reads ahead: see jpeg_region::pixels
      lerp_bytes_avx512<C>(in, p, out_w, per_channel);
      return rows;
    }
#endif
    widen(in, wide.data(), row_bytes);
#if defined(__x86_64__)
    if (how == pass::avx2) {
      lerp_along_x_rgb_avx2(wide.data(), p.offsets.data(), p.xs.w.data(),
                            out_w, per_channel);
      return rows;
    }
#endif
    lerp_along_x<C>(wide.data(), p.offsets.data(), p.xs.w.data(), out_w,
                    per_channel);
    return rows;
  };
  std::vector<float> blended(out.pixel_stride == 1 ? 0 : n);
  for (int y = 0; y < out.rows; ++y) {
    auto yi = static_cast<size_t>(y);
    const float* top = row(p.ys.lo[yi]);
    const float* bottom = row(p.ys.hi[yi]);
    for (int c = 0; c < C; ++c) {
      auto at = static_cast<size_t>(c) * n;
      if (out.pixel_stride == 1) { // planes: straight into the row
        blend(top + at, bottom + at, p.ys.w[yi], fin.scale[c], fin.shift[c],
              out.pixel(y, 0) + c * out.channel_stride, n);
        continue;
      }
      blend(top + at, bottom + at, p.ys.w[yi], fin.scale[c], fin.shift[c],
            blended.data(), n);
      for (int x = 0; x < out_w; ++x)
        out.pixel(y, x)[static_cast<size_t>(c) * out.channel_stride] =
          blended[static_cast<size_t>(x)];
    }
  }
  return how == pass::avx512 ? resample_pass::avx512
         : how == pass::avx2 ? resample_pass::avx2
         : path == simd_path::portable ? resample_pass::portable
                                       : resample_pass::avx2_rows;
}

resample_pass resample_into(const jpeg_region& r, const pixel_finish& finish,
                            const float_image& out, simd_path path) {
  auto& b = r.box;
  const int c = r.pixels.channels();
  if (r.scale < 8 || b.width > out.cols || b.height > out.rows) {
    // Reduced by the IDCT to twice the output or more (dct_scale_for), or
    // a shrink at full scale: antialiased, as torchvision's resize.
    return resample_antialiased(r, finish, out, path);
  }
  resample_pass used = resample_pass::portable;
  with_channels(c, [&](auto k) {
    used = resample_bilinear<decltype(k)::value>(r.pixels, b, finish, out,
                                                 path);
  });
  return used;
}

} // namespace

bool supports_byte_permutes() noexcept {
  return this_cpu().avx512_vbmi;
}

cv::Mat resample_region(const jpeg_region& r, int out_w, int out_h,
                        const pixel_finish& finish) {
  cv::Mat out(out_h, out_w, CV_32FC(r.pixels.channels()));
  resample_into(r, finish, float_image::hwc(out), best_simd_path());
  return out;
}

void resample_region_planes(const jpeg_region& r, int out_w, int out_h,
                            const pixel_finish& finish, float* planes) {
  resample_region_planes(r, out_w, out_h, finish, planes, best_simd_path());
}

resample_pass resample_region_planes(const jpeg_region& r, int out_w,
                                     int out_h, const pixel_finish& finish,
                                     float* planes, simd_path path) {
  return resample_into(r, finish, float_image::chw(planes, out_h, out_w),
                       path);
}

} // namespace stoker
