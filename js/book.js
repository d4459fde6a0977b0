// TimeoutBook: latencies recorded where the work happens, flushed to one
// aggregator, and the fleet's derived timeouts served back. The decisions
// (the flush format, when to flush and refresh, what value to serve) are the
// core's (src/core/book.rs, bound in src/wasm/book.rs); this file owns the
// JS edge: the per-bucket sketches, fetch, and the synchronous reads.
//
// # Why record() stays in JS
// record() may run on every call of every request, so it is one Map lookup
// and one LatencySketch.add (one scalar Wasm call, no allocation): a bucket
// name crossing into Wasm would be a string copy per call. Sketches past
// the package's resident limit are parked as bytes by js/sketch.js (the
// least recently used first), so a book of many buckets holds little Wasm
// memory; `maxBuckets` bounds the rest.
//
// # Why timeout() reads a Map
// After each refresh the core's served values are copied into a Map, with
// the instant they go stale and the instant the next refresh is due:
// timeout() compares two numbers and reads the Map. A due refresh starts in
// the background (never awaited by timeout()); flush() starts one too and
// returns a promise to hand to ctx.waitUntil.
//
// # Invariants
// 1. What a flush took is not in the book any more (never counted twice);
//    a flush the aggregator could not take (unreachable, 5xx) is merged
//    back, within `maxBuckets`; one it refused (400, 413) is dropped, with
//    a warning. A 200 naming refused buckets (`{ refused: [{ bucket, code }] }`)
//    drops those only, each with a warning: the rest was merged.
// 2. Only "ok" outcomes reach the sketches; timeouts and errors are counted.
// 3. Each warning code is reported at most once per bucket (per book).
// 4. No timer: a book arms nothing; refreshes and flushes start from calls.

import * as core from "./edge_deadline_derive.js";
import { isReady, notReady } from "./derive-load.js";
import { LatencySketch, SKETCH_TOKEN } from "./sketch.js";
import { clock, isHostClock, now, timerMs, unref } from "./timers.js";
import { number, obj, optNumber, typeError } from "./validate.js";

/** The most bytes one flush request carries (the format's cap). */
const MAX_FLUSH_BYTES = 256 * 1024;

/** One bucket's records since the last flush. */
class Entry {
  constructor(relativeError) {
    this.sketch = new LatencySketch({ relativeError });
    this.timeouts = 0;
    this.errors = 0;
    /** The longest timed-out call: the in-force timeout when none was served. */
    this.timedOutMs = 0;
  }
}

export class TimeoutBook {
  /** @type {Map<string, Entry>} */
  #entries = new Map();
  #relativeError;
  #maxBuckets;
  /** How many names timeout() holds (its in-force values, the warnings told). */
  #held;
  #schedule;
  /** The core's served values, mirrored after each refresh. @type {Map<string, number>} */
  #served = new Map();
  /** Buckets whose first value the table holds, served (by the core) when first asked. @type {Set<string>} */
  #pending = new Set();
  #staleAt = -Infinity;
  #refreshAt = -Infinity;
  #flushAt = -Infinity;
  /** The value timeout() last returned per bucket: the in-force timeout a flush reports. */
  #inForce = new Map();
  #fetch;
  #base;
  #onWarning;
  #warned = new Set();
  #tableRead = false;
  #scratch = null;

  /**
   * @param {object} [options]
   * @param {string | { fetch(request: Request): Promise<Response> }} [options.aggregator]
   *   where flushes go and the table comes from: a URL, or anything with
   *   `fetch(request)` (a Durable Object stub, a service binding)
   * @param {string} [options.base] the aggregator's URL when `aggregator` is
   *   a binding (default "https://timeout-aggregator")
   * @param {number} [options.flushEveryMs] at most one flush per this long (default 10 000)
   * @param {number} [options.refreshEveryMs] how often the table is read (default 60 000)
   * @param {number} [options.maxStaleMs] how long a table is served (default 600 000)
   * @param {number} [options.maxStepFactor] how far one refresh moves a served value (default 2)
   * @param {number} [options.maxBuckets] buckets held between flushes (default 256, at most 1 024)
   * @param {number} [options.relativeError] the sketches' relative error (default 0.01)
   * @param {(warning: { code: string, bucket?: string, message: string }) => void} [options.onWarning]
   *   told once per bucket and code (default: console.warn)
   */
  constructor(options) {
    if (!isReady()) notReady("TimeoutBook");
    const o = obj("options", options, "an object like { aggregator, flushEveryMs }", true);
    const a = o.aggregator;
    if (typeof a === "string") {
      this.#base = a.replace(/\/+$/, "");
      this.#fetch = (request) => fetch(request);
    } else if (a !== undefined) {
      if (a === null || typeof a.fetch !== "function") throw typeError("options.aggregator", "a URL string or an object with fetch(request)", a);
      this.#base = (o.base === undefined ? "https://timeout-aggregator" : String(o.base)).replace(/\/+$/, "");
      this.#fetch = (request) => a.fetch(request);
    }
    this.#schedule = new core.BookScheduleCore(
      optNumber("options.maxStepFactor", o.maxStepFactor, "a number"),
      optNumber("options.refreshEveryMs", o.refreshEveryMs, "a number of milliseconds"),
      optNumber("options.maxStaleMs", o.maxStaleMs, "a number of milliseconds"),
      optNumber("options.flushEveryMs", o.flushEveryMs, "a number of milliseconds"),
    );
    this.#maxBuckets = core.checkBookOption("options.maxBuckets", optNumber("options.maxBuckets", o.maxBuckets, "a whole number") ?? 256);
    this.#held = core.bookNamesHeld(this.#maxBuckets);
    // The sketch validates it (a RangeError naming options.relativeError).
    this.#relativeError = new LatencySketch({ relativeError: optNumber("options.relativeError", o.relativeError, "a number between 0.001 and 0.5") }).relativeError;
    if (o.onWarning !== undefined && typeof o.onWarning !== "function") throw typeError("options.onWarning", "a function", o.onWarning);
    this.#onWarning = o.onWarning ?? ((w) => console.warn(w.message));
    if (!this.#fetch) this.#refreshAt = Infinity;
  }

  /**
   * Records one call of `bucket`: `ms` it took, and its outcome ("ok" by
   * default; "timeout" and "error" are counted, not sketched).
   * @param {string} bucket
   * @param {number} ms
   * @param {"ok" | "timeout" | "error"} [outcome]
   */
  record(bucket, ms, outcome) {
    let e = this.#entries.get(bucket);
    if (e === undefined) {
      e = this.#open(bucket);
      if (e === undefined) return;
    }
    if (outcome === undefined || outcome === "ok") {
      e.sketch.add(ms);
      return;
    }
    if (typeof ms !== "number" || !(ms >= 0 && ms <= 9_007_199_254_740_991)) this.#badMs(ms);
    if (outcome === "timeout") {
      e.timeouts++;
      if (ms > e.timedOutMs) e.timedOutMs = ms;
    } else if (outcome === "error") {
      e.errors++;
    } else {
      throw typeError("outcome", '"ok", "timeout" or "error"', outcome);
    }
  }

  /** The core's error for a bad `ms` (a sketch words it). */
  #badMs(ms) {
    number("ms", ms);
    this.#scratch ??= new LatencySketch();
    this.#scratch.add(ms);
  }

  #open(bucket) {
    if (typeof bucket !== "string") throw typeError("bucket", "a string", bucket);
    core.checkBucketCore(bucket);
    if (this.#entries.size >= this.#maxBuckets) {
      this.#warn("BUCKETS_FULL", bucket, this.#maxBuckets);
      return undefined;
    }
    const e = new Entry(this.#relativeError);
    this.#entries.set(bucket, e);
    return e;
  }

  /**
   * The timeout to use for `bucket`: the fleet's derived value once the
   * fleet has one (moved by at most `maxStepFactor` per refresh, its floor
   * included, and a first value at most that far from `fallbackMs`; a whole
   * number of ms), `fallbackMs` until then or when the table
   * is older than `maxStaleMs` (with a warning, once per bucket).
   * Synchronous; starts a due refresh in the background, handed to
   * `options.ctx.waitUntil` when given (in a Worker, a refresh outside it is
   * dropped when the request ends).
   * @param {string} bucket
   * @param {{ fallbackMs: number, ctx?: { waitUntil(promise: Promise<unknown>): void } }} options
   * @returns {number}
   */
  timeout(bucket, options) {
    const fallbackMs = options?.fallbackMs;
    if (!(fallbackMs > 0 && fallbackMs <= 9_007_199_254_740_991)) this.#badFallback(fallbackMs, options);
    const ctx = options.ctx;
    if (ctx !== undefined && typeof ctx?.waitUntil !== "function") this.#badCtx(ctx);
    const t = now();
    if (t >= this.#refreshAt) this.#startRefresh(t, ctx);
    let v = t < this.#staleAt ? this.#served.get(bucket) : undefined;
    if (v === undefined && t < this.#staleAt && this.#pending.has(bucket)) v = this.#first(bucket, fallbackMs);
    if (v === undefined) {
      v = fallbackMs;
      this.#fallbackWarning(bucket, fallbackMs, t);
    }
    if (this.#inForce.get(bucket) !== v) this.#remember(bucket, v);
    return v;
  }

  /** A due refresh from timeout(): handed to `ctx.waitUntil` when given, where a Worker keeps it. */
  #startRefresh(t, ctx) {
    const refresh = this.#refresh(t); // never rejects
    if (ctx !== undefined) ctx.waitUntil(refresh);
  }

  #badCtx(ctx) {
    throw typeError("options.ctx", "the handler's ctx: an object with waitUntil(promise)", ctx);
  }

  /** A first value, bounded by the core around the fallback; then served like the rest. */
  #first(bucket, fallbackMs) {
    this.#pending.delete(bucket);
    const v = this.#schedule.firstValue(bucket, fallbackMs);
    if (Number.isNaN(v)) return undefined;
    this.#served.set(bucket, v);
    return v;
  }

  /**
   * Keeps the value timeout() answered for `bucket`: a name new here passes
   * record()'s rule first, and at most core.bookNamesHeld(maxBuckets) names
   * are held (when full, only the recorded ones are kept).
   */
  #remember(bucket, v) {
    const inForce = this.#inForce;
    if (!inForce.has(bucket)) {
      if (typeof bucket !== "string") throw typeError("bucket", "a string", bucket);
      core.checkBucketCore(bucket);
      if (inForce.size >= this.#held) {
        for (const name of inForce.keys()) if (!this.#entries.has(name)) inForce.delete(name);
        if (inForce.size >= this.#held) return;
      }
    }
    inForce.set(bucket, v);
  }

  #badFallback(v, options) {
    obj("options", options, "an object like { fallbackMs }");
    core.checkBookOption("options.fallbackMs", number("options.fallbackMs", v));
  }

  #fallbackWarning(bucket, fallbackMs, t) {
    if (typeof bucket !== "string") throw typeError("bucket", "a string", bucket);
    if (!this.#inForce.has(bucket)) core.checkBucketCore(bucket);
    const code = !this.#tableRead ? "NO_TABLE" : t >= this.#staleAt ? "STALE" : "FEW_SAMPLES";
    this.#warn(code, bucket, fallbackMs);
  }

  /** Tells onWarning, once per code and bucket (invariant 3). */
  #warn(code, bucket, value) {
    const key = `${code}\u0000${bucket}`;
    if (this.#warned.has(key)) return;
    // Bounded as the names timeout() holds: when full, each warning may be told once more.
    if (this.#warned.size >= this.#held) this.#warned.clear();
    this.#warned.add(key);
    try {
      this.#onWarning({ code, bucket, message: core.bookWarningText(code, bucket, value) });
    } catch {
      // A throwing onWarning must not break the caller's request.
    }
  }

  /**
   * Reads the fleet's table now (GET <base>/table) and serves it; resolves
   * when done (a failure keeps what is served, with a warning, and never rejects).
   * @returns {Promise<void>}
   */
  refresh() {
    if (!this.#fetch) return Promise.resolve();
    return this.#refresh(now());
  }

  async #refresh(t) {
    const lost = this.#schedule.refreshStarted(t);
    this.#refreshAt = this.#schedule.refreshAt();
    if (lost) this.#warn("REFRESH_LOST", "no answer", this.#refreshAt - t);
    try {
      const res = await this.#fetch(new Request(`${this.#base}/table`, { headers: { accept: "application/json" } }));
      if (!res.ok) throw new Error(`status ${res.status}`);
      const table = await res.json();
      if (table?.v !== 1 || typeof table.buckets !== "object" || table.buckets === null) throw new Error("not a version 1 table");
      const rows = Object.entries(table.buckets);
      const column = (key) => Float64Array.from(rows, ([, r]) => num(r?.[key]));
      this.#schedule.table(now(), num(table.q), rows.map(([name]) => name), column("timeoutMs"), column("floorMs"), column("n"), this.#maxBuckets);
      this.#tableRead = true;
      this.#mirror();
    } catch (error) {
      this.#schedule.refreshFailed(now());
      this.#refreshAt = this.#schedule.refreshAt();
      this.#warn("REFRESH_FAILED", error instanceof Error ? error.message : String(error), this.#schedule.refreshEveryMs);
    }
  }

  #mirror() {
    const names = this.#schedule.servedNames();
    const values = this.#schedule.servedValues();
    const served = new Map();
    for (let i = 0; i < names.length; i++) served.set(names[i], values[i]);
    this.#served = served;
    this.#pending = new Set(this.#schedule.pendingNames());
    this.#staleAt = this.#schedule.staleAt();
    this.#refreshAt = this.#schedule.refreshAt();
  }

  /**
   * Sends what was recorded since the last flush to the aggregator (POST
   * <base>/flush), at most once per `flushEveryMs` (earlier calls send
   * nothing), and refreshes the table when due. Meant for
   * `ctx.waitUntil(book.flush())`; never rejects.
   * @returns {Promise<{ sent: number, kept: number, dropped: number }>} buckets sent, kept for the next flush, dropped
   */
  flush() {
    return this.#flush(false);
  }

  /** `flush()`; `force`: send now whatever `flushEveryMs` says, and read no table (a process ending). */
  async #flush(force) {
    const result = { sent: 0, kept: 0, dropped: 0 };
    if (!this.#fetch) return result;
    const t = now();
    const work = [];
    if (!force && t >= this.#refreshAt) work.push(this.#refresh(t));
    if ((force || t >= this.#flushAt) && this.#entries.size > 0) {
      this.#schedule.flushStarted(t);
      this.#flushAt = this.#schedule.flushAt();
      for (const bytes of this.takeFlush()) work.push(this.#send(bytes, result));
    }
    await Promise.all(work);
    return result;
  }

  /**
   * For a long-lived server (Node, Deno, Bun): flushes every `flushEveryMs`
   * and, when the process is told to stop (`signals`, default SIGTERM and
   * SIGINT), sends what is left before it ends: the signal is raised again
   * once the flush is done, unless another listener of the application's
   * handles it. Returns `stop()`, which ends both and sends what is left at
   * once. A Worker has no process to stop: there, `ctx.waitUntil(book.flush())`.
   * @param {{ signals?: string[] }} [options]
   * @returns {() => Promise<{ sent: number, kept: number, dropped: number }>}
   */
  autoFlush(options) {
    const o = obj("options", options, "an object like { signals }", true);
    const signals = o.signals ?? ["SIGTERM", "SIGINT"];
    if (!Array.isArray(signals) || !signals.every((s) => typeof s === "string")) throw typeError("options.signals", "an array of signal names", signals);
    // Node and Bun; Deno through its `process`. Browsers and Workers have none: the interval only.
    const host = globalThis.process;
    const listening = typeof host?.on === "function" && typeof host.removeListener === "function" ? signals : [];
    const { setTimeout: setT, clearTimeout: disarm } = clock;
    const hostTimer = isHostClock();
    // Unref'd: the interval never keeps a process alive by itself.
    const arm = () => {
      const t = setT(tick, timerMs(this.#schedule.flushEveryMs));
      if (hostTimer) unref(t);
      return t;
    };
    const tick = () => {
      this.#flush(false);
      timer = arm();
    };
    let timer = arm();
    let stopped = false;
    const stop = async () => {
      if (stopped) return { sent: 0, kept: 0, dropped: 0 };
      stopped = true;
      disarm(timer);
      for (const s of listening) host.removeListener(s, onSignal);
      return this.#flush(true);
    };
    /** @param {string} signal */
    const onSignal = async (signal) => {
      await stop();
      if (host.listenerCount(signal) === 0) host.kill(host.pid, signal);
    };
    for (const s of listening) host.on(s, onSignal);
    return stop;
  }

  async #send(bytes, result) {
    const buckets = core.readFlushCore(bytes);
    let status = 0;
    let failure = "";
    /** @type {{ bucket: string, code: string }[]} */
    let refused = [];
    try {
      const res = await this.#fetch(
        new Request(`${this.#base}/flush`, { method: "POST", body: bytes, headers: { "content-type": "application/octet-stream" } }),
      );
      status = res.status;
      refused = status === 200 ? await refusedBuckets(res) : [];
      if (status !== 200) await res.body?.cancel();
    } catch (error) {
      status = 0;
      failure = error instanceof Error ? error.message : String(error);
    }
    if (status >= 200 && status < 300) {
      // The aggregator merged every bucket but the ones it names (each for
      // its own reason): only those are dropped.
      const names = new Set(buckets.map((b) => b.name));
      const dropped = refused.filter((r) => names.has(r.bucket));
      result.sent += buckets.length - dropped.length;
      result.dropped += dropped.length;
      for (const r of dropped) this.#warn("FLUSH_REFUSED", `bucket '${r.bucket}': ${r.code}`, status);
      for (const b of buckets) b.successes.free();
      return;
    }
    if (status === 400 || status === 413) {
      result.dropped += buckets.length;
      for (const b of buckets) b.successes.free();
      this.#warn("FLUSH_REFUSED", `${buckets.length} bucket(s)`, status);
      return;
    }
    // Unreachable or failing: merge back for the next flush (invariant 1).
    for (const b of buckets) {
      let e = this.#entries.get(b.name);
      if (e === undefined && this.#entries.size < this.#maxBuckets) {
        e = new Entry(this.#relativeError);
        this.#entries.set(b.name, e);
      }
      if (e === undefined) {
        result.dropped++;
      } else {
        LatencySketch.core(e.sketch, SKETCH_TOKEN).merge(b.successes);
        e.timeouts += b.timeouts;
        e.errors += b.errors;
        if (b.inForceMs !== undefined && !this.#inForce.has(b.name)) this.#inForce.set(b.name, b.inForceMs);
        result.kept++;
      }
      b.successes.free();
    }
    this.#warn("FLUSH_FAILED", status === 0 ? failure : `status ${status}`, this.#schedule.flushEveryMs);
  }

  /**
   * Takes everything recorded since the last flush as flush bytes (one
   * Uint8Array per 256 KiB at most), and empties the book: for sending them
   * yourself. `flush()` does this and sends them.
   * @returns {Uint8Array[]}
   */
  takeFlush() {
    const entries = [...this.#entries];
    this.#entries = new Map();
    const out = this.#write(entries);
    for (const [, e] of entries) e.sketch.free();
    return out;
  }

  #write(entries) {
    const w = new core.FlushWriterCore(this.#relativeError);
    try {
      for (const [name, e] of entries) {
        const inForce = this.#inForce.get(name) ?? (e.timedOutMs > 0 ? e.timedOutMs : NaN);
        if (e.sketch.count === 0) w.push(name, inForce, e.timeouts, e.errors);
        else w.pushSketch(name, inForce, e.timeouts, e.errors, LatencySketch.core(e.sketch, SKETCH_TOKEN));
      }
      const bytes = w.toBytes();
      if (bytes.length <= MAX_FLUSH_BYTES || entries.length < 2) return [bytes];
    } finally {
      w.free();
    }
    const half = entries.length >> 1;
    return [...this.#write(entries.slice(0, half)), ...this.#write(entries.slice(half))];
  }

  /** Buckets recorded since the last flush. */
  get size() {
    return this.#entries.size;
  }
}

/**
 * The buckets a 200 answer to a flush names as refused (`{ refused: [{
 * bucket, code, message }] }`: the rest was merged); none for any other body.
 * @param {Response} res
 * @returns {Promise<{ bucket: string, code: string }[]>}
 */
async function refusedBuckets(res) {
  let body;
  try {
    body = await res.json();
  } catch {
    return [];
  }
  const list = Array.isArray(body?.refused) ? body.refused : [];
  return list
    .filter((r) => typeof r?.bucket === "string" && typeof r.code === "string")
    .map((r) => ({ bucket: r.bucket, code: r.code }));
}

/** A table number, or NaN (null, absent, not a number): the core treats NaN as absent. */
function num(v) {
  return typeof v === "number" ? v : NaN;
}

/**
 * Reads flush bytes (what `takeFlush()` returns): each bucket's name,
 * in-force timeout, counts and successes as a LatencySketch. A RangeError
 * (`.code` FOREIGN_BYTES, TRUNCATED_BYTES, CORRUPT_BYTES, TOO_LARGE, …) for
 * bytes that are not a flush.
 * @param {Uint8Array} bytes
 */
export function readFlush(bytes) {
  if (!isReady()) notReady("readFlush");
  if (!(bytes instanceof Uint8Array)) throw typeError("bytes", "a Uint8Array", bytes);
  return core.readFlushCore(bytes).map((b) => {
    const successes = LatencySketch.fromBytes(b.successes.toBytes());
    b.successes.free();
    return { name: b.name, inForceMs: b.inForceMs, timeouts: b.timeouts, errors: b.errors, successes };
  });
}
