// The blur chain's body, included once by each ISA's source file after it
// defines STOKER_BLUR_NS (a namespace of its own, so nothing here is shared
// between ISAs) and `vec`: the lanes type with load, store, set1, add, mul
// and fma. No include guard, on purpose; no standard-library code either
// (its inline functions compiled for AVX-512 could be picked by the linker
// for the whole program).
//
// One blur of one plane, in place, in one sweep: each source row is blurred
// horizontally once into a ring of rows (L1-sized: 14 rows of 224 floats
// are 12.5 KB), and output rows are the vertical blur of the ring's rows
// reflect(y - r .. y + r) as soon as their last source row is in, several
// at a time where the radius is known at compile time (a ring of 2r + B
// rows, see block_rows), one by one otherwise. Row y of the plane is free to overwrite then: every
// source row it was needed for is in the ring already. So a blur reads and
// writes the plane once (it stays in L2 through the chain), and the taps
// are paired (w[r-k] == w[r+k]): one add and one fused multiply-add a pair.

namespace stoker::detail::STOKER_BLUR_NS {

constexpr int lanes = vec::lanes;
constexpr int max_lanes = 16; // the widest ISA: ring rows are padded to it

inline int round_up(int x, int to) {
  return (x + to - 1) / to * to;
}

// reflect101 (blur.hpp), here again so that this ISA's copy is its own.
inline int reflect(int i, int size) {
  if (size == 1)
    return 0;
  while (i < 0 || i >= size)
    i = i < 0 ? -i : 2 * size - 2 - i;
  return i;
}

// The taps as vectors, loaded once per pass: read through the float
// pointer inside the loop they would be reloaded for every vector (the
// compiler cannot tell that the pass's stores leave them alone), and each
// reload takes a load port the pass needs for its pixels.
template <int R>
struct tap_vectors {
  static constexpr int size = R >= 0 ? R + 1 : 50; // radius <= 49
  typename vec::type v[size];
  tap_vectors(const float* taps, int r) {
    for (int k = 0; k <= r; ++k)
      v[k] = vec::set1(taps[r + k]);
  }
};

// One output vector of a pass: the centre tap times `at(0)` plus each pair
// of taps times the sum of its two inputs, in that order on every ISA.
template <int R, class Load>
inline typename vec::type taps_applied(const tap_vectors<R>& t, int radius,
                                       Load at) {
  const int r = R >= 0 ? R : radius;
  auto acc = vec::mul(t.v[0], at(0));
  for (int k = 1; k <= r; ++k)
    acc = vec::fma(t.v[k], vec::add(at(-k), at(k)), acc);
  return acc;
}

// Horizontal blur of `src` (w floats) into `dst` (full vectors: dst has
// round_up(w, max_lanes) floats). Vectors whose taps stay inside the row
// read `src` itself; the others read `pad`, the row with r reflected
// pixels on each side, written first and read last: a load that spans
// stores still in flight cannot be forwarded and waits for them.
template <int R>
void row_pass(const float* src, float* dst, int w, const float* taps,
              int radius, float* pad) {
  const int r = R >= 0 ? R : radius;
  for (int i = 0; i < r; ++i) {
    pad[i] = src[reflect(i - r, w)];
    pad[r + w + i] = src[reflect(w + i, w)];
  }
  for (int x = 0; x < w; ++x)
    pad[r + x] = src[x];
  for (int x = w + 2 * r, end = round_up(w, lanes) + 2 * r; x < end; ++x)
    pad[x] = 0.0f; // lanes past the row: computed, never stored in a row
  const float* padded = pad + r;
  const tap_vectors<R> t{taps, r};
  int first = round_up(r, lanes); // the first vector inside on the left
  int x = first;
  if constexpr (vec::has_window && R >= 0 && R < lanes) {
    // Three aligned-to-the-row loads a vector (two carried over) and
    // in-register windows for the taps, where unaligned loads would split
    // a cache line for every tap but the centre. The same inputs in the
    // same order: bit-identical to the loads below. Needs the vector after
    // x inside the row (the plane's last row has nothing after it).
    if (x + 2 * lanes <= w) {
      auto before = vec::load(src + x - lanes);
      auto here = vec::load(src + x);
      for (; x + 2 * lanes <= w; x += lanes) {
        auto after = vec::load(src + x + lanes);
        vec::store(dst + x, taps_applied<R>(t, r, [&](int k) {
          return k < 0 ? vec::window(before, here, lanes + k)
                       : k == 0 ? here : vec::window(here, after, k);
        }));
        before = here;
        here = after;
      }
    }
  }
  for (; x + lanes + r <= w; x += lanes) {
    const float* c = src + x;
    vec::store(dst + x, taps_applied<R>(t, r, [c](int k) {
      return vec::load(c + k);
    }));
  }
  auto from_pad = [&](int at) {
    const float* c = padded + at;
    vec::store(dst + at, taps_applied<R>(t, r, [c](int k) {
      return vec::load(c + k);
    }));
  };
  for (int left = 0; left < first && left < w; left += lanes)
    from_pad(left);
  for (int right = x > first ? x : first; right < w; right += lanes)
    from_pad(right);
}

// Vertical blur of the ring rows `rows[0..2r]` into output row `out`.
template <int R>
void column_pass(const float* const* rows, float* out, int w,
                 const float* taps, int radius, float* tail) {
  const int r = R >= 0 ? R : radius;
  const tap_vectors<R> t{taps, r};
  auto at = [&](int x) {
    return taps_applied<R>(t, r, [rows, r, x](int k) {
      return vec::load(rows[r + k] + x);
    });
  };
  int x = 0;
  for (; x + lanes <= w; x += lanes)
    vec::store(out + x, at(x));
  if (x < w) { // the row's end: through a vector of scratch
    vec::store(tail, at(x));
    for (int i = 0; x + i < w; ++i)
      out[x + i] = tail[i];
  }
}

// Vertical blur of B consecutive output rows at once (`out`, rows `w`
// apart) from the ring rows `rows[0..2r+B-1]`: each input vector is loaded
// once and serves up to B outputs (2r + B loads for B vectors instead of
// B * (2r + 1)), which is what bounds this pass.
template <int R, int B>
void column_block(const float* const* rows, float* out, int w,
                  const float* taps, float* tail) {
  static_assert(R >= 0, "blocks need the radius at compile time");
  const tap_vectors<R> t{taps, R};
  typename vec::type in[2 * R + B];
  auto block_at = [&](int x, auto&& emit) {
    for (int j = 0; j < 2 * R + B; ++j)
      in[j] = vec::load(rows[j] + x);
    for (int b = 0; b < B; ++b)
      emit(b, taps_applied<R>(t, R, [&in, b](int k) { return in[b + R + k]; }));
  };
  int x = 0;
  for (; x + lanes <= w; x += lanes)
    block_at(x, [&](int b, typename vec::type v) {
      vec::store(out + b * w + x, v);
    });
  if (x < w) // the rows' end: through a vector of scratch
    block_at(x, [&](int b, typename vec::type v) {
      vec::store(tail, v);
      for (int i = 0; x + i < w; ++i)
        out[b * w + x + i] = tail[i];
    });
}

// Output rows made per column pass where the radius is known at compile
// time (else one): as many as keep the 2r + B input vectors, B sums and
// r + 1 taps in registers. Six with AVX-512's 32 (measured ~12% faster
// than four at radius 5), four otherwise.
template <int R>
constexpr int block_rows = R < 0 ? 1 : lanes == 16 ? 6 : 4;

template <int R>
void blur_once(float* plane, int h, int w, const float* taps, int radius,
               float* scratch) {
  const int r = R >= 0 ? R : radius;
  constexpr int B = block_rows<R>;
  const int slots = 2 * r + B; // the ring: every row a block reads
  const int stride = round_up(w, max_lanes);
  float* ring = scratch;
  float* pad = ring + slots * stride;
  float* tail = pad + stride + 2 * r + max_lanes;
  const float* rows[2 * 49 + 6]; // pipeline.blur-kernel <= 99, B <= 6
  int next = 0; // the next source row to blur into the ring
  for (int y = 0; y < h;) {
    int n = h - y >= B ? B : 1; // the last rows one by one
    int last = y + n - 1 + r < h - 1 ? y + n - 1 + r : h - 1;
    for (; next <= last; ++next)
      row_pass<R>(plane + next * w, ring + (next % slots) * stride, w, taps,
                  r, pad);
    for (int j = 0; j < 2 * r + n; ++j)
      rows[j] = ring + (reflect(y - r + j, h) % slots) * stride;
    if constexpr (B > 1) {
      if (n == B) {
        column_block<R, B>(rows, plane + y * w, w, taps, tail);
        y += n;
        continue;
      }
    }
    column_pass<R>(rows, plane + y * w, w, taps, r, tail);
    y += 1;
  }
}

inline void run_chain(float* plane, uint32_t h, uint32_t w,
                      const float* taps, uint32_t calls, uint32_t radius,
                      float* scratch) noexcept {
  int r = static_cast<int>(radius);
  int hi = static_cast<int>(h), wi = static_cast<int>(w);
  for (uint32_t c = 0; c < calls; ++c) {
    const float* t = taps + c * (2 * radius + 1);
    // The common radii with the tap loop unrolled at compile time.
    switch (r) {
      case 0: blur_once<0>(plane, hi, wi, t, r, scratch); break;
      case 1: blur_once<1>(plane, hi, wi, t, r, scratch); break;
      case 2: blur_once<2>(plane, hi, wi, t, r, scratch); break;
      case 3: blur_once<3>(plane, hi, wi, t, r, scratch); break;
      case 4: blur_once<4>(plane, hi, wi, t, r, scratch); break;
      case 5: blur_once<5>(plane, hi, wi, t, r, scratch); break;
      case 6: blur_once<6>(plane, hi, wi, t, r, scratch); break;
      case 7: blur_once<7>(plane, hi, wi, t, r, scratch); break;
      default: blur_once<-1>(plane, hi, wi, t, r, scratch); break;
    }
  }
}

// The FMA ceiling (blur_chain.hpp's fma_peak_*): ten independent
// accumulators, enough in flight to hide the instruction's latency.
inline uint64_t fma_peak(uint64_t iterations, float* sink) {
  typename vec::type acc[10];
  for (int i = 0; i < 10; ++i)
    acc[i] = vec::set1(static_cast<float>(i) * 1e-3f);
  const auto a = vec::set1(0.999999f), b = vec::set1(1e-7f);
  for (uint64_t n = 0; n < iterations; ++n)
    for (int i = 0; i < 10; ++i)
      acc[i] = vec::fma(acc[i], a, b);
  auto sum = acc[0];
  for (int i = 1; i < 10; ++i)
    sum = vec::add(sum, acc[i]);
  vec::store(sink, sum);
  return iterations * 10 * lanes * 2;
}

} // namespace stoker::detail::STOKER_BLUR_NS
