// The aggregator's Worker in the fleet test: the package's Durable Object
// class, one instance ("timeouts") answering every request (and /echo, the
// benchmark's baseline, answered by this Worker alone). Under /counted/,
// the same class with its storage calls counted (CountingAggregator), for the
// group-commit check: how many writes a burst of concurrent flushes costs.
import { TimeoutAggregator } from "../../pkg/durable-workerd.js";

export { TimeoutAggregator };

/** A method of a native object, called on the object itself (workerd refuses a Proxy as `this`). */
const own = (target, key) => {
  const v = Reflect.get(target, key);
  return typeof v === "function" ? v.bind(target) : v;
};

/**
 * TimeoutAggregator over a storage that counts its calls: `put` and `delete`
 * (each call is one batch of keys: one write) and `sync`. Nothing else
 * differs; `GET /counted/writes` answers the counts.
 */
export class CountingAggregator extends TimeoutAggregator {
  #counts;

  constructor(ctx, env) {
    const counts = { put: 0, delete: 0, sync: 0 };
    const storage = new Proxy(ctx.storage, {
      get(target, key) {
        const v = own(target, key);
        if (typeof key !== "string" || !(key in counts)) return v;
        return (...args) => {
          counts[key]++;
          return v(...args);
        };
      },
    });
    super(new Proxy(ctx, { get: (target, key) => (key === "storage" ? storage : own(target, key)) }), env);
    this.#counts = counts;
  }

  fetch(request) {
    if (new URL(request.url).pathname.endsWith("/writes")) return Response.json(this.#counts);
    return super.fetch(request);
  }
}

export default {
  async fetch(request, env) {
    const path = new URL(request.url).pathname;
    // bench/fleet-workerd.mjs's baseline: the flush read and answered here, the object not reached.
    if (path === "/echo") {
      await request.arrayBuffer();
      return new Response(null, { status: 204 });
    }
    if (path.startsWith("/counted/")) return env.COUNTED.get(env.COUNTED.idFromName("counted")).fetch(request);
    return env.AGG.get(env.AGG.idFromName("timeouts")).fetch(request);
  },
};
