// edge-deadline/durable: the fleet's aggregator on the platform's own storage.
// Isolates POST their flush bytes to `<base>/flush`; everyone GETs the derived
// table from `<base>/table`. The merging, windowing, validation and derivation
// are the core's (src/core/fleet.rs, through FleetAggregatorCore); this file
// owns HTTP, storage and the write schedule.
//
// # Two engines
// - `TimeoutAggregator`, a Durable Object class: one instance is the one
//   place the fleet's sketches meet. Its memory is authoritative (a Durable
//   Object runs single-threaded, in one place), so a flush is merged at once
//   and refused at once; storage holds every window so a restart (eviction,
//   deploy, crash) loses nothing that was answered 204.
// - `kvAggregator(kv)`, on Deno KV: any number of Deno processes may share
//   one KV database, so none of them owns the state. A flush is merged into
//   the window read back from KV and written with an atomic check on that
//   window's versionstamp; on a conflict it is read and merged again.
//
// # Write cost: group commit
// A flush is answered 204 only once its window is stored. Flushes that
// arrive while a write is in flight wait for the next write, which carries
// all of them: one write per batch of concurrent flushes, not one per flush,
// and never a 204 for data that is not yet stored. In a Durable Object a
// write is in flight until `storage.sync()` says it is on disk (put() alone
// resolves at once, from the object's cache, and would batch nothing). Only windows that changed
// are written (a flush rewrites its window, never the whole day).
//
// # Values and their limits
// A window's bytes (1 to 1 024 buckets, each a sketch of at most 16 KB) can
// exceed a storage value's limit (128 KiB in Durable Object storage, 64 KiB
// in Deno KV), so each is split into chunks under its own keys, with a head
// key holding the chunk count; the head and the chunks are written together
// (one Durable Object write, one KV atomic operation).
//
// # Invariants (tests/fleet)
// 1. 204 means stored: a restart answers the same table.
// 2. A refused flush (400 or 413, JSON `{ code, message }`) changes nothing.
// 3. No timer is left behind: the only waits are the writes a request awaits.
import { FleetAggregatorCore, isReady, notReady } from "./derive-main.js";
import { concat } from "./bytes.js";

/** The most bytes read from a flush request: the core refuses more than 256 KiB; one byte over says so. */
const READ_LIMIT = 256 * 1024 + 1;
/** Chunk size in Durable Object storage (values up to 128 KiB). */
const DO_CHUNK = 120 * 1024;
/** Chunk size in Deno KV (values up to 64 KiB). */
const KV_CHUNK = 60 * 1024;
/** How long a derived table is served again when nothing was written since. */
const TABLE_MAX_AGE_MS = 1000;
/** How often a KV merge is retried after a conflicting write by another process. */
const KV_RETRIES = 16;

/** The default budget of one window's stored bytes; `maxWindowBytes` sets it within the bounds below. */
const MAX_WINDOW_BYTES = 2 * 1024 * 1024;
const MAX_WINDOW_BYTES_LO = 64 * 1024;
const MAX_WINDOW_BYTES_HI = 16 * 1024 * 1024;
/** Deno KV: chunks written per atomic operation (each at most KV_CHUNK: well under the 800 KiB of one operation). */
const KV_CHUNKS_PER_OP = 8;

function core(options) {
  if (!isReady()) notReady("TimeoutAggregator");
  return new FleetAggregatorCore(options);
}

/** `options` without the host's own `maxWindowBytes`, and that budget, checked. */
function hostOptions(options, param) {
  const { maxWindowBytes = MAX_WINDOW_BYTES, ...coreOptions } = options ?? {};
  if (typeof maxWindowBytes !== "number" || !Number.isInteger(maxWindowBytes) || maxWindowBytes < MAX_WINDOW_BYTES_LO || maxWindowBytes > MAX_WINDOW_BYTES_HI) {
    const e = new RangeError(`'${param}' must be a whole number of bytes from ${MAX_WINDOW_BYTES_LO} to ${MAX_WINDOW_BYTES_HI}, got ${String(maxWindowBytes)}`);
    Object.assign(e, { param, code: "OUT_OF_RANGE" });
    throw e;
  }
  return { maxWindowBytes, coreOptions };
}

/** A flush refused because its window is at its byte budget (429: the next window takes it). */
function windowFull(maxWindowBytes, retryAfterMs) {
  const e = new RangeError(`this window holds its budget of ${maxWindowBytes} bytes; flushes are taken again from the next window`);
  Object.assign(e, { code: "WINDOW_FULL", retryAfterMs: Math.max(0, Math.ceil(retryAfterMs)) });
  return e;
}

const json = (status, body) =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json; charset=utf-8", "cache-control": "no-store" } });

/** The request's body, or `undefined` when it is longer than `max` bytes (then not read further). */
async function readCapped(request, max) {
  const declared = Number(request.headers.get("content-length"));
  if (declared > max) return undefined;
  if (!request.body) return new Uint8Array(0);
  const reader = request.body.getReader();
  const parts = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > max) {
      await reader.cancel().catch(() => {});
      return undefined;
    }
    parts.push(value);
  }
  return concat(parts, total);
}

/** A core refusal as the HTTP answer: 413 for too big, 400 otherwise. */
function refusal(e) {
  if (e?.code === "WINDOW_FULL") {
    const r = json(429, { code: e.code, message: e.message });
    r.headers.set("retry-after", String(Math.max(1, Math.ceil((Number(e.retryAfterMs) || 0) / 1000))));
    return r;
  }
  if ((e instanceof RangeError || e instanceof TypeError) && typeof e.code === "string") {
    return json(e.code === "TOO_LARGE" ? 413 : 400, { code: e.code, message: e.message });
  }
  // A storage write that failed: nothing was merged, the flush may be sent again. No storage error text goes out.
  if (e?.code === "STORE_FAILED") return json(503, { code: e.code, message: e.message });
  throw e;
}

/** `serve`'s `auth` for a caller that holds the binding (or the object, in process): no token is asked. */
const TRUSTED = Symbol("trusted");

/**
 * Whether `a` and `b` (strings) are equal, in a time that depends on their lengths only, not on where they
 * differ: a bearer token is compared without telling an outsider how much of it was right.
 */
function sameSecret(a, b) {
  const x = new TextEncoder().encode(a);
  const y = new TextEncoder().encode(b);
  let diff = x.length ^ y.length;
  for (let i = 0; i < x.length; i++) diff |= x[i] ^ (y[i % (y.length || 1)] ?? 0);
  return diff === 0;
}

/** Whether `request` carries `Authorization: Bearer <secret>`; never, when no secret is configured. */
function authorized(request, secret) {
  if (typeof secret !== "string" || secret.length === 0) return false;
  const m = /^Bearer[ ]+(\S+)\s*$/i.exec(request.headers.get("authorization") ?? "");
  return m !== null && sameSecret(m[1], secret);
}

const unauthorized = () => {
  const r = json(401, { code: "UNAUTHORIZED", message: "this endpoint needs the aggregator's bearer token" });
  r.headers.set("www-authenticate", 'Bearer realm="edge-deadline"');
  return r;
};

/**
 * Routes `POST …/flush` and `GET …/table` to `agg.flush(bytes)` and `agg.table()`. `auth` is TRUSTED (a
 * binding) or `{ read, write }`, the secrets a request must carry as a bearer token: the write secret for
 * a flush, the read secret for the table; without a configured secret that route answers 401 to everyone.
 * An unauthorized request is answered before its body is read, and changes nothing.
 */
async function serve(request, agg, auth) {
  const path = new URL(request.url).pathname;
  if (path.endsWith("/flush")) {
    if (auth !== TRUSTED && !authorized(request, auth?.write)) return unauthorized();
    if (request.method !== "POST") return json(405, { code: "METHOD", message: "POST the flush bytes to /flush" });
    const bytes = await readCapped(request, READ_LIMIT);
    if (bytes === undefined) return json(413, { code: "TOO_LARGE", message: `a flush is at most ${READ_LIMIT - 1} bytes` });
    let refused;
    try {
      refused = (await agg.flush(bytes))?.refused;
    } catch (e) {
      return refusal(e);
    }
    // Some buckets refused on their own (the rest is stored): the books drop those only.
    if (Array.isArray(refused) && refused.length > 0) return json(200, { refused });
    return new Response(null, { status: 204 });
  }
  if (path.endsWith("/table")) {
    if (auth !== TRUSTED && !authorized(request, auth?.read)) return unauthorized();
    if (request.method !== "GET" && request.method !== "HEAD") return json(405, { code: "METHOD", message: "GET /table" });
    return json(200, await agg.table());
  }
  return json(404, { code: "NOT_FOUND", message: "the aggregator answers POST /flush and GET /table" });
}

/**
 * The in-Worker (or in-process) way to the aggregator, for `TimeoutBook`'s `aggregator` option: an object
 * with `fetch(request)` that hands `POST …/flush` and `GET …/table` to `target.flush(bytes)` and
 * `target.table()`, with no token (whoever holds the binding may write and read). `target` is a
 * `kvAggregator`, or a function answering the Durable Object's stub (called per request: a stub belongs to
 * the request that made it), whose `flush` and `table` are reached by RPC.
 * @param {{ flush(bytes: Uint8Array): Promise<{ refused?: unknown[] } | void>, table(): unknown } | (() => { flush(bytes: Uint8Array): Promise<{ refused?: unknown[] } | void>, table(): unknown })} target
 */
export function aggregatorBinding(target) {
  const ok = (t) => t !== null && (typeof t === "object" || typeof t === "function") && "flush" in t && "table" in t;
  if (typeof target !== "function" && !ok(target)) {
    const e = new TypeError("'target' must be a kvAggregator or a function answering the TimeoutAggregator's stub");
    Object.assign(e, { param: "target", code: "INVALID_TYPE" });
    throw e;
  }
  return { fetch: (request) => serve(request, typeof target === "function" ? target() : target, TRUSTED) };
}

/**
 * `bytes` in chunks of at most `size`, each a copy: storage serializes a typed array with its whole
 * ArrayBuffer, so a view into the window would store the whole window under every chunk's key.
 */
function chunks(bytes, size) {
  const out = [];
  for (let at = 0; at < bytes.byteLength || out.length === 0; at += size) out.push(bytes.slice(at, at + size));
  return out;
}

/**
 * Group commit: `commit()` resolves once a write that started after the call
 * has finished; calls made while a write is in flight share the next one.
 */
function groupCommit(write) {
  let next = null;
  let writing = Promise.resolve();
  const start = () => {
    next = null;
    writing = write();
    return writing;
  };
  return () => {
    next ??= writing.then(start, start);
    return next;
  };
}

/** The Worker secrets (environment variables) holding the bearer tokens of the object's HTTP endpoint. */
const SECRETS = { read: "TIMEOUTS_READ_TOKEN", write: "TIMEOUTS_WRITE_TOKEN" };

/** A failed storage write, as a flush's answer: nothing of it was merged. */
function storeFailed() {
  const e = new Error("the aggregator could not store this flush; nothing of it was merged: send it again");
  e.code = "STORE_FAILED";
  return e;
}

/**
 * The Durable Object class, made on `Base` (workerd's `DurableObject`, so that isolates reach `flush` and
 * `table` by RPC through the binding; a plain class elsewhere).
 * @param {new (ctx: any, env: any) => object} Base
 */
export function aggregatorClass(Base) {
  return class TimeoutAggregator extends Base {
    /** @type {{ windowMs?: number, windows?: number, q?: number, safety?: number, relativeError?: number }} */
    static options = {};
    /** The names of the Worker secrets its HTTP endpoint checks: a subclass may rename them. */
    static secrets = SECRETS;
    #storage;
    /** What is stored: the windows as they are on disk. The table is derived from it alone. */
    #core;
    /** What is stored plus the flushes merged since: the windows the next write stores. */
    #pending;
    /** Flushes merged into #pending that no write has carried yet: `{ resolve, reject }`. */
    #queue = [];
    /** index → chunks stored, to delete the ones a shorter window leaves. */
    #stored = new Map();
    /** Windows whose stored value may differ from #core's after a failed write: rewritten by the next. */
    #rewrite = new Set();
    #commit;
    #secrets;
    /** The table derived after the last write: `{ version, at, table }`. */
    #table = null;
    #version = 0;
    #coreOptions;
    #maxWindowBytes;
    #windowMs;
    /** index → bytes of the window as stored. */
    #sizes = new Map();
    /** index → the chunks of a stored window that did not read back: set aside (q:) by the write that replaces it. */
    #damaged = new Map();
    /** index → how many chunks are set aside under q:index:i, deleted once the window would have expired. */
    #quarantined = new Map();
    /** index → bytes of the flushes merged into #pending and not yet stored (an upper bound of the growth). */
    #pendingBytes = new Map();

    constructor(ctx, env) {
      super(ctx, env);
      this.#storage = ctx.storage;
      const { maxWindowBytes, coreOptions } = hostOptions(this.constructor.options, "options.maxWindowBytes");
      this.#coreOptions = coreOptions;
      this.#maxWindowBytes = maxWindowBytes;
      this.#core = core(coreOptions);
      this.#windowMs = this.#core.options().windowMs;
      this.#pending = core(coreOptions);
      const names = this.constructor.secrets ?? SECRETS;
      this.#secrets = { read: env?.[names.read], write: env?.[names.write] };
      this.#commit = groupCommit(() => this.#write());
      ctx.blockConcurrencyWhile(() => this.#load());
    }

    async #load() {
      const all = await this.#storage.list({ prefix: "w:" });
      const heads = new Map();
      for (const [k, v] of all) {
        const m = /^w:(-?\d+)$/.exec(k);
        if (m) heads.set(Number(m[1]), v);
      }
      for (const [index, n] of [...heads].sort((a, b) => a[0] - b[0])) {
        const parts = [];
        for (let i = 0; i < n; i++) parts.push(new Uint8Array(all.get(`w:${index}:${i}`) ?? []));
        // A window that does not read back (damaged storage) is refused whole by the core and left out.
        const bytes = concat(parts);
        try {
          this.#core.loadWindow(bytes);
          this.#sizes.set(index, bytes.byteLength);
        } catch {
          // Left out; a write to its window sets these chunks aside rather than erasing them.
          this.#damaged.set(index, parts);
        }
        this.#stored.set(index, n);
      }
      for (const [k, v] of await this.#storage.list({ prefix: "q:" })) {
        const m = /^q:(-?\d+)$/.exec(k);
        if (m) this.#quarantined.set(Number(m[1]), v);
      }
      this.#core.expire(Date.now());
      const { dropped } = this.#core.takeChanges();
      // Windows that aged out while the object was not running, and damaged ones as old: the next
      // write deletes their keys (storage stays within the windows kept).
      for (const index of dropped) this.#rewrite.add(index);
      const oldest = this.#oldestKept();
      for (const index of [...this.#damaged.keys()]) {
        if (index >= oldest) continue;
        this.#damaged.delete(index);
        this.#rewrite.add(index);
      }
    }

    /** The index of the oldest window kept now (the core's rule: the current one and `windows` − 1 before it). */
    #oldestKept() {
      return Math.floor(Date.now() / this.#windowMs) - this.#core.options().windows + 1;
    }

    /**
     * Merges `bytes` into #pending, which holds a copy of a window once a flush reached it: when the
     * flush reaches a window #pending has no copy of yet, the stored one is copied in and the flush
     * merged again, so the refusal is the one the stored window with every pending flush would give.
     */
    #merge(bytes, now) {
      // The budget, before anything changes: the stored window plus every flush merged since, plus this one,
      // bounds what the window may become (merging adds at most a flush's bytes). The window of `now`
      // is the one flushes reach (a clock that went back aside).
      const at = Math.floor(now / this.#windowMs);
      const size = this.#sizes.get(at) ?? 0;
      if (size + (this.#pendingBytes.get(at) ?? 0) + bytes.byteLength > this.#maxWindowBytes) {
        // Past the bound, the window's exact size now (flushes of buckets it has grow it far less
        // than their bytes): the bound starts again from it.
        const exact = this.#pending.windowIndexes().includes(at) ? (this.#pending.windowBytes(at)?.byteLength ?? size) : size;
        this.#pendingBytes.set(at, Math.max(0, exact - size));
        if (exact + bytes.byteLength > this.#maxWindowBytes) throw windowFull(this.#maxWindowBytes, (at + 1) * this.#windowMs - now);
      }
      const { window, refused } = this.#mergePending(bytes, now);
      this.#pendingBytes.set(window, (this.#pendingBytes.get(window) ?? 0) + bytes.byteLength);
      return refused;
    }

    /** `{ window, refused }`: the core's merge into #pending, against the stored window. */
    #mergePending(bytes, now) {
      const had = new Set(this.#pending.windowIndexes());
      const first = this.#pending.mergeFlush(bytes, now);
      if (had.has(first.window)) return first;
      const stored = this.#core.windowBytes(first.window);
      if (!stored) return first;
      this.#pending.loadWindow(stored);
      return this.#pending.mergeFlush(bytes, now);
    }

    async #write() {
      const batch = this.#queue;
      this.#queue = [];
      // Flushes merged from now on count against their window until the write after this one.
      this.#pendingBytes = new Map();
      let windows = new Set(this.#rewrite);
      const stored = new Map(this.#stored);
      const written = new Map();
      const movedAside = new Map();
      const expiredAside = [];
      try {
        this.#core.expire(Date.now());
        const { dropped } = this.#core.takeChanges();
        const { dirty } = this.#pending.takeChanges();
        windows = new Set([...dirty, ...this.#rewrite, ...dropped]);
        const put = {};
        const del = [];
        // Windows set aside once are deleted when they would have expired.
        const oldest = this.#oldestKept();
        for (const [index, n] of this.#quarantined) {
          if (index >= oldest) continue;
          del.push(`q:${index}`);
          for (let i = 0; i < n; i++) del.push(`q:${index}:${i}`);
          expiredAside.push(index);
        }
        for (const index of windows) {
          // A window that is not kept (dropped, or never stored) has its keys deleted.
          const bytes = dropped.includes(index) ? undefined : (this.#pending.windowBytes(index) ?? this.#core.windowBytes(index));
          const had = stored.get(index) ?? 0;
          if (!bytes) {
            if (had > 0 || dropped.includes(index)) del.push(`w:${index}`);
            for (let i = 0; i < had; i++) del.push(`w:${index}:${i}`);
            stored.delete(index);
            continue;
          }
          written.set(index, bytes);
          const aside = this.#damaged.get(index);
          if (aside) {
            put[`q:${index}`] = aside.length;
            aside.forEach((p, i) => (put[`q:${index}:${i}`] = p));
            for (let i = aside.length; i < (this.#quarantined.get(index) ?? 0); i++) del.push(`q:${index}:${i}`);
            movedAside.set(index, aside.length);
          }
          const parts = chunks(bytes, DO_CHUNK);
          put[`w:${index}`] = parts.length;
          parts.forEach((p, i) => (put[`w:${index}:${i}`] = p));
          for (let i = parts.length; i < had; i++) del.push(`w:${index}:${i}`);
          stored.set(index, parts.length);
        }
        // No await between them: the Durable Object applies these as one write.
        const writes = [];
        const keys = Object.keys(put);
        for (let i = 0; i < keys.length; i += 128) writes.push(this.#storage.put(Object.fromEntries(keys.slice(i, i + 128).map((k) => [k, put[k]]))));
        for (let i = 0; i < del.length; i += 128) writes.push(this.#storage.delete(del.slice(i, i + 128)));
        // put() resolves once the value is in the object's cache; sync() once it is
        // on disk. Waiting for the disk is what makes the batch: flushes arriving
        // meanwhile are merged in memory and share the next write.
        writes.push(this.#storage.sync());
        await Promise.all(writes);
      } catch {
        // Nothing of this batch counts: the flushes it carried, and those merged on top of it
        // since, are answered STORE_FAILED (their senders keep them and send them again);
        // #pending starts again from what is stored, and the next write puts back the stored
        // value (or the absence) of every window this one may have changed.
        const failed = [...batch, ...this.#queue];
        this.#queue = [];
        this.#pendingBytes = new Map();
        this.#pending.free?.();
        this.#pending = core(this.#coreOptions);
        for (const index of windows) {
          this.#rewrite.add(index);
          this.#stored.set(index, Math.max(this.#stored.get(index) ?? 0, stored.get(index) ?? 0));
        }
        for (const f of failed) f.reject(storeFailed());
        return;
      }
      this.#stored = stored;
      this.#rewrite.clear();
      for (const index of expiredAside) this.#quarantined.delete(index);
      for (const [index, n] of movedAside) {
        this.#quarantined.set(index, n);
        this.#damaged.delete(index);
      }
      for (const [index, bytes] of written) {
        try {
          this.#core.loadWindow(bytes);
        } catch {
          // Left out, as a restart would leave it out: the flushes it carried are still answered.
        }
        this.#sizes.set(index, bytes.byteLength);
      }
      for (const index of this.#sizes.keys()) if (!stored.has(index)) this.#sizes.delete(index);
      this.#core.takeChanges();
      this.#version++;
      for (const f of batch) f.resolve();
    }

    /**
     * Merges one flush (refusals throw the core's RangeError, before anything changes) and resolves once
     * it is stored; a failed write rejects with `.code` "STORE_FAILED" and counts nothing of it.
     */
    async flush(bytes) {
      const refused = this.#merge(bytes, Date.now());
      const done = new Promise((resolve, reject) => this.#queue.push({ resolve, reject }));
      this.#commit().catch(() => {});
      await done;
      return { refused };
    }

    /**
     * The table of what is stored. The core keeps its rows: after a write only those of the buckets it changed are
     * derived again (at the first read in a new window, those whose span moved). Served again until the next write,
     * or for a second.
     */
    table() {
      const t = Date.now();
      const c = this.#table;
      if (c && c.version === this.#version && t - c.at >= 0 && t - c.at < TABLE_MAX_AGE_MS) return c.table;
      const table = this.#core.table(t);
      this.#table = { version: this.#version, at: t, table };
      return table;
    }

    /** `POST …/flush` with the write token, `GET …/table` with the read token (`static secrets` names them). */
    fetch(request) {
      return serve(request, this, this.#secrets);
    }
  };
}

/** A plain-class TimeoutAggregator (edge-deadline/durable for workerd makes it on `DurableObject`). */
export const TimeoutAggregator = aggregatorClass(class {});

/**
 * The aggregator on Deno KV, for Deno servers: `Deno.serve((r) => agg.fetch(r))`.
 * @param {any} kv what `await Deno.openKv(path)` returned
 * @param {{ prefix?: unknown[], windowMs?: number, windows?: number, q?: number, safety?: number, relativeError?: number, now?: () => number }} [options]
 */
export function kvAggregator(kv, options = {}) {
  if (!kv || typeof kv.atomic !== "function" || typeof kv.list !== "function") {
    const e = new TypeError("'kv' must be a Deno.Kv (await Deno.openKv())");
    Object.assign(e, { param: "kv", code: "INVALID_TYPE" });
    throw e;
  }
  const { prefix = ["edge-deadline", "fleet"], now = Date.now, readToken, writeToken, ...coreOptions } = options;
  for (const [name, v] of [["readToken", readToken], ["writeToken", writeToken]]) {
    if (v !== undefined && (typeof v !== "string" || v.length === 0)) {
      const e = new TypeError(`'options.${name}' must be a non-empty string (or absent: then fetch() refuses that route)`);
      Object.assign(e, { param: `options.${name}`, code: "INVALID_TYPE" });
      throw e;
    }
  }
  if (!Array.isArray(prefix)) {
    const e = new TypeError("'options.prefix' must be an array of KV key parts");
    Object.assign(e, { param: "options.prefix", code: "INVALID_TYPE" });
    throw e;
  }
  const { maxWindowBytes, coreOptions: windowOptions } = hostOptions(coreOptions, "options.maxWindowBytes");
  const resolved = core(windowOptions).options();
  const { windowMs, windows } = resolved;
  const expireIn = windowMs * (windows + 1);
  // A window's head, [...prefix, "w", index], holds { g, n, size }: its bytes are the n chunks under
  // [...prefix, "c", index, g, i]. Chunks are written first, several atomic operations of at most
  // KV_CHUNKS_PER_OP chunks each (no operation nears Deno KV's 800 KiB), then the head is switched to
  // them in one operation checked against the head's versionstamp: readers see the old window or the
  // new one, never a mix. The old generation's chunks are deleted after; expireIn removes any left.
  const windowKey = (index) => [...prefix, "w", index];
  const chunkKey = (index, g, i) => [...prefix, "c", index, g, i];
  /** Where the head of a stored window that did not read back is kept, once a flush replaced it. */
  const quarantineKey = (index, stamp) => [...prefix, "q", index, stamp];
  /** Flushes waiting for the next write: bytes and how to answer. */
  let waiting = [];
  /** The windows the last table() read, and their heads' versionstamps: `{ agg, stamps }`. */
  let read = null;

  /** The window's bytes for head `value` (undefined: a chunk is missing, the head moved meanwhile). */
  const readChunks = async (index, value) => {
    if (typeof value === "number") {
      // The layout before generations: chunks under the head's own key.
      const parts = [];
      for await (const e of kv.list({ prefix: windowKey(index) })) parts[e.key[e.key.length - 1]] = e.value;
      return concat(parts.slice(0, value).map((p) => new Uint8Array(p ?? [])));
    }
    if (!value || typeof value !== "object" || typeof value.g !== "string" || !Number.isInteger(value.n)) return new Uint8Array(0);
    const parts = [];
    for (let i = 0; i < value.n; i += 10) {
      const got = await kv.getMany(Array.from({ length: Math.min(10, value.n - i) }, (_, j) => chunkKey(index, value.g, i + j)));
      for (const e of got) {
        if (e.value == null) return undefined;
        parts.push(new Uint8Array(e.value));
      }
    }
    return concat(parts);
  };

  /**
   * The window at `index`: its head (for the check), its bytes as read, and a core holding it;
   * `damaged`: the stored window did not read back (the core holds nothing of it).
   */
  const readWindow = async (index) => {
    for (let attempt = 0; ; attempt++) {
      const head = await kv.get(windowKey(index));
      const agg = core(windowOptions);
      if (head.value == null) return { agg, head, bytes: undefined };
      const bytes = await readChunks(index, head.value);
      if (bytes === undefined && attempt < KV_RETRIES) continue;
      try {
        if (bytes) agg.loadWindow(bytes);
        return { agg, head, bytes };
      } catch {
        // Merged from nothing now; the damaged bytes are kept aside by the write (never erased).
        return { agg: core(windowOptions), head, bytes: undefined, damaged: true };
      }
    }
  };

  /** Deletes a generation's chunks (or the old layout's), best effort: expireIn is the backstop. */
  const dropChunks = async (index, value) => {
    const keys = [];
    if (typeof value === "number") for (let i = 0; i < value; i++) keys.push([...windowKey(index), i]);
    else if (value && typeof value.g === "string") for (let i = 0; i < value.n; i++) keys.push(chunkKey(index, value.g, i));
    for (let i = 0; i < keys.length; i += 100) {
      const op = kv.atomic();
      for (const k of keys.slice(i, i + 100)) op.delete(k);
      await op.commit().catch(() => {});
    }
  };

  /** Commits `op`, retrying "database is locked" (a local database shared by two processes) like a conflict. */
  const commitOp = async (op, attempt) => {
    try {
      return await op.commit();
    } catch (e) {
      if (attempt >= KV_RETRIES || !/locked|busy/i.test(String(e?.message))) throw e;
      await new Promise((resolve) => setTimeout(resolve, 2 + Math.random() * 8 * (attempt + 1)));
      return { ok: false };
    }
  };

  /**
   * Merges `batch` into `agg` (holding the window as read, `size` bytes): each flush's result, the window's
   * budget kept. A flush that would take the window past `maxWindowBytes` is refused (WINDOW_FULL) and
   * leaves it as it was.
   */
  const mergeBatch = (agg, index, size, batch, t) => {
    let bound = size;
    return batch.map(({ bytes }) => {
      try {
        if (bound + bytes.byteLength <= maxWindowBytes) {
          const { refused } = agg.mergeFlush(bytes, t);
          bound += bytes.byteLength;
          return refused;
        }
        const before = agg.windowBytes(index);
        const { refused } = agg.mergeFlush(bytes, t);
        const after = agg.windowBytes(index);
        if (after && after.byteLength > maxWindowBytes) {
          if (before) agg.loadWindow(before);
          else agg.expire((index + windows + 1) * windowMs);
          bound = before?.byteLength ?? 0;
          return windowFull(maxWindowBytes, (index + 1) * windowMs - t);
        }
        bound = after?.byteLength ?? 0;
        return refused;
      } catch (e) {
        return e;
      }
    });
  };

  const write = async () => {
    const batch = waiting;
    waiting = [];
    if (batch.length === 0) return;
    try {
      await writeBatch(batch);
    } catch {
      // Nothing became visible (the head switch is the commit); no storage error text goes out.
      for (const { done } of batch) done(storeFailed());
    }
  };

  const writeBatch = async (batch) => {
    const t = now();
    const index = Math.floor(t / windowMs);
    for (let attempt = 0; ; attempt++) {
      const { agg, head, bytes: had, damaged } = await readWindow(index);
      const results = mergeBatch(agg, index, had?.byteLength ?? 0, batch, t);
      const bytes = agg.windowBytes(index);
      let r = { ok: true };
      if (bytes && results.some((r) => Array.isArray(r))) {
        const g = crypto.randomUUID();
        const parts = chunks(bytes, KV_CHUNK);
        for (let i = 0; i < parts.length; i += KV_CHUNKS_PER_OP) {
          const op = kv.atomic();
          parts.slice(i, i + KV_CHUNKS_PER_OP).forEach((p, j) => op.set(chunkKey(index, g, i + j), p, { expireIn }));
          for (let tries = 0; !(await commitOp(op, tries)).ok; tries++) if (tries >= KV_RETRIES) throw new Error("locked");
        }
        const switchHead = kv.atomic().check(head).set(windowKey(index), { g, n: parts.length, size: bytes.byteLength }, { expireIn });
        // A window that did not read back is set aside, chunks and all, in the same operation: its
        // head is kept under quarantineKey until the window would have expired.
        if (damaged) switchHead.set(quarantineKey(index, head.versionstamp), head.value, { expireIn });
        r = await commitOp(switchHead, attempt);
        await dropChunks(index, r.ok ? (damaged ? undefined : head.value) : { g, n: parts.length });
      }
      if (r.ok || attempt >= KV_RETRIES) {
        batch.forEach(({ done }, i) => done(r.ok || !Array.isArray(results[i]) ? results[i] : storeFailed()));
        return;
      }
    }
  };
  const commit = groupCommit(write);

  /** `agg.table()`: see there. */
  const readTable = async () => {
    const heads = new Map();
    for await (const e of kv.list({ prefix: [...prefix, "w"] })) {
      const rest = e.key.slice(prefix.length + 1);
      if (rest.length === 1) heads.set(rest[0], e.versionstamp);
    }
    // A window held that KV no longer has (expired, deleted): start again from what KV holds.
    if (read && read.agg.windowIndexes().some((index) => !heads.has(index))) read = null;
    read ??= { agg: core(windowOptions), stamps: new Map() };
    const { agg, stamps } = read;
    for (const [index, stamp] of heads) {
      if (stamps.get(index) === stamp) continue;
      let loaded = false;
      try {
        const { bytes, head } = await readWindow(index);
        if (bytes) {
          agg.loadWindow(bytes);
          stamps.set(index, head.versionstamp);
          loaded = true;
        }
      } catch {
        // Left out: a window that does not read back (tried again at the next read).
      }
      // Its older copy is not served either: start again without it.
      if (!loaded && agg.windowIndexes().includes(index)) {
        read = null;
        return readTable();
      }
    }
    agg.expire(now());
    agg.takeChanges();
    for (const index of stamps.keys()) if (!heads.has(index)) stamps.delete(index);
    return agg.table(now());
  };

  const agg = {
    /** Merges one flush into the window in KV; resolves `{ refused }` (buckets refused on their own) once the rest is stored; a whole refusal rejects. */
    flush(bytes) {
      return new Promise((resolve, reject) => {
        // `done` gets the buckets refused on their own (an array), or why the whole flush was refused.
        waiting.push({ bytes, done: (r) => (Array.isArray(r) ? resolve({ refused: r }) : reject(r)) });
        commit().catch(reject);
      });
    },
    /**
     * The table derived from every window in KV. The windows read last time are kept with their heads'
     * versionstamps: only a window whose head changed since (a write of this process or another) is read
     * again, and the core derives again only the rows of the buckets it changed.
     */
    table: () => readTable(),
    /** `POST …/flush` with `writeToken`, `GET …/table` with `readToken` (as bearer tokens). */
    fetch: (request) => serve(request, agg, { read: readToken, write: writeToken }),
  };
  return agg;
}
