// LatencySketch: a mergeable quantile sketch of durations (ms) with a stated
// relative error. The sketch itself is the Wasm core's (src/core/sketch.rs,
// bound in src/wasm/sketch.rs:
// DDSketch-style log buckets, exact below 257 samples, at most 16 KB); this
// file owns the JS edge: type checks, chunked bulk ingest, freeing.
//
// # Memory: bounded without free()
// A sketch's counters (at most 16 KB) live in Wasm memory, which never
// shrinks and which the garbage collector does not see: a JS object of a few
// bytes holding kilobytes of Wasm memory gives the collector no reason to run, so
// finalizers (wasm-bindgen's FinalizationRegistry) come late, or never where
// the runtime has none or never runs them: forgotten sketches once held
// hundreds of MiB (BENCHMARKS.md, "Memory", has the bound now). So at most
// RESIDENT sketches keep their counters in Wasm memory (at most 16 MiB);
// when one more is needed, the least recently used one (second chance: a sketch used since the last sweep is skipped once) is
// *parked*: its state is copied into a Uint8Array in JS memory, which the
// collector sees and reclaims with the object, and its Wasm memory is freed.
// A parked sketch is restored on its next use, transparently. `free()`
// (or `using`) still releases everything at once; a freed sketch throws.
//
// # Invariants
// 1. `add(ms)` is one Wasm call and allocates nothing once the sketch has
//    seen the range of its samples (a hot loop may call it per request).
// 2. `addAll(samples)` is all or nothing: on a bad sample (NaN, ±∞,
//    negative, past 2^53 − 1 ms) it throws a RangeError naming the sample's
//    index and the sketch is unchanged. Large arrays cross into Wasm in
//    chunks of CHUNK samples, so Wasm memory (which never shrinks) grows by
//    at most CHUNK × 8 bytes, not by 8 bytes per sample.
// 3. `quantile(q)` is `undefined` for an empty sketch, never 0.
// 4. At most RESIDENT sketches hold Wasm memory at any time; each sketch is
//    exactly one of resident (#core set, in `resident`), parked (#parked
//    set) or freed (neither). Parking and restoring change no answer.
// 5. The sketch being used is never parked while its core is in use: only
//    restoring (never `add` on a resident sketch) can park another, and a
//    `merge` pins the sketch it merges into.
// 6. `LatencySketch.fromBytes(sketch.toBytes())` answers every question as
//    `sketch` does; bytes that are not a sketch (cut off, damaged, from
//    another program or a newer format) are a RangeError saying so, checked
//    in the core before any sketch exists. The core keeps every sketch at
//    most 2^53 − 1 samples (an add or merge past it is a RangeError that
//    changes nothing) and `fromBytes` refuses larger counts and a min, max or
//    zero count the counters contradict, so parking (invariant 4) always
//    restores: a sketch's own bytes are always accepted.
//
// # Why a binary form, and what JSON gets
// Sketches are recorded where requests run (many isolates, tabs, servers)
// and merged in one place (a Durable Object, a log pipeline, the CLI's
// `derive --sketch`), so they must travel. `toBytes()` is the compact,
// versioned form for that (the same bytes park a sketch, invariant 4);
// `JSON.stringify(sketch)` gives a readable summary
// that carries the same bytes as base64 (`fromBytes` takes that string), so
// a sketch logged as JSON is neither `{}` nor lost.

import * as core from "./edge_deadline_derive.js";
import { isReady, notReady } from "./derive-load.js";
import { argumentError, CODES } from "./errors.js";
import { number, obj, optNumber, typeError } from "./validate.js";

/** Samples per Wasm call in `addAll` (512 KB of f64). */
export const CHUNK = 65_536;

/**
 * `samples` as a Float64Array: a Float64Array as is, an array of numbers
 * copied (a non-number is a TypeError naming its index).
 */
export function float64(param, samples) {
  if (samples instanceof Float64Array) return samples;
  if (Array.isArray(samples)) {
    const out = new Float64Array(samples.length);
    for (let i = 0; i < samples.length; i++) {
      const v = samples[i];
      if (typeof v !== "number") throw typeError(`${param}[${i}]`, "a number of milliseconds", v);
      out[i] = v;
    }
    return out;
  }
  throw typeError(param, "a Float64Array or an array of numbers of milliseconds", samples);
}

/**
 * Adds every sample to a core sketch, all or nothing (invariant 2); errors
 * name `root[i]` (`samples`, or `data` for deriveTimeouts).
 */
export function addAllTo(sketchCore, samples, root = "samples") {
  if (samples.length <= CHUNK) {
    sketchCore.addAll(samples, 0, root);
    return;
  }
  sketchCore.checkpoint();
  try {
    for (let at = 0; at < samples.length; at += CHUNK) sketchCore.addAll(samples.subarray(at, at + CHUNK), at, root);
  } catch (error) {
    sketchCore.rollback();
    throw error;
  } finally {
    sketchCore.release();
  }
}

const TOKEN = Symbol("LatencySketch internals");

/** The most sketches whose counters are in Wasm memory at once (invariant 4): ≤ 16 MiB. */
const RESIDENT = 1024;
/** Resident sketches, oldest first (a Set keeps insertion order). */
/** @type {Set<LatencySketch>} */
const resident = new Set();
/** A sketch that must stay resident during the current call (invariant 5). */
let pinned;

/** A decoded core the constructor adopts instead of making one (`fromBytes`). */
let adopted = null;

/** `bytes` of fromBytes as a Uint8Array (base64 text decoded). */
function byteView(bytes) {
  if (bytes instanceof Uint8Array) return bytes;
  if (bytes instanceof ArrayBuffer) return new Uint8Array(bytes);
  if (ArrayBuffer.isView(bytes)) return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (typeof bytes === "string") {
    let text;
    try {
      text = atob(bytes);
    } catch {
      throw argumentError("range", "CORRUPT_BYTES", "bytes", "'bytes' is not valid base64: pass the 'bytes' string of a sketch's JSON form unchanged");
    }
    const out = new Uint8Array(text.length);
    for (let i = 0; i < text.length; i++) out[i] = text.charCodeAt(i);
    return out;
  }
  throw typeError("bytes", "a Uint8Array, an ArrayBuffer or the base64 string of toJSON()", bytes);
}

function base64(bytes) {
  let text = "";
  // Chunks keep `fromCharCode`'s argument list short (engines cap it).
  for (let at = 0; at < bytes.length; at += 8192) text += String.fromCharCode(...bytes.subarray(at, at + 8192));
  return btoa(text);
}

export class LatencySketch {
  #core;
  /** The state while parked (invariant 4). */
  #parked = null;
  /** Used since the last sweep: spared once (second chance). */
  #used = true;

  /**
   * @param {{ relativeError?: number }} [options] relative error of every
   *   quantile, 0.001 … 0.5 (default 0.01: 1%)
   */
  constructor(options) {
    if (!isReady()) notReady("LatencySketch");
    if (adopted !== null) {
      this.#core = adopted;
      adopted = null;
      LatencySketch.#admit(this);
      return;
    }
    const o = obj("options", options, "an object like { relativeError }", true);
    // The default (0.01) is the core's.
    this.#core = new core.LatencySketchCore(optNumber("options.relativeError", o.relativeError, "a number between 0.001 and 0.5"));
    LatencySketch.#admit(this);
  }

  #live() {
    this.#used = true;
    if (this.#core !== null) return this.#core;
    if (this.#parked === null) throw new Error("this LatencySketch was freed; create a new one");
    this.#core = core.LatencySketchCore.fromBytes(this.#parked);
    this.#parked = null;
    LatencySketch.#admit(this);
    return this.#core;
  }

  /** Makes `sketch` resident, parking the least recently used ones past RESIDENT. */
  static #admit(sketch) {
    resident.add(sketch);
    // Two sweeps at most: the first clears every `#used` it passes.
    for (const s of resident) {
      if (resident.size <= RESIDENT) break;
      if (s === sketch || s === pinned) continue;
      if (s.#used) {
        s.#used = false;
        resident.delete(s);
        resident.add(s); // to the back: spared this time
        continue;
      }
      s.#park();
    }
  }

  /** Moves the state into JS memory and frees the Wasm memory (invariant 4). */
  #park() {
    this.#parked = this.#core.toBytes();
    this.#core.free();
    this.#core = null;
    resident.delete(this);
  }

  /** @internal the core sketch, for js/derive.js and js/tail.js */
  static core(sketch, token) {
    return token === TOKEN ? sketch.#live() : undefined;
  }

  /** Adds one duration in ms. */
  add(ms) {
    if (typeof ms !== "number") number("ms", ms, "a number of milliseconds");
    const core = this.#core ?? this.#live();
    this.#used = true;
    // The fast path returns a bool (no allocation); `add` words the error.
    if (!core.tryAdd(ms)) core.add(ms);
  }

  /** Adds every duration of a Float64Array (or an array of numbers), all or nothing. */
  addAll(samples) {
    const core = this.#live();
    addAllTo(core, float64("samples", samples));
    return this;
  }

  /** Adds every sample of `other` (same `relativeError`); `other` is unchanged. */
  merge(other) {
    if (!(other instanceof LatencySketch)) throw typeError("other", "a LatencySketch", other);
    if (other === this) throw argumentError("type", CODES.INVALID_TYPE, "other", "cannot merge a LatencySketch into itself: pass another sketch");
    const mine = this.#live();
    pinned = this; // restoring `other` must not park this one (invariant 5)
    try {
      mine.merge(other.#live());
    } finally {
      pinned = undefined;
    }
    return this;
  }

  /**
   * The sketch as compact, versioned bytes (under 2 KB for 1 ms … 1 h at
   * 1%), for sending to where sketches are merged; `fromBytes` reads them.
   */
  toBytes() {
    return this.#live().toBytes();
  }

  /**
   * A sketch from `toBytes()` output (a Uint8Array or ArrayBuffer) or from
   * the base64 `bytes` of its JSON form. Damaged, cut-off or foreign bytes,
   * or a newer format version, are a RangeError saying which.
   */
  static fromBytes(bytes) {
    if (!isReady()) notReady("LatencySketch.fromBytes");
    adopted = core.LatencySketchCore.fromBytes(byteView(bytes));
    try {
      return new LatencySketch();
    } finally {
      adopted = null;
    }
  }

  /**
   * What `JSON.stringify` writes: `{ type: "LatencySketch", version,
   * relativeError, count, min, max, p50, p90, p99, p999, bytes }`, with the
   * quantiles left out when empty and `bytes` the base64 of `toBytes()`.
   */
  toJSON() {
    const core = this.#live();
    const bytes = core.toBytes();
    // The format version is the byte after the 4-byte magic word.
    const json = { type: "LatencySketch", version: bytes[4], relativeError: core.relativeError(), count: core.count() };
    if (json.count > 0) {
      Object.assign(json, { min: core.min(), max: core.max() });
      for (const [k, q] of [["p50", 0.5], ["p90", 0.9], ["p99", 0.99], ["p999", 0.999]]) json[k] = core.quantile(q);
    }
    json.bytes = base64(bytes);
    return json;
  }

  /** How many samples were added. */
  get count() {
    return this.#live().count();
  }

  /** The relative error the sketch was created with. */
  get relativeError() {
    return this.#live().relativeError();
  }

  /** The smallest sample, exactly; `undefined` when empty. */
  get min() {
    return this.#live().min();
  }

  /** The largest sample, exactly; `undefined` when empty. */
  get max() {
    return this.#live().max();
  }

  /** The sum of the samples (0 when empty). */
  get sum() {
    return this.#live().sum();
  }

  /**
   * The `q`-quantile (0.99 for p99), within `relativeError` of the exact
   * rank-⌊q·(n−1)⌋ sample (exact below 257 samples); `undefined` when empty.
   */
  quantile(q) {
    number("q", q, "a number between 0 and 1");
    return this.#live().quantile(q);
  }

  /**
   * Set when the sketch merged its lowest buckets to stay within 16 KB (a
   * range wider than about 10^13 at 1%, or 21× at 0.1%): quantiles at or
   * below this value may read high. `undefined` while accuracy holds everywhere.
   */
  get collapsedBelowMs() {
    return this.#live().collapsedBelowMs();
  }

  /** Share of samples above `timeoutMs` (its false-timeout rate); `undefined` when empty. */
  fractionAbove(timeoutMs) {
    number("timeoutMs", timeoutMs, "a number of milliseconds");
    return this.#live().fractionAbove(timeoutMs);
  }

  /** Frees the Wasm memory now. Safe to call twice; any later use throws. */
  free() {
    this.#core?.free();
    this.#core = null;
    this.#parked = null;
    resident.delete(this);
  }

  /** Readable in logs: `LatencySketch(n=1000, p50=40.1 ms, p99=97.8 ms)`. */
  toString() {
    if (this.#core === null && this.#parked === null) return "LatencySketch(freed)";
    const n = this.count;
    if (n === 0) return "LatencySketch(empty)";
    const f = (q) => `${this.quantile(q).toPrecision(4)} ms`;
    return `LatencySketch(n=${n}, p50=${f(0.5)}, p99=${f(0.99)})`;
  }
}

if (typeof Symbol.dispose === "symbol") {
  LatencySketch.prototype[Symbol.dispose] = LatencySketch.prototype.free;
}

/** @internal */
export const SKETCH_TOKEN = TOKEN;
