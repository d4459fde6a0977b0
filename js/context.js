// The ambient deadline: `runWithDeadline(d, fn)` makes `d` what
// `currentDeadline()` answers anywhere inside `fn`, including after awaits,
// so code nested deep in a request need not be handed the deadline.
//
// Why AsyncLocalStorage, and how it is found: only an async context carries a
// value across awaits. Node, Deno and workerd (with `nodejs_compat` and a
// compatibility date from 2024-09-23, which gives it a `process` global;
// `nodejs_compat` is the default from 2026-08-04) have one in
// `node:async_hooks`. workerd with only `nodejs_als`, or an earlier date, has
// the module but no `process`: there the fallback applies (verified with
// workerd 1.20261117.1). Vercel's Edge Runtime (Next.js edge routes) has an
// `AsyncLocalStorage` global instead, which is taken where the module is not there.
// A static import of that module would break browsers and
// bundlers, so it is asked for at run time through
// `process.getBuiltinModule` (Node ≥ 20.16, Deno, workerd), which a browser
// bundle never resolves. Deno builds its Node compatibility layer the first
// time `process` is touched (a measurable share of start-up, measured with
// bench/startup.mjs), so there the lookup waits for the first
// `runWithDeadline` or `currentDeadline` (Deno has AsyncLocalStorage).
//
// # The fallback (browsers, hosts without AsyncLocalStorage)
// `runWithDeadline` still calls `fn` and `currentDeadline()` answers `d` while
// `fn` runs synchronously: up to its first `await`. After that it answers
// `undefined`, never another request's deadline (the value is restored the
// moment `fn` returns). `ambientDeadline` says which mode the host has, so
// code that needs the deadline after an await can pass it explicitly there.
//
// # Invariants
// 1. `currentDeadline()` is `d` inside `runWithDeadline(d, fn)` (synchronously
//    everywhere; across awaits where the host has AsyncLocalStorage), and
//    the innermost `runWithDeadline` wins.
// 2. Outside any `runWithDeadline` it is `undefined`.
// 3. Nothing is held: no timer, no listener; the deadline is not disposed.

import * as check from "./validate.js";

const IS_DENO = typeof Deno === "object" && Deno !== null && typeof Deno.version === "object";
/** The AsyncLocalStorage; `null` on a host without one; `undefined` until looked up (Deno). */
let storage = IS_DENO ? undefined : makeStorage();
let syncCurrent; // the fallback's value, set only while `fn` runs synchronously

function makeStorage() {
  const AsyncLocalStorage = findAsyncLocalStorage();
  return AsyncLocalStorage ? new AsyncLocalStorage() : null;
}

function store() {
  if (storage === undefined) storage = makeStorage();
  return storage;
}

function findAsyncLocalStorage() {
  let ALS;
  try {
    const get = globalThis.process?.getBuiltinModule;
    ALS = typeof get === "function" ? get("node:async_hooks")?.AsyncLocalStorage : undefined;
  } catch {
    ALS = undefined; // a host that refuses the module: the global below, else the fallback
  }
  // Vercel's Edge Runtime (Next.js edge routes) has no such module but an AsyncLocalStorage global.
  if (typeof ALS !== "function") ALS = /** @type {any} */ (globalThis).AsyncLocalStorage;
  return typeof ALS === "function" ? ALS : null;
}

/**
 * How far `currentDeadline()` reaches on this host: `"async"` (across awaits,
 * AsyncLocalStorage) or `"sync"` (until `fn`'s first await; browsers).
 */
export const ambientDeadline = IS_DENO || storage ? "async" : "sync";

/**
 * Runs `fn()` with `deadline` as the ambient deadline and returns what `fn`
 * returns (a promise stays a promise).
 * @throws {TypeError} `deadline` is not a Deadline, `fn` is not a function
 */
export function runWithDeadline(deadline, fn) {
  check.deadline("deadline", deadline);
  check.fn("fn", fn);
  const als = store();
  if (als) return als.run(deadline, fn);
  const outer = syncCurrent;
  syncCurrent = deadline;
  try {
    return fn();
  } finally {
    syncCurrent = outer;
  }
}

// ─── Callbacks the package runs later (js/timers.js) ─────────────────────────
//
// A wake-up's host timer is shared (one per queue: js/timers.js) and runs in
// the async context of whichever request armed it, so an entry's callback
// (a hedge attempt after the first, `onStep` at a step's cap, abort listeners
// on a deadline's signal) would see that request's deadline. Each entry keeps
// the ambient deadline of the code that queued it (`ambientNow`, one read of
// the store) and fires inside it (`fireIn`, a `run` only when it differs):
// no closure, no AsyncResource per wake-up (AsyncLocalStorage.snapshot() in
// Node 20 and Deno, and AsyncResource in Deno, each measured more than a
// whole deadline: BENCHMARKS.md, "Deadlines", has the deadline's rows). It
// is the package's own store that follows the request; other AsyncLocalStorage stores of the application follow the
// host timer (docs/api.md, runWithDeadline).

/** Internal: the ambient deadline now, for `fireIn` (`undefined` where none can be: no store yet, the fallback). */
export function ambientNow() {
  return storage ? storage.getStore() : undefined;
}

const callFire = (entry) => entry.fire();

/** Internal: `entry.fire()` with `value` (from `ambientNow`) as the ambient deadline. */
export function fireIn(value, entry) {
  const als = storage;
  if (!als || als.getStore() === value) entry.fire();
  else als.run(value, callFire, entry);
}

/** The deadline of the innermost `runWithDeadline` around this code, or `undefined`. */
export function currentDeadline() {
  const als = store();
  return als ? als.getStore() : syncCurrent;
}
