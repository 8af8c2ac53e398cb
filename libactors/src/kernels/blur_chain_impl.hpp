// The blur chain's body, included once by each ISA's source file after it
// defines STOKER_BLUR_NS (a namespace of its own, so nothing here is shared
// between ISAs) and `vec`: the lanes type with load, store, set1, add, mul,
// fma and transpose. No include guard, on purpose; no standard-library
// code either (its inline functions compiled for AVX-512 could be picked by
// the linker for the whole program).
//
// Every blur is separable and its borders are per axis, so its vertical
// and horizontal halves commute: the chain of `calls` blurs is all the
// vertical halves, then all the horizontal ones. Both run as one kernel,
// on strips. A strip is `lanes` columns of the plane (for the vertical
// halves) or `lanes` rows transposed (for the horizontal ones, through
// in-register lanes x lanes transposes), stored as one vector per
// position along the blurred axis, with r reflected vectors on each side.
// A strip of 224 positions is 14 KB: two of them, ping-pong, stay in L1
// through every call, and each output vector is the taps applied to
// vectors of the same lanes - aligned loads, no shuffles, no pointer
// tables. The taps are paired (w[r-k] == w[r+k]): one add and one fused
// multiply-add a pair, and each load serves up to B outputs (2r + B loads
// for B vectors instead of B * (2r + 1)).

namespace stoker::detail::STOKER_BLUR_NS {

constexpr int lanes = vec::lanes;

inline int round_up(int x, int to) { return (x + to - 1) / to * to; }

// reflect101 (blur.hpp), here again so that this ISA's copy is its own.
inline int reflect(int i, int size) {
  if (size == 1)
    return 0;
  while (i < 0 || i >= size)
    i = i < 0 ? -i : 2 * size - 2 - i;
  return i;
}

// The taps as vectors, loaded once per call: read through the float
// pointer inside the loop they would be reloaded for every vector (the
// compiler cannot tell that the pass's stores leave them alone), and each
// reload takes a load port the pass needs for its pixels.
template <int R> struct tap_vectors {
  static constexpr int size = R >= 0 ? R + 1 : 50; // radius <= 49
  typename vec::type v[size];
  tap_vectors(const float* taps, int r) {
    for (int k = 0; k <= r; ++k)
      v[k] = vec::set1(taps[r + k]);
  }
};

// One output vector: the centre tap times `at(0)` plus each pair of taps
// times the sum of its two inputs, in that order on every ISA.
template <int R, class Load>
inline typename vec::type taps_applied(const tap_vectors<R>& t, int radius,
                                       Load at) {
  const int r = R >= 0 ? R : radius;
  auto acc = vec::mul(t.v[0], at(0));
  for (int k = 1; k <= r; ++k)
    acc = vec::fma(t.v[k], vec::add(at(-k), at(k)), acc);
  return acc;
}

// Outputs made at once where the radius is known at compile time (else
// one): as many as keep the 2r + B input vectors, B sums and r + 1 taps in
// registers. Six with AVX-512's 32 registers, four otherwise.
template <int R> constexpr int block_rows = R < 0 ? 1 : lanes == 16 ? 6 : 4;

// Strip vector i at s + i * lanes, i in [-r, n + r).
inline float* at_vec(float* s, int i) { return s + i * lanes; }

// The r vectors before and after the strip's n, reflected (reflect-101).
inline void fill_borders(float* s, int n, int r) {
  for (int i = 1; i <= r; ++i) {
    vec::store(at_vec(s, -i), vec::load(at_vec(s, reflect(-i, n))));
    vec::store(at_vec(s, n - 1 + i),
               vec::load(at_vec(s, reflect(n - 1 + i, n))));
  }
}

// One blur of the strip `src` (its borders filled) into `dst`'s n vectors.
template <int R>
void blur_strip(float* src, float* dst, int n, const tap_vectors<R>& t,
                int radius) {
  const int r = R >= 0 ? R : radius;
  constexpr int B = block_rows<R>;
  int y = 0;
  if constexpr (B > 1) {
    for (; y + B <= n; y += B) {
      typename vec::type in[2 * R + B];
      for (int j = 0; j < 2 * R + B; ++j)
        in[j] = vec::load(at_vec(src, y - R + j));
      for (int b = 0; b < B; ++b)
        vec::store(at_vec(dst, y + b), taps_applied<R>(t, R, [&in, b](int k) {
                     return in[b + R + k];
                   }));
    }
  }
  for (; y < n; ++y)
    vec::store(at_vec(dst, y), taps_applied<R>(t, r, [src, y](int k) {
                 return vec::load(at_vec(src, y + k));
               }));
}

// Every call's blur of the strip in `a` (n vectors, room for r on each
// side), ping-pong with `b`. Returns the one holding the result.
template <int R>
float* blur_strip_calls(float* a, float* b, int n, const float* taps, int calls,
                        int r) {
  for (int c = 0; c < calls; ++c) {
    const tap_vectors<R> t{taps + c * (2 * r + 1), r};
    fill_borders(a, n, r);
    blur_strip<R>(a, b, n, t, r);
    float* done = b;
    b = a;
    a = done;
  }
  return a;
}

// Columns x0 .. x0 + m - 1 of the h x w plane to the strip (one vector per
// row; lanes past m zero, computed and never written back), and back.
inline void columns_to_strip(const float* plane, int h, int w, int x0, int m,
                             float* s) {
  for (int y = 0; y < h; ++y) {
    const float* row = plane + y * w + x0;
    float* v = at_vec(s, y);
    if (m == lanes) {
      vec::store(v, vec::load(row));
      continue;
    }
    for (int i = 0; i < lanes; ++i)
      v[i] = i < m ? row[i] : 0.0f;
  }
}

inline void strip_to_columns(const float* s, float* plane, int h, int w, int x0,
                             int m) {
  for (int y = 0; y < h; ++y) {
    float* row = plane + y * w + x0;
    const float* v = s + y * lanes;
    if (m == lanes) {
      vec::store(row, vec::load(v));
      continue;
    }
    for (int i = 0; i < m; ++i)
      row[i] = v[i];
  }
}

// Rows y0 .. y0 + m - 1 of the plane to the strip transposed (one vector
// per column, lane i from row y0 + i), and back: full lanes x lanes blocks
// through registers, the plane's ragged edges element by element.
inline void rows_to_strip(const float* plane, int w, int y0, int m, float* s) {
  int x0 = 0;
  if (m == lanes) {
    for (; x0 + lanes <= w; x0 += lanes) {
      typename vec::type block[lanes];
      for (int i = 0; i < lanes; ++i)
        block[i] = vec::load(plane + (y0 + i) * w + x0);
      vec::transpose(block);
      for (int j = 0; j < lanes; ++j)
        vec::store(at_vec(s, x0 + j), block[j]);
    }
  }
  for (int x = x0; x < w; ++x) {
    float* v = at_vec(s, x);
    for (int i = 0; i < lanes; ++i)
      v[i] = i < m ? plane[(y0 + i) * w + x] : 0.0f;
  }
}

inline void strip_to_rows(const float* s, float* plane, int w, int y0, int m) {
  int x0 = 0;
  if (m == lanes) {
    for (; x0 + lanes <= w; x0 += lanes) {
      typename vec::type block[lanes];
      for (int j = 0; j < lanes; ++j)
        block[j] = vec::load(s + (x0 + j) * lanes);
      vec::transpose(block);
      for (int i = 0; i < lanes; ++i)
        vec::store(plane + (y0 + i) * w + x0, block[i]);
    }
  }
  for (int x = x0; x < w; ++x)
    for (int i = 0; i < m; ++i)
      plane[(y0 + i) * w + x] = s[x * lanes + i];
}

// Floats one strip buffer takes: `length` vectors and r on each side.
inline int strip_floats(int length, int r) { return (length + 2 * r) * lanes; }

template <int R>
void blur_plane(float* plane, int h, int w, const float* taps, int calls,
                int radius, float* scratch) {
  const int r = R >= 0 ? R : radius;
  const int length = h > w ? h : w;
  float* a = scratch + r * lanes;
  float* b = scratch + strip_floats(length, r) + r * lanes;
  for (int x0 = 0; x0 < w; x0 += lanes) { // the vertical halves
    int m = w - x0 < lanes ? w - x0 : lanes;
    columns_to_strip(plane, h, w, x0, m, a);
    strip_to_columns(blur_strip_calls<R>(a, b, h, taps, calls, r), plane, h, w,
                     x0, m);
  }
  for (int y0 = 0; y0 < h; y0 += lanes) { // the horizontal halves
    int m = h - y0 < lanes ? h - y0 : lanes;
    rows_to_strip(plane, w, y0, m, a);
    strip_to_rows(blur_strip_calls<R>(a, b, w, taps, calls, r), plane, w, y0,
                  m);
  }
}

inline void run_chain(float* plane, uint32_t h, uint32_t w, const float* taps,
                      uint32_t calls, uint32_t radius,
                      float* scratch) noexcept {
  int r = static_cast<int>(radius), c = static_cast<int>(calls);
  int hi = static_cast<int>(h), wi = static_cast<int>(w);
  // The common radii with the tap loop unrolled at compile time.
  switch (r) {
  case 0:
    blur_plane<0>(plane, hi, wi, taps, c, r, scratch);
    break;
  case 1:
    blur_plane<1>(plane, hi, wi, taps, c, r, scratch);
    break;
  case 2:
    blur_plane<2>(plane, hi, wi, taps, c, r, scratch);
    break;
  case 3:
    blur_plane<3>(plane, hi, wi, taps, c, r, scratch);
    break;
  case 4:
    blur_plane<4>(plane, hi, wi, taps, c, r, scratch);
    break;
  case 5:
    blur_plane<5>(plane, hi, wi, taps, c, r, scratch);
    break;
  case 6:
    blur_plane<6>(plane, hi, wi, taps, c, r, scratch);
    break;
  case 7:
    blur_plane<7>(plane, hi, wi, taps, c, r, scratch);
    break;
  default:
    blur_plane<-1>(plane, hi, wi, taps, c, r, scratch);
    break;
  }
}

// The arithmetic ceilings (blur_chain.hpp's fp_peak_*): `Chains`
// independent accumulators of each kind, as many as the registers hold
// beside the constants (16 with AVX-512's 32 registers, 12 with AVX2's 16:
// more than latency x ports on any x86 core, 4 x 2 to 5 x 2), so the
// units, not a dependency, set the rate. One chain alone shows the
// latency. Returns the vector instructions issued.
constexpr int peak_chains = lanes == 16 ? 16 : 12;

template <int Chains, bool Fma, bool Add>
inline uint64_t fp_peak(uint64_t iterations, float* sink) {
  typename vec::type f[Chains], s[Chains];
  for (int i = 0; i < Chains; ++i)
    f[i] = s[i] = vec::set1(static_cast<float>(i) * 1e-3f);
  const auto a = vec::set1(0.999999f), b = vec::set1(1e-7f);
  for (uint64_t n = 0; n < iterations; ++n)
    for (int i = 0; i < Chains; ++i) {
      if constexpr (Fma)
        f[i] = vec::fma(f[i], a, b);
      if constexpr (Add)
        s[i] = vec::add(s[i], b);
    }
  auto sum = vec::add(f[0], s[0]);
  for (int i = 1; i < Chains; ++i)
    sum = vec::add(sum, vec::add(f[i], s[i]));
  vec::store(sink, sum);
  return iterations * Chains * ((Fma ? 1 : 0) + (Add ? 1 : 0));
}

inline fp_peaks peaks(uint64_t iterations, float* sink, double (*now)()) {
  // The mixed stream issues both kinds 1:1 on separate chains: where adds
  // share the FMA units (older Intel cores) it runs at their rate, where
  // they have units of their own (AMD Zen) at up to twice it.
  constexpr int half = peak_chains / 2;
  fp_peaks out;
  out.lanes = lanes;
  out.chains = peak_chains;
  auto rate = [&](auto probe, uint64_t n) {
    auto t0 = now();
    auto ops = probe(n, sink);
    return static_cast<double>(ops) / (now() - t0);
  };
  out.fma_per_s = rate(fp_peak<peak_chains, true, false>, iterations);
  out.add_per_s = rate(fp_peak<peak_chains, false, true>, iterations);
  out.mixed_per_s = rate(fp_peak<half, true, true>, iterations);
  out.fma_one_chain_per_s
    = rate(fp_peak<1, true, false>, iterations * peak_chains / 4);
  return out;
}

} // namespace stoker::detail::STOKER_BLUR_NS
