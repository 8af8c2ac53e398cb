// The antialiased half of the fused start's resample: torchvision's
// Resize and RandomResizedCrop on PIL images filter every shrink with a
// triangle as wide as the shrink (PIL's bilinear), so the fused start does
// too, for a box the IDCT reduced and for any box that shrinks at full
// scale.
//
// Two passes. Along x, from the 8-bit source rows the filter's y taps
// need (a ring of them, each made once): integer arithmetic, the taps in
// 14-bit fixed point, so that every twin gives the same sums whatever the
// order (a row's sum, at most 255 * 2^14, is exact as a float too). Along
// y, float rows weighed and finished (ToTensor, Normalize) into the output,
// each element's operations in one order in every twin (no FMA
// contraction: libactors builds with -ffp-contract=off).
//
// The x pass is the costly one: per output and channel as many taps as
// the filter is wide (3-5 for the 1-2x shrinks of ImageNet photos, twice
// bilinear's). The AVX-512 VBMI twin does 16 outputs of one channel a
// step: a block's taps lie within 128 bytes of the row, and a zero-masking
// byte permute fetches two taps of each output as 16-bit words, which one
// multiply-add (vpmaddwd) weighs and sums in pairs. Past a shrink of
// about 2.2 (three channels) the 128 bytes come from each channel's plane
// of the row instead (split by byte permutes); past about 7, where a
// block's taps span more than that, the portable loop makes the block.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#if defined(__x86_64__)
#  include <immintrin.h>
#endif

#include "kernels/region_resample_parts.hpp"

namespace stoker::resample_detail {

namespace {

constexpr int fixed_bits = 14; // x taps: weight * 2^14, as int16
constexpr int block = 16;      // outputs a VBMI step makes

// One axis of the filter over [start, start + length), taps clamped to
// [bound_lo, bound_hi) and the `size` pixels there are; the weights sum
// to 1.
using filter_bank = tap_bank<float>;

filter_bank triangle_taps(double start, double length, int out, int size,
                          double bound_lo, double bound_hi) {
  filter_bank f;
  const double scale = length / out;
  const double support = std::max(1.0, scale);
  const double reach = 1.0 / support;
  const int lo_bound = std::max(0, static_cast<int>(std::floor(bound_lo)));
  const int hi_bound = std::min(size, static_cast<int>(std::ceil(bound_hi)));
  f.width = static_cast<int>(std::ceil(2.0 * support)) + 2;
  const auto width = static_cast<size_t>(f.width);
  f.first.resize(static_cast<size_t>(out));
  f.count.resize(static_cast<size_t>(out));
  f.weights.assign(static_cast<size_t>(out) * width, 0.0f);
  std::vector<double> w(width);
  for (int i = 0; i < out; ++i) {
    const double center = start + (i + 0.5) * scale;
    int lo = std::max(static_cast<int>(std::floor(center - support)),
                      lo_bound);
    int hi = std::min(static_cast<int>(std::ceil(center + support)),
                      hi_bound);
    hi = std::clamp(hi, lo + 1, lo + f.width);
    auto n = static_cast<size_t>(hi - lo);
    double sum = 0;
    for (size_t k = 0; k < n; ++k) {
      double d = std::abs((lo + static_cast<double>(k) + 0.5 - center)
                          * reach);
      w[k] = std::max(0.0, 1.0 - d);
      sum += w[k];
    }
    // Taps of weight 0 at either end dropped: the passes' work grows with
    // the count (a 1.5x shrink: 3 or 4 taps, not 5).
    size_t skip = 0;
    if (sum > 0) {
      while (w[skip] == 0.0)
        ++skip;
      while (w[n - 1] == 0.0)
        --n;
    }
    auto* row = f.weights.data() + static_cast<size_t>(i) * width;
    const double norm = sum > 0 ? 1.0 / sum : 0.0;
    for (size_t k = skip; k < n; ++k) // none reach: the nearest alike
      row[k - skip] = static_cast<float>(
        sum > 0 ? w[k] * norm : 1.0 / static_cast<double>(n));
    f.first[static_cast<size_t>(i)] = lo + static_cast<int>(skip);
    f.count[static_cast<size_t>(i)] = static_cast<int>(n - skip);
    f.most = std::max(f.most, f.count[static_cast<size_t>(i)]);
  }
  return f;
}

// The x taps as the integer passes read them, in output order (mirrored
// with the flip), and the VBMI pass's tables.
struct x_plan {
  std::vector<int> first;
  std::vector<int> count;
  std::vector<int16_t> fixed; // `taps` a row (even; zeros past count)
  int taps = 0;
  int pairs = 0;
  // Where the VBMI pass reads its tables (the row, channel c's indices
  // plus c, or each channel's plane: plan_vbmi_blocks). Per block and
  // pair of taps: the permute's 64 index bytes (byte 4m: the first tap of
  // output m, 4m + 2 the second; odd bytes zeroed by the mask), and the 16
  // outputs' two weights as int32 lanes (the low word the first tap's).
  vbmi_blocks blocks;
  std::vector<uint8_t> index;
  std::vector<int32_t> pair_weights;
};

template <int C>
x_plan x_plan_for(const filter_bank& f, bool flip, bool byte_tables) {
  x_plan p;
  const auto n = f.first.size();
  p.taps = (f.most + 1) / 2 * 2;
  p.pairs = p.taps / 2;
  p.first = f.first;
  p.count = f.count;
  p.fixed.assign(n * static_cast<size_t>(p.taps), 0);
  for (size_t x = 0; x < n; ++x) {
    const float* w = f.weights.data() + x * static_cast<size_t>(f.width);
    int16_t* q = p.fixed.data() + x * static_cast<size_t>(p.taps);
    // Rounded, then the largest tap takes what rounding lost: the taps
    // sum to exactly 2^14, so a flat area stays flat.
    int sum = 0;
    size_t largest = 0;
    for (size_t k = 0; k < static_cast<size_t>(f.count[x]); ++k) {
      // Round half up (the weights are not negative).
      q[k] = static_cast<int16_t>(w[k] * (1 << fixed_bits) + 0.5f);
      sum += q[k];
      if (q[k] > q[largest])
        largest = k;
    }
    q[largest] = static_cast<int16_t>(q[largest] + (1 << fixed_bits) - sum);
  }
  if (flip) {
    std::reverse(p.first.begin(), p.first.end());
    std::reverse(p.count.begin(), p.count.end());
    const auto t = static_cast<size_t>(p.taps);
    for (size_t a = 0, b = n - 1; a < b; ++a, --b)
      std::swap_ranges(p.fixed.begin() + static_cast<long>(a * t),
                       p.fixed.begin() + static_cast<long>((a + 1) * t),
                       p.fixed.begin() + static_cast<long>(b * t));
  }
  if (!byte_tables)
    return p;
  const size_t blocks = n / block;
  const auto pairs = static_cast<size_t>(p.pairs);
  // From the row itself where every block's taps fit 128 bytes of it
  // (shrinks up to about 2.2 for three channels), else from planes.
  p.blocks = plan_vbmi_blocks(p.first, p.count, C);
  const int stride = p.blocks.planar ? 1 : C;
  p.index.assign(blocks * pairs * 64, 0);
  p.pair_weights.assign(blocks * pairs * block, 0);
  for (size_t b = 0; b < blocks; ++b) {
    const auto* first = p.first.data() + b * block;
    const int least = p.blocks.starts[b];
    if (least < 0)
      continue;
    for (size_t m = 0; m < block; ++m) {
      const int16_t* q =
        p.fixed.data() + (b * block + m) * static_cast<size_t>(p.taps);
      // A tap past the output's count weighs 0: any byte will do (the
      // permute reads an index's low 7 bits).
      const int at = (first[m] - least) * stride;
      for (size_t j = 0; j < pairs; ++j) {
        auto* idx = p.index.data() + (b * pairs + j) * 64 + 4 * m;
        idx[0] = static_cast<uint8_t>(at + static_cast<int>(2 * j) * stride);
        idx[2] =
          static_cast<uint8_t>(at + static_cast<int>(2 * j + 1) * stride);
        auto lo = static_cast<uint16_t>(q[2 * j]);
        auto hi = static_cast<uint16_t>(q[2 * j + 1]);
        p.pair_weights[(b * pairs + j) * block + m] =
          static_cast<int32_t>(static_cast<uint32_t>(hi) << 16 | lo);
      }
    }
  }
  return p;
}

// Outputs [from, to) of one source row along x, one float row per
// channel: out_c[x] = sum over k < count[x] of fixed[x][k] * px(first[x]
// + k)_c. The portable twin (also the VBMI pass's remainder).
template <int C>
void weigh_along_x(const uint8_t* row, const x_plan& p, int from, int to,
                   float* const* out) {
  for (int x = from; x < to; ++x) {
    const auto xi = static_cast<size_t>(x);
    const int16_t* q = p.fixed.data() + xi * static_cast<size_t>(p.taps);
    const uint8_t* px = row + static_cast<size_t>(p.first[xi]) * C;
    for (int c = 0; c < C; ++c) {
      int32_t acc = 0;
      for (int k = 0; k < p.count[xi]; ++k)
        acc += px[k * C + c] * q[k];
      out[c][xi] = static_cast<float>(acc);
    }
  }
}

#if defined(__x86_64__)
// GCC 12 warns about _mm512_undefined_* inside its own headers.
#  pragma GCC diagnostic push
#  pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#  pragma GCC diagnostic ignored "-Wuninitialized"
// One block of 16 outputs, `Pairs` pairs of taps (0: the plan's count)
// with their indices and weights in registers: each channel's table at
// planes[c] + at with `Planar`, else at planes[0] + at * C (the row),
// channel c's indices plus c.
template <int C, int Pairs, bool Planar>
__attribute__((target("avx512f,avx512bw,avx512vbmi"))) inline void
weigh_block_vbmi(const uint8_t* const* planes, size_t at,
                 const uint8_t* index, const int32_t* w, int pairs,
                 float* const* out, int x) {
  constexpr int held = Pairs > 0 ? Pairs : 1;
  const int n = Pairs > 0 ? Pairs : pairs;
  const __mmask64 even = 0x5555555555555555ULL;
  __m512i idx[held], wv[held];
  for (int j = 0; j < Pairs; ++j) {
    idx[j] = _mm512_loadu_si512(index + j * 64);
    wv[j] = _mm512_loadu_si512(w + j * block);
  }
  __m512i t0, t1;
  if constexpr (!Planar) {
    t0 = _mm512_loadu_si512(planes[0] + at * C);
    t1 = _mm512_loadu_si512(planes[0] + at * C + 64);
  }
  for (int c = 0; c < C; ++c) {
    if constexpr (Planar) {
      t0 = _mm512_loadu_si512(planes[c] + at);
      t1 = _mm512_loadu_si512(planes[c] + at + 64);
    }
    const __m512i shift = _mm512_set1_epi8(static_cast<char>(Planar ? 0 : c));
    __m512i acc = _mm512_setzero_si512();
    for (int j = 0; j < n; ++j) {
      __m512i i = _mm512_add_epi8(
        Pairs > 0 ? idx[j] : _mm512_loadu_si512(index + j * 64), shift);
      __m512i wj = Pairs > 0 ? wv[j] : _mm512_loadu_si512(w + j * block);
      __m512i taps = _mm512_maskz_permutex2var_epi8(even, t0, i, t1);
      acc = _mm512_add_epi32(acc, _mm512_madd_epi16(taps, wj));
    }
    _mm512_storeu_ps(out[c] + x, _mm512_cvtepi32_ps(acc));
  }
}

// The VBMI twin: each channel from its plane (`planes[c]`, holding the
// plan's columns of the row with jpeg_region::read_ahead readable bytes
// after them, which a block's table may take in; a tap there
// weighs 0); blocks whose taps span more, and the outputs after the last
// whole block, from the row itself as the portable twin does.
template <int C, int Pairs, bool Planar>
__attribute__((target("avx512f,avx512bw,avx512vbmi"))) void
weigh_along_x_vbmi(const uint8_t* row, const uint8_t* const* planes,
                   const x_plan& p, int n, float* const* out) {
  // Local copies: the stores below could alias the plan's vectors for all
  // the compiler knows.
  const int* block_first = p.blocks.starts.data();
  const size_t blocks = p.blocks.starts.size();
  const uint8_t* index = p.index.data();
  const int32_t* weights = p.pair_weights.data();
  const auto pairs = static_cast<size_t>(p.pairs);
  const int col_lo = p.blocks.col_lo;
  for (size_t b = 0; b < blocks; ++b) {
    const int x = static_cast<int>(b) * block;
    if (block_first[b] < 0) {
      weigh_along_x<C>(row, p, x, x + block, out);
      continue;
    }
    weigh_block_vbmi<C, Pairs, Planar>(
      planes, static_cast<size_t>(block_first[b] - col_lo),
      index + b * pairs * 64, weights + b * pairs * block, p.pairs, out, x);
  }
  weigh_along_x<C>(row, p, static_cast<int>(blocks) * block, n, out);
}

// The VBMI x pass for the plan's number of pairs and tables.
template <int C, bool Planar>
void weigh_along_x_vbmi_any(const uint8_t* row, const uint8_t* const* planes,
                            const x_plan& p, int n, float* const* out) {
  switch (p.pairs) {
  case 1: weigh_along_x_vbmi<C, 1, Planar>(row, planes, p, n, out); break;
  case 2: weigh_along_x_vbmi<C, 2, Planar>(row, planes, p, n, out); break;
  case 3: weigh_along_x_vbmi<C, 3, Planar>(row, planes, p, n, out); break;
  case 4: weigh_along_x_vbmi<C, 4, Planar>(row, planes, p, n, out); break;
  default: weigh_along_x_vbmi<C, 0, Planar>(row, planes, p, n, out);
  }
}
#  pragma GCC diagnostic pop
#endif

// Along y, finished: out[i] = (sum over k of w[k] * rows[k][i]) * scale +
// shift, the sum in k's order from the first product (count >= 1). The
// portable twin; the vector ones do each lane's operations in the same
// order (the same bits).
void weigh_along_y(const float* const* rows, const float* w, int count,
                   float scale, float shift, float* out, size_t n,
                   size_t from = 0) {
  for (size_t i = from; i < n; ++i) {
    float acc = w[0] * rows[0][i];
    for (int k = 1; k < count; ++k)
      acc = acc + w[k] * rows[k][i];
    out[i] = acc * scale + shift;
  }
}

#if defined(__x86_64__)
// The vector twins, 8 and 16 floats a step (GCC's vector types): per tap
// count up to 8 a loop with the rows and weights held in locals (a tap is
// a load, a multiply and an add), a generic loop past that; the rest of
// the row portable. One body, always inlined into each ISA's function,
// whose target attribute lets it use the wide registers.
typedef float floats8 __attribute__((vector_size(32)));
typedef float floats16 __attribute__((vector_size(64)));

template <class V, int K>
__attribute__((always_inline)) inline size_t
weigh_y_lanes(const float* const* rows, const float* w, int count,
              float scale, float shift, float* out, size_t n) {
  constexpr size_t lanes = sizeof(V) / sizeof(float);
  constexpr int held = K > 0 ? K : 1;
  const int taps = K > 0 ? K : count;
  const float* r[held];
  float wk[held];
  for (int k = 0; k < K; ++k) {
    r[k] = rows[k];
    wk[k] = w[k];
  }
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    V x;
    __builtin_memcpy(&x, (K > 0 ? r[0] : rows[0]) + i, sizeof x);
    V acc = (K > 0 ? wk[0] : w[0]) * x;
    for (int k = 1; k < taps; ++k) {
      __builtin_memcpy(&x, (K > 0 ? r[k] : rows[k]) + i, sizeof x);
      acc = acc + (K > 0 ? wk[k] : w[k]) * x;
    }
    V done = acc * scale + shift;
    __builtin_memcpy(out + i, &done, sizeof done);
  }
  return i;
}

template <int K>
__attribute__((target("avx2"))) size_t
weigh_y_avx2(const float* const* rows, const float* w, int count,
             float scale, float shift, float* out, size_t n) {
  return weigh_y_lanes<floats8, K>(rows, w, count, scale, shift, out, n);
}

template <int K>
__attribute__((target("avx512f"))) size_t
weigh_y_avx512(const float* const* rows, const float* w, int count,
               float scale, float shift, float* out, size_t n) {
  return weigh_y_lanes<floats16, K>(rows, w, count, scale, shift, out, n);
}

// Per tap count (0: any), the part of a row the vector code makes.
using weigh_y_part = size_t (*)(const float* const*, const float*, int,
                                float, float, float*, size_t);

template <const weigh_y_part* Parts>
void weigh_y_with(const float* const* rows, const float* w, int count,
                  float scale, float shift, float* out, size_t n) {
  auto part = Parts[count <= 8 ? count : 0];
  size_t done = part(rows, w, count, scale, shift, out, n);
  weigh_along_y(rows, w, count, scale, shift, out, n, done);
}

constexpr weigh_y_part avx2_parts[] = {
  weigh_y_avx2<0>, weigh_y_avx2<1>, weigh_y_avx2<2>, weigh_y_avx2<3>,
  weigh_y_avx2<4>, weigh_y_avx2<5>, weigh_y_avx2<6>, weigh_y_avx2<7>,
  weigh_y_avx2<8>};
constexpr weigh_y_part avx512_parts[] = {
  weigh_y_avx512<0>, weigh_y_avx512<1>, weigh_y_avx512<2>,
  weigh_y_avx512<3>, weigh_y_avx512<4>, weigh_y_avx512<5>,
  weigh_y_avx512<6>, weigh_y_avx512<7>, weigh_y_avx512<8>};
#endif

template <int C>
resample_pass antialiased(const jpeg_region& r, const pixel_finish& finish,
                          const float_image& out, simd_path path) {
  const auto& b = r.box;
  const auto& o = r.bounds.area() > 0 ? r.bounds : b;
  const auto xs = triangle_taps(b.x, b.width, out.cols, r.pixels.cols, o.x,
                                o.x + o.width);
  const auto ys = triangle_taps(b.y, b.height, out.rows, r.pixels.rows, o.y,
                                o.y + o.height);
  bool vbmi = false;
#if defined(__x86_64__)
  vbmi = path == simd_path::avx512 && supports_byte_permutes();
#endif
  const auto p = x_plan_for<C>(xs, finish.flip, vbmi);
  vbmi = vbmi && std::any_of(p.blocks.starts.begin(), p.blocks.starts.end(),
                             [](int f) { return f >= 0; });
  using weigh_y_fn = void (*)(const float* const*, const float*, int, float,
                              float, float*, size_t);
  weigh_y_fn weigh_y = [](const float* const* rows, const float* w,
                          int count, float scale, float shift, float* dst,
                          size_t n) {
    weigh_along_y(rows, w, count, scale, shift, dst, n);
  };
#if defined(__x86_64__)
  if (path == simd_path::avx2)
    weigh_y = weigh_y_with<avx2_parts>;
  else if (path == simd_path::avx512)
    weigh_y = weigh_y_with<avx512_parts>;
#endif
  const int out_w = out.cols;
  const auto n = static_cast<size_t>(out_w);
  // A ring of source rows along x (C float rows each), keyed by the source
  // row: the y taps of one output are consecutive rows, at most ys.width
  // of them, moving down with the output, so each is made once.
  const auto slots = static_cast<size_t>(ys.width) + 1;
  std::vector<float> ring(slots * C * n);
  std::vector<int> held(slots, -1);
  // The VBMI pass's planes of a three-channel row (one channel's plane is
  // the row).
  const auto plane = static_cast<size_t>(p.blocks.col_hi - p.blocks.col_lo)
                     + jpeg_region::read_ahead;
  std::vector<uint8_t> split(p.blocks.planar && vbmi ? 3 * plane : 0);
  auto row = [&](int y) -> const float* {
    const auto slot = static_cast<size_t>(y) % slots;
    float* rows = ring.data() + slot * C * n;
    if (held[slot] == y)
      return rows;
    held[slot] = y;
    float* per_channel[C];
    for (int c = 0; c < C; ++c)
      per_channel[c] = rows + static_cast<size_t>(c) * n;
    const uint8_t* in = r.pixels.ptr<uint8_t>(y);
#if defined(__x86_64__)
    if (vbmi) { // reads ahead: see jpeg_region::pixels
      const auto& cols = p.blocks;
      const uint8_t* planes[C] = {in + static_cast<size_t>(cols.col_lo) * C};
      if constexpr (C == 3) {
        if (cols.planar) {
          uint8_t* to[3] = {split.data(), split.data() + plane,
                            split.data() + 2 * plane};
          split_channels_vbmi(planes[0],
                              static_cast<size_t>(cols.col_hi - cols.col_lo),
                              to);
          for (int c = 0; c < 3; ++c)
            planes[c] = to[c];
          weigh_along_x_vbmi_any<C, true>(in, planes, p, out_w, per_channel);
          return rows;
        }
      }
      weigh_along_x_vbmi_any<C, false>(in, planes, p, out_w, per_channel);
      return rows;
    }
#endif
    weigh_along_x<C>(in, p, 0, out_w, per_channel);
    return rows;
  };
  const finish_of<C> fin{finish};
  constexpr float unfixed = 1.0f / (1 << fixed_bits); // exact
  std::vector<float> finished(out.pixel_stride == 1 ? 0 : n);
  // Per output row its y taps' rows, and the same per channel.
  std::vector<const float*> taps(static_cast<size_t>(ys.width));
  std::vector<const float*> channel_taps(taps.size());
  for (int y = 0; y < out.rows; ++y) {
    const auto yi = static_cast<size_t>(y);
    const int count = ys.count[yi];
    for (int k = 0; k < count; ++k)
      taps[static_cast<size_t>(k)] = row(ys.first[yi] + k);
    const float* w = ys.weights.data() + yi * static_cast<size_t>(ys.width);
    for (int c = 0; c < C; ++c) {
      const auto at = static_cast<size_t>(c) * n;
      for (size_t k = 0; k < static_cast<size_t>(count); ++k)
        channel_taps[k] = taps[k] + at;
      const float scale = fin.scale[c] * unfixed;
      if (out.pixel_stride == 1) { // planes: straight into the row
        weigh_y(channel_taps.data(), w, count, scale, fin.shift[c],
                out.pixel(y, 0) + c * out.channel_stride, n);
        continue;
      }
      weigh_y(channel_taps.data(), w, count, scale, fin.shift[c],
              finished.data(), n);
      for (int x = 0; x < out_w; ++x)
        out.pixel(y, x)[static_cast<size_t>(c) * out.channel_stride] =
          finished[static_cast<size_t>(x)];
    }
  }
  return vbmi ? resample_pass::antialiased_avx512
              : resample_pass::antialiased;
}

} // namespace

#if defined(__x86_64__)
namespace {

struct split_tables {
  alignas(64) uint8_t from_first[3][64] = {};
  alignas(64) uint8_t from_last[3][64] = {};
  uint64_t last[3] = {};
};

constexpr split_tables make_split_tables() {
  split_tables t;
  for (int c = 0; c < 3; ++c)
    for (int i = 0; i < 64; ++i) {
      const int at = 3 * i + c;
      t.from_first[c][i] = static_cast<uint8_t>(at & 127);
      t.from_last[c][i] = static_cast<uint8_t>((at - 64) & 127);
      if (at >= 128)
        t.last[c] |= uint64_t{1} << i;
    }
  return t;
}

constexpr split_tables split_table = make_split_tables();

} // namespace

// Of the 192 bytes a step reads, two byte permutes fetch a plane's bytes
// from the first 128 and from the last 128, and a mask blends them.
__attribute__((target("avx512f,avx512bw,avx512vbmi"))) void
split_channels_vbmi(const uint8_t* in, size_t n, uint8_t* const* out) {
  const auto& from_first = split_table.from_first;
  const auto& from_last = split_table.from_last;
  const auto& last = split_table.last;
  size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    const uint8_t* p = in + 3 * i;
    const __m512i z0 = _mm512_loadu_si512(p);
    const __m512i z1 = _mm512_loadu_si512(p + 64);
    const __m512i z2 = _mm512_loadu_si512(p + 128);
    for (int c = 0; c < 3; ++c) {
      __m512i a = _mm512_permutex2var_epi8(
        z0, _mm512_load_si512(from_first[c]), z1);
      __m512i b = _mm512_permutex2var_epi8(
        z1, _mm512_load_si512(from_last[c]), z2);
      _mm512_storeu_si512(out[c] + i, _mm512_mask_blend_epi8(last[c], a, b));
    }
  }
  for (; i < n; ++i)
    for (int c = 0; c < 3; ++c)
      out[c][i] = in[3 * i + static_cast<size_t>(c)];
}

#endif

resample_pass resample_antialiased(const jpeg_region& r,
                                   const pixel_finish& finish,
                                   const float_image& out, simd_path path) {
  resample_pass used = resample_pass::antialiased;
  with_channels(r.pixels.channels(), [&](auto k) {
    used = antialiased<decltype(k)::value>(r, finish, out, path);
  });
  return used;
}

} // namespace stoker::resample_detail
