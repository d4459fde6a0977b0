// Seed 003's latency shape, drawn the same way in every runtime: a lognormal
// body (median 40 ms, sigma 0.348) and a 0.5 % tail uniform over 0.3–1.5 s.
// xorshift32 + Box–Muller, so a given `seed` gives the same samples in Node,
// Deno and workerd. Used by the derivation bench and the Prometheus test.

/** `n` samples (ms) as a Float64Array, from the 32-bit `seed`. */
export function seed003Samples(n, seed) {
  let s = seed;
  const unit = () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return ((s >>> 0) + 0.5) / 2 ** 32;
  };
  const xs = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    xs[i] = unit() < 0.005 ? 300 + 1200 * unit() : 40 * Math.exp(0.348 * Math.sqrt(-2 * Math.log(unit())) * Math.cos(2 * Math.PI * unit()));
  }
  return xs;
}
