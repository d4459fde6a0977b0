// Shared benchmark helpers. Runs unchanged in Node, Deno and workerd: no
// runtime-specific APIs (loadPackage, which reads the environment, is called
// only by the Node and Deno scripts).

/** Median ns/op of `fn` called `n` times per round, over `rounds` rounds after a warm-up round. */
export function nsPerOp(fn, { n = 100_000, rounds = 7 } = {}) {
  const times = [];
  for (let r = -1; r < rounds; r++) {
    const t0 = performance.now();
    for (let i = 0; i < n; i++) fn(i);
    const dt = performance.now() - t0;
    if (r >= 0) times.push((dt * 1e6) / n);
  }
  times.sort((a, b) => a - b);
  return times[times.length >> 1];
}

/**
 * Median ns/op of each of `cases` ({ label: [fn, n] }), their rounds
 * interleaved (a, b, c, a, b, c …) so that load from other processes hits
 * every case alike and ratios between them hold; after one warm-up round.
 */
export function nsPerOpInterleaved(cases, { rounds = 7 } = {}) {
  const times = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));
  for (let r = -1; r < rounds; r++) {
    for (const [label, [fn, n]] of Object.entries(cases)) {
      const t0 = performance.now();
      for (let i = 0; i < n; i++) fn(i);
      const dt = performance.now() - t0;
      if (r >= 0) times[label].push((dt * 1e6) / n);
    }
  }
  return Object.fromEntries(Object.entries(times).map(([k, xs]) => [k, xs.sort((a, b) => a - b)[xs.length >> 1]]));
}

/**
 * Median ns per item of each of `variants` ([label, run]), where `run()` does
 * `n` items in one go and returns how many it handled (checked against `n`,
 * so a variant that skips work fails loudly); rounds interleaved, as above.
 * Rows rounded to 0.1 ns.
 */
export function nsPerItemInterleaved(variants, { n, rounds = 7, what = "items" }) {
  const samples = new Map(variants.map(([label]) => [label, []]));
  for (let r = 0; r < rounds; r++) {
    for (const [label, run] of variants) {
      const t0 = performance.now();
      const done = run();
      samples.get(label).push(((performance.now() - t0) * 1e6) / n);
      if (done !== n) throw new Error(`${label}: ${done} of ${n} ${what}`);
    }
  }
  const rows = {};
  for (const [label, list] of samples) rows[label] = Number(list.sort((a, b) => a - b)[list.length >> 1].toFixed(1));
  return rows;
}

/**
 * ns/op of one timed run of `n` calls after `warm` untimed ones: for work that
 * holds a scarce resource per call (workerd's 10 000 active timeouts).
 */
export function nsPerOpOnce(fn, { n, warm }) {
  for (let i = 0; i < warm; i++) fn(i);
  const t0 = performance.now();
  for (let i = 0; i < n; i++) fn(i);
  return ((performance.now() - t0) * 1e6) / n;
}

/** Same for an async `fn`, awaited one call at a time. */
export async function nsPerOpAsync(fn, { n = 20_000, rounds = 5 } = {}) {
  const times = [];
  for (let r = -1; r < rounds; r++) {
    const t0 = performance.now();
    for (let i = 0; i < n; i++) await fn(i);
    const dt = performance.now() - t0;
    if (r >= 0) times.push((dt * 1e6) / n);
  }
  times.sort((a, b) => a - b);
  return times[times.length >> 1];
}

// workerd defines a `process` global at recent compatibility dates, so it is
// recognised first, by a global only Workers have (js/timers.js, IS_WORKERD).
export const runtimeName = () =>
  typeof globalThis.WebSocketPair === "function"
    ? "workerd"
    : typeof Deno !== "undefined"
      ? `deno ${Deno.version.deno}`
      : typeof Bun !== "undefined" // before `process`: Bun has one that says Node
        ? `bun ${Bun.version}`
        : typeof process !== "undefined"
        ? `node ${process.version}`
        : (globalThis.navigator?.userAgent.match(/(?:HeadlessChrome|Chrome)\/[\d.]+/)?.[0] ?? "browser");

/**
 * The package a bench measures, as its users import it: every entry point its
 * package.json exports ("." and subpaths such as "./derive"), each as the
 * runtime's condition resolves it, of pkg/ or of the directory named by
 * BENCH_PKG (`node bench/run.mjs --before DIR` measures an older build that
 * way). Resolves `{ ...entries, __core, __watch, __pending, __instantiateMs }`
 * with every entry's init() done (__instantiateMs: how long those took).
 *
 * The `__` members are internals that only the "design:" rows use (raw Wasm
 * exports, js/deadline.js's cap-timer queue, js/keepalive.js's promise), from
 * the copy the entries use (pkg/main.js; a build of module-per-file layout:
 * its modules): a package without them leaves them empty and those rows
 * out, so one bench runs against both the old and the new layout.
 */
export async function loadPackage() {
  const isDeno = typeof Deno !== "undefined";
  const env = isDeno ? Deno.env.get("BENCH_PKG") : globalThis.process.env.BENCH_PKG;
  const base = env ? new URL(`file://${env.replace(/\/?$/, "/")}`) : new URL("../pkg/", import.meta.url);
  const manifest = JSON.parse(await (isDeno ? Deno.readTextFile(new URL("package.json", base)) : (await import("node:fs/promises")).readFile(new URL("package.json", base), "utf8")));
  const libs = await Promise.all(entryFiles(manifest, isDeno ? "deno" : "node").map((f) => import(new URL(f, base).href)));
  const t0 = performance.now();
  await merged(libs).init();
  const instantiateMs = performance.now() - t0;
  const internal = (file) => import(new URL(file, base).href).catch(() => ({}));
  const main = await internal("main.js");
  const [core, deadline, keepalive] = main.glue
    ? [main.glue, {}, main]
    : await Promise.all(["edge_deadline.js", "deadline.js", "keepalive.js"].map(internal));
  return { ...withInternals(merged(libs), core, deadline, keepalive), __instantiateMs: instantiateMs };
}

/** The JS files a package's `exports` gives `condition` (node, deno, workerd, browser), one per entry point. */
export function entryFiles(manifest, condition) {
  const pick = (target) => {
    if (typeof target === "string") return target;
    if (!target || typeof target !== "object") return undefined;
    for (const key of [condition, "default"]) if (key in target) return pick(target[key]);
    return undefined;
  };
  return Object.entries(manifest.exports ?? { ".": manifest.main })
    .map(([key, target]) => (key === "." || !/\.\w+$/.test(key) ? pick(target) : undefined))
    .filter((f) => typeof f === "string" && f.endsWith(".js"))
    .map((f) => f.replace(/^\.\//, ""));
}

/** The entry points' exports as one object (the names do not clash); `init` runs every entry's own. */
export function merged(libs) {
  const out = {};
  for (const lib of libs) for (const [k, v] of Object.entries(lib)) if (!(k in out)) out[k] = v;
  out.init = async () => {
    for (const lib of libs) if (typeof lib.init === "function") await lib.init();
  };
  return out;
}

/** The entry's exports plus the internals the "design:" rows use, where the package has them. */
export function withInternals(lib, core = {}, deadline = {}, keepalive = {}) {
  const watch = typeof deadline.watch === "function" && typeof deadline.unwatch === "function" ? { watch: deadline.watch, unwatch: deadline.unwatch } : undefined;
  return { ...lib, __core: core, __watch: watch, __pending: typeof keepalive.pending === "function" ? keepalive.pending : undefined };
}
