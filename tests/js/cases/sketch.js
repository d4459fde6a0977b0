// LatencySketch cases: the same file runs in Node, Deno, workerd and Chromium.
import { equal, near, ok, throws, throwsArg } from "../assert.js";
import { wasmBytes, rng, seed003, generators, exact, QS } from "../latency-data.js";

/** `n` (a number or BigInt) as the LEB128 varint the sketch format uses. */
function varint(n) {
  let v = BigInt(n);
  const out = [];
  while (v >= 0x80n) {
    out.push(Number(v & 0x7fn) | 0x80);
    v >>= 7n;
  }
  out.push(Number(v));
  return out;
}

const f64 = (x) => [...new Uint8Array(new Float64Array([x]).buffer)];

const cases = [
  {
    name: "sketch: sketch quantiles match exact sorted quantiles across generators (exact below 257 samples)",
    run: (lib) => {
      for (const [name, gen] of Object.entries(generators)) {
        for (const n of [1, 100, 256, 257, 5_000, 50_000]) {
          const u = rng(n * 31 + name.length);
          const xs = new Float64Array(n);
          for (let i = 0; i < n; i++) xs[i] = gen(u);
          const s = new lib.LatencySketch();
          try {
            s.addAll(xs);
            equal(s.count, n, `${name} n=${n}: count`);
            const sorted = xs.slice().sort();
            for (const q of QS) {
              const want = exact(sorted, q);
              const got = s.quantile(q);
              if (n <= 256) equal(got, want, `${name} n=${n} q=${q}: small n is exact`);
              else near(got, want, 0.01 * want * (1 + 1e-9) + 1e-6, `${name} n=${n} q=${q}`);
            }
            equal(s.min, sorted[0], "min is exact");
            equal(s.max, sorted[n - 1], "max is exact");
          } finally {
            s.free();
          }
        }
      }
    },
  },
  {
    name: "sketch: 10 000 forgotten sketches (never freed, one synchronous loop) hold at most 16 MiB of Wasm memory",
    run: (lib) => {
      const before = wasmBytes();
      for (let i = 0; i < 10_000; i++) {
        const s = new lib.LatencySketch();
        // 1 ms … 5 s: about 3.5 KB of counters each.
        for (let k = 0; k < 300; k++) s.add(1 + ((k * 7919 + i) % 5_000));
      }
      const grown = wasmBytes() - before;
      ok(grown <= 16 * 2 ** 20 + 2 ** 20, `Wasm memory grew by ${(grown / 2 ** 20).toFixed(1)} MiB`);
    },
  },
  {
    name: "sketch: sketches parked in JS memory and restored answer exactly as before, in add, merge and derive",
    run: (lib) => {
      const n = 2_500; // more than stay resident at once
      const data = (i) => Float64Array.from({ length: 40 + (i % 300) }, (_, k) => 1 + ((k * 104_729 + i * 13) % 9_000) / 3);
      const kept = [];
      for (let i = 0; i < n; i++) kept.push(new lib.LatencySketch().addAll(data(i)));
      try {
        for (let i = 0; i < n; i += 97) {
          const fresh = new lib.LatencySketch().addAll(data(i));
          try {
            const s = kept[i];
            equal(s.count, fresh.count, `count of sketch ${i}`);
            for (const q of [0, 0.5, 0.99, 1]) equal(s.quantile(q), fresh.quantile(q), `q=${q} of sketch ${i}`);
            equal(s.sum, fresh.sum);
            s.add(7);
            fresh.add(7);
            s.merge(kept[(i + 1_250) % n]);
            fresh.merge(new lib.LatencySketch().addAll(data((i + 1_250) % n)));
            equal(s.quantile(0.9), fresh.quantile(0.9), `after add and merge, sketch ${i}`);
            equal(lib.deriveTimeouts(s)[0].p99, lib.deriveTimeouts(fresh)[0].p99, `derived p99 of sketch ${i}`);
          } finally {
            fresh.free();
          }
        }
        kept[3].free();
        throws(() => kept[3].count, Error, /freed/);
        equal(String(kept[3]), "LatencySketch(freed)");
      } finally {
        for (const s of kept) s.free();
      }
    },
  },
  {
    name: "sketch: relativeError is honoured (0.1%, 5%) and add() agrees with addAll()",
    run: (lib) => {
      const xs = seed003(20_000, 7);
      const sorted = xs.slice().sort();
      for (const relativeError of [0.001, 0.05]) {
        const bulk = new lib.LatencySketch({ relativeError });
        const one = new lib.LatencySketch({ relativeError });
        try {
          bulk.addAll(xs);
          for (const x of xs) one.add(x);
          equal(bulk.relativeError, relativeError);
          // At 0.1% the 1 536 counters span only 21×: the lowest buckets
          // collapse, and below that bound only [min, max] is promised.
          const collapsed = bulk.collapsedBelowMs ?? 0;
          equal(collapsed > 0, relativeError === 0.001, "collapsedBelowMs");
          for (const q of QS) {
            const want = exact(sorted, q);
            if (want <= collapsed) ok(bulk.quantile(q) >= want, `α=${relativeError} q=${q}: never below in the collapsed range`);
            else near(bulk.quantile(q), want, relativeError * want * (1 + 1e-9) + 1e-6, `α=${relativeError} q=${q}`);
            equal(one.quantile(q), bulk.quantile(q), `add vs addAll at q=${q}`);
          }
        } finally {
          bulk.free();
          one.free();
        }
      }
    },
  },
  {
    name: "sketch: merge equals a single pass; different accuracies and self-merge are refused",
    run: (lib) => {
      const xs = seed003(30_000, 3);
      const a = new lib.LatencySketch();
      const b = new lib.LatencySketch();
      const one = new lib.LatencySketch();
      const other = new lib.LatencySketch({ relativeError: 0.02 });
      try {
        a.addAll(xs.subarray(0, 10_000));
        b.addAll(xs.subarray(10_000));
        one.addAll(xs);
        equal(a.merge(b), a, "merge returns the sketch");
        equal(a.count, one.count);
        equal(b.count, 20_000, "the merged-in sketch is unchanged");
        for (const q of QS) equal(a.quantile(q), one.quantile(q), `q=${q}`);
        other.add(1);
        throwsArg(() => a.merge(other), RangeError, "other", "RELATIVE_ERROR_MISMATCH", /relative error 0\.02 into one with relative error 0\.01/);
        throwsArg(() => a.merge(a), TypeError, "other", "INVALID_TYPE", /into itself/);
        throwsArg(() => a.merge({}), TypeError, "other", "INVALID_TYPE", /^'other' must be a LatencySketch: current value is an object$/);
        equal(a.count, one.count, "refused merges change nothing");
      } finally {
        for (const s of [a, b, one, other]) s.free();
      }
    },
  },
  {
    name: "sketch: addAll is all or nothing, also across chunks, and names the bad index",
    run: (lib) => {
      const s = new lib.LatencySketch();
      try {
        s.addAll([1, 2, 3]);
        const big = seed003(200_000, 5);
        big[150_001] = NaN;
        throwsArg(() => s.addAll(big), RangeError, "samples[150001]", "NOT_FINITE", /^'samples\[150001\]' must be a finite number/);
        equal(s.count, 3, "nothing of the batch was added");
        equal(s.quantile(1), 3);
        throwsArg(() => s.addAll([1, -2]), RangeError, "samples[1]", "NEGATIVE", /^'samples\[1\]' must be between 0 and 9007199254740991 milliseconds: current value is -2/);
        throwsArg(() => s.addAll([1, "2"]), TypeError, "samples[1]", "INVALID_TYPE", /^'samples\[1\]' must be a number of milliseconds: current value is "2" \(a string\)$/);
        throwsArg(() => s.addAll(new Float32Array(2)), TypeError, "samples", "INVALID_TYPE", /a Float64Array or an array of numbers/);
        for (const [bad, code] of [[NaN, "NOT_FINITE"], [Infinity, "NOT_FINITE"], [-1, "NEGATIVE"], [2 ** 53, "TOO_LARGE"]]) throwsArg(() => s.add(bad), RangeError, "ms", code, /'ms'/);
        throwsArg(() => s.add("5"), TypeError, "ms", "INVALID_TYPE", /'ms' must be a number of milliseconds: current value is "5"/);
        equal(s.count, 3);
        big[150_001] = 10;
        s.addAll(big);
        equal(s.count, 200_003);
      } finally {
        s.free();
      }
    },
  },
  {
    name: "sketch: an empty sketch answers undefined; bad q and relativeError are errors; free is explicit",
    run: (lib) => {
      const s = new lib.LatencySketch();
      equal(s.quantile(0.99), undefined, "empty is undefined, not 0");
      equal(s.min, undefined);
      equal(s.fractionAbove(10), undefined);
      equal(String(s), "LatencySketch(empty)");
      for (const q of [NaN, -0.01, 1.01]) throwsArg(() => s.quantile(q), RangeError, "q", "OUT_OF_RANGE", /^'q' must be between 0 and 1: current value is/);
      throwsArg(() => s.quantile("0.5"), TypeError, "q", "INVALID_TYPE", /'q' must be a number/);
      throwsArg(() => new lib.LatencySketch({ relativeError: 0 }), RangeError, "options.relativeError", "OUT_OF_RANGE", /'relativeError' must be between 0.001 and 0.5: current value is 0/);
      throwsArg(() => new lib.LatencySketch({ relativeError: "1%" }), TypeError, "options.relativeError", "INVALID_TYPE", /'options.relativeError' must be a number/);
      throwsArg(() => new lib.LatencySketch(0.01), TypeError, "options", "INVALID_TYPE", /'options' must be an object like \{ relativeError \}/);
      s.add(0);
      equal(s.quantile(0.5), 0, "zero is a duration");
      equal(typeof s[Symbol.dispose] === "function" || typeof Symbol.dispose !== "symbol", true, "disposable where supported");
      s.free();
      s.free();
      throws(() => s.add(1), Error, /was freed/);
      throws(() => s.count, Error, /was freed/);
      equal(String(s), "LatencySketch(freed)");
    },
  },
  {
    name: "sketch: toBytes/fromBytes carry a sketch between isolates; merged copies equal merged originals",
    run: (lib) => {
      const xs = seed003(30_000, 9);
      const a = new lib.LatencySketch();
      const b = new lib.LatencySketch();
      const small = new lib.LatencySketch({ relativeError: 0.02 });
      const made = [a, b, small];
      try {
        a.addAll(xs.subarray(0, 12_000));
        b.addAll(xs.subarray(12_000));
        small.addAll([0, 3.25, 3.25, 41]);
        for (const s of [a, small, new lib.LatencySketch()]) {
          made.push(s);
          const bytes = s.toBytes();
          ok(bytes instanceof Uint8Array, "toBytes gives a Uint8Array");
          // Every view of the same bytes reads back (a Node Buffer is a Uint8Array).
          for (const view of [bytes, bytes.slice().buffer, new DataView(bytes.slice().buffer)]) {
            const back = lib.LatencySketch.fromBytes(view);
            made.push(back);
            ok(back instanceof lib.LatencySketch);
            for (const k of ["count", "sum", "min", "max", "relativeError", "collapsedBelowMs"]) equal(back[k], s[k], k);
            for (const q of QS) equal(back.quantile(q), s.quantile(q), `q=${q}`);
          }
        }
        ok(a.toBytes().length < 2048, `compact: ${a.toBytes().length} bytes for 12 000 samples`);
        // Two isolates send their bytes; one place merges them.
        const merged = lib.LatencySketch.fromBytes(a.toBytes()).merge(lib.LatencySketch.fromBytes(b.toBytes()));
        made.push(merged);
        const direct = new lib.LatencySketch().merge(a).merge(b);
        made.push(direct);
        equal(merged.count, 30_000);
        for (const q of QS) equal(merged.quantile(q), direct.quantile(q), `merged q=${q}`);
      } finally {
        for (const s of made) s.free();
      }
    },
  },
  {
    name: "sketch: fromBytes refuses corrupt, truncated and foreign buffers with a RangeError, never a trap",
    run: (lib) => {
      const s = new lib.LatencySketch();
      try {
        s.addAll(seed003(5_000, 4));
        const good = s.toBytes();
        throwsArg(() => lib.LatencySketch.fromBytes(good.subarray(0, good.length - 3)), RangeError, "bytes", "TRUNCATED_BYTES", /^'bytes' is not a valid LatencySketch: it ends inside 'counters'/);
        throwsArg(() => lib.LatencySketch.fromBytes(new TextEncoder().encode('{"count":3}')), RangeError, "bytes", "FOREIGN_BYTES", /magic bytes \(pass what toBytes\(\) returned\)/);
        const newer = good.slice();
        newer[4] = 2;
        throwsArg(() => lib.LatencySketch.fromBytes(newer), RangeError, "bytes", "NEWER_VERSION", /format version 2 is newer than this package reads \(1\)/);
        throwsArg(() => lib.LatencySketch.fromBytes(new Uint8Array(0)), RangeError, "bytes", "FOREIGN_BYTES", /magic/);
        throwsArg(() => lib.LatencySketch.fromBytes([1, 2]), TypeError, "bytes", "INVALID_TYPE", /^'bytes' must be a Uint8Array, an ArrayBuffer or the base64 string of toJSON\(\): current value is an array$/);
        throwsArg(() => lib.LatencySketch.fromBytes("not base64!"), RangeError, "bytes", "CORRUPT_BYTES", /'bytes' is not valid base64/);
        // Random damage: each buffer decodes or is a RangeError, and the
        // instance keeps working afterwards (nothing trapped).
        const u = rng(17);
        let refused = 0;
        for (let i = 0; i < 3_000; i++) {
          const v = good.slice(0, 6 + Math.floor(u() * (good.length - 6)));
          for (let k = 0; k < 3; k++) v[Math.floor(u() * v.length)] = Math.floor(u() * 256);
          try {
            lib.LatencySketch.fromBytes(v).free();
          } catch (e) {
            ok(e instanceof RangeError, `a refusal is a RangeError: ${e}`);
            refused++;
          }
        }
        ok(refused > 2_900, `refused ${refused} of 3000 damaged buffers`);
        s.add(1);
        equal(s.count, 5_001, "the instance still works");
      } finally {
        s.free();
      }
    },
  },
  {
    name: "sketch: JSON.stringify(sketch) gives a summary and base64 bytes that fromBytes reads back",
    run: (lib) => {
      const s = new lib.LatencySketch();
      const empty = new lib.LatencySketch();
      try {
        s.addAll(seed003(2_000, 6));
        const json = JSON.parse(JSON.stringify({ sketch: s })).sketch;
        equal(json.type, "LatencySketch");
        equal(json.version, 1);
        equal(json.count, 2_000);
        equal(json.relativeError, 0.01);
        equal(json.min, s.min);
        equal(json.max, s.max);
        equal(json.p50, s.quantile(0.5));
        equal(json.p99, s.quantile(0.99));
        equal(json.p999, s.quantile(0.999));
        equal(typeof json.bytes, "string");
        const back = lib.LatencySketch.fromBytes(json.bytes);
        try {
          for (const q of QS) equal(back.quantile(q), s.quantile(q), `q=${q}`);
        } finally {
          back.free();
        }
        const e = JSON.parse(JSON.stringify(empty));
        equal(e.count, 0);
        equal("p50" in e, false, "an empty sketch has no quantiles, not 0");
        const again = lib.LatencySketch.fromBytes(e.bytes);
        equal(again.count, 0);
        again.free();
        empty.free();
        throws(() => JSON.stringify(empty), Error, /was freed/);
      } finally {
        s.free();
        empty.free();
      }
    },
  },
  {
    name: "sketch: fromBytes refuses counts a merge could overflow and a min, max or zero count the counters contradict; a merge past 2^53 − 1 is a RangeError that changes nothing",
    run: (lib) => {
      const genuine = new lib.LatencySketch().addAll(new Float64Array(300).fill(20));
      const made = [genuine];
      try {
        // 300 × 20 ms, bucketed: header (14 bytes), count (2), sum, min, max,
        // zero count (1), first key, one key (1), its counter (2).
        const good = genuine.toBytes();
        const key = good.subarray(14 + 2 + 24 + 1, good.length - 3);
        const forge = (n, { min = 20, max = 20, zeros = 0 } = {}) =>
          new Uint8Array([...good.subarray(0, 14), ...varint(n), ...f64(20 * Number(n)), ...f64(min), ...f64(max), ...varint(zeros), ...key, 1, ...varint(BigInt(n) - BigInt(zeros))]);
        const copy = lib.LatencySketch.fromBytes(forge(300));
        made.push(copy);
        for (const q of QS) equal(copy.quantile(q), genuine.quantile(q), "the forger's layout is the format's");
        for (const n of [2n ** 62n, 2n ** 53n]) throwsArg(() => lib.LatencySketch.fromBytes(forge(n)), RangeError, "bytes", "CORRUPT_BYTES", /'count' is \d+, more than a sketch counts \(9007199254740991\)/);
        for (const bad of [{ min: 376, max: 376 }, { max: 376 }, { min: 5 }, { zeros: 10 }, { min: 0 }]) {
          throwsArg(() => lib.LatencySketch.fromBytes(forge(300, bad)), RangeError, "bytes", "CORRUPT_BYTES", /outside the (lowest|highest) non-empty bucket|the zero count/);
        }
        const cap = 2 ** 53 - 1;
        const full = lib.LatencySketch.fromBytes(forge(cap));
        const other = lib.LatencySketch.fromBytes(forge(cap));
        made.push(full, other);
        equal(full.count, cap);
        throwsArg(() => full.merge(other), RangeError, "other", "COUNT_LIMIT", /^cannot add 9007199254740991 samples to a sketch of 9007199254740991: a sketch counts at most 9007199254740991/);
        throwsArg(() => full.add(20), RangeError, "ms", "COUNT_LIMIT", /^cannot add 1 samples/);
        throwsArg(() => full.addAll([20]), RangeError, "samples", "COUNT_LIMIT", /^cannot add 1 samples/);
        equal(full.count, cap, "refused merges and adds change nothing");
        const [row] = lib.deriveTimeouts(full);
        equal(row.n, cap);
        equal(row.p50, 20);
        equal(row.p99, 20);
        // Two halves merge up to the cap, and the result survives parking.
        const half = lib.LatencySketch.fromBytes(forge((cap - 1) / 2));
        const merged = lib.LatencySketch.fromBytes(half.toBytes()).merge(half);
        made.push(half, merged);
        merged.add(20);
        equal(merged.count, cap);
        for (let i = 0; i < 2_100; i++) made.push(new lib.LatencySketch()); // parks `merged`
        equal(merged.count, cap, "read back after parking");
        equal(merged.quantile(0.99), 20);
        equal(lib.deriveTimeouts(merged)[0].p99, 20);
      } finally {
        for (const s of made) s.free();
      }
    },
  },
];

export default cases;
