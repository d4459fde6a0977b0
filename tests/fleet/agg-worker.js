// The aggregator's Worker in the fleet test: the package's Durable Object
// class, one instance ("timeouts"). Its fetch is the public route an outsider
// reaches (the second socket of tests/fleet/run.mjs): every request goes to
// the object's HTTP endpoint, which asks for the read or the write token
// (TIMEOUTS_READ_TOKEN / TIMEOUTS_WRITE_TOKEN, this Worker's secrets). The
// isolates reach the same objects through Durable Object bindings (RPC).
// Paths under /fuzz/ reach another instance ("fuzz"), for the HTTP fuzz.
// CountingAggregator: the same class with its storage calls counted, for the
// group-commit check. FlakyAggregator: its storage's sync() fails once when
// armed, for the check that a failed write counts nothing.
import { TimeoutAggregator } from "../../pkg/durable-workerd.js";

export { TimeoutAggregator };

/**
 * `ctx` with its storage's methods named in `wrap` replaced, on the storage object itself, by
 * `wrap[name](call, ...args)` (the DurableObject base class takes the real `ctx` only, not a Proxy).
 */
function wrapStorage(ctx, wrap) {
  const storage = ctx.storage;
  for (const [key, f] of Object.entries(wrap)) {
    const call = storage[key].bind(storage);
    storage[key] = (...args) => f(call, ...args);
  }
  return ctx;
}

/**
 * TimeoutAggregator over a storage that counts its calls: `put` and `delete`
 * (each call is one batch of keys: one write) and `sync`, and the largest
 * value put. Nothing else differs; `counts()` (RPC) answers them.
 */
export class CountingAggregator extends TimeoutAggregator {
  #counts;

  constructor(ctx, env) {
    // largestValue: the most bytes one put value makes the serializer write (a typed array's whole
    // ArrayBuffer, whatever part of it the view covers), against the storage's 128 KiB per value.
    const counts = { put: 0, delete: 0, sync: 0, largestValue: 0 };
    const count = (key) => (call, ...args) => {
      counts[key]++;
      if (key === "put" && args[0] && typeof args[0] === "object") {
        for (const v of Object.values(args[0])) if (ArrayBuffer.isView(v)) counts.largestValue = Math.max(counts.largestValue, v.buffer.byteLength);
      }
      return call(...args);
    };
    super(wrapStorage(ctx, { put: count("put"), delete: count("delete"), sync: count("sync") }), env);
    this.#counts = counts;
  }

  counts() {
    return this.#counts;
  }
}

/** TimeoutAggregator whose storage's next sync() fails after `armSync()` (RPC), as a disk that failed once. */
export class FlakyAggregator extends TimeoutAggregator {
  #armed;

  constructor(ctx, env) {
    const state = { armed: false };
    super(
      wrapStorage(ctx, {
        sync: (call) => {
          if (!state.armed) return call();
          state.armed = false;
          return Promise.reject(new Error("sync failed: /var/lib/do/agg.sqlite (disk I/O error)"));
        },
      }),
      env,
    );
    this.#armed = state;
  }

  armSync() {
    this.#armed.armed = true;
  }

  /** Damages the current window as storage might: its first chunk is no longer a window's bytes (read at the next start). */
  async damageWindow() {
    const key = `w:${Math.floor(Date.now() / 3_600_000)}:0`;
    const bytes = new Uint8Array([0x45, 0x44, 0x54, 0x42, 9, 9, 9]);
    await this.ctx.storage.put(key, bytes);
    return { key, bytes: [...bytes].join() };
  }

  /** Copies the current window to the window `hoursAgo` hours back (keys and the index in its bytes), as a window that aged out while the object slept. */
  async plantOldWindow(hoursAgo) {
    const now = Math.floor(Date.now() / 3_600_000);
    const old = now - hoursAgo;
    const n = await this.ctx.storage.get(`w:${now}`);
    const put = { [`w:${old}`]: n };
    for (let i = 0; i < n; i++) put[`w:${old}:${i}`] = new Uint8Array(await this.ctx.storage.get(`w:${now}:${i}`));
    // The window's own index, in its bytes after the magic, the version and two f64 options.
    new DataView(put[`w:${old}:0`].buffer).setBigInt64(21, BigInt(old), true);
    await this.ctx.storage.put(put);
    return old;
  }

  /** The stored keys under `prefix`, each with its value (a chunk's bytes joined by commas). */
  async keys(prefix) {
    const all = await this.ctx.storage.list({ prefix });
    return [...all].map(([k, v]) => [k, ArrayBuffer.isView(v) ? [...new Uint8Array(v.buffer, v.byteOffset, v.byteLength)].join() : v]);
  }
}

/** TimeoutAggregator with a small window budget, for the budget check. */
export class SmallAggregator extends TimeoutAggregator {
  static options = { maxWindowBytes: 64 * 1024 };
}

export default {
  async fetch(request, env) {
    const path = new URL(request.url).pathname;
    // bench/fleet-workerd.mjs's baseline: the flush read and answered here, the object not reached.
    if (path === "/echo") {
      await request.arrayBuffer();
      return new Response(null, { status: 204 });
    }
    // The HTTP fuzz reaches an object of its own ("fuzz") the same way, with the same tokens.
    const name = path.startsWith("/fuzz/") ? "fuzz" : "timeouts";
    return env.AGG.get(env.AGG.idFromName(name)).fetch(request);
  },
};
