// What the pipeline cases share (plan, retry, hedge, budget, headers, caps):
// in-process stub services, listener counters, the fixture's "seen" log, a
// modelled clock, a child process with the API, and the bad-input table
// runner. Runs in Node, Deno, workerd and Chromium, like the cases.
//
// Timing: stub services have controlled delays; the cases wait on promises
// and abort events, never on sleeps. Budgets are a few hundred ms so the
// suite stays fast; SLACK_MS bounds how late a host timer may fire on a
// loaded 2-core machine. "Never before" checks are exact.
import { equal, ok, rejects } from "./assert.js";
import { installFakeTime } from "./fake-time.js";

export const SLACK_MS = 150;
export const BRAND = "edgeDeadlineError";

/**
 * An in-process stub service: resolves `value` after `ms` (never when `ms` is
 * undefined), rejects with the signal's reason when aborted first. `log`
 * records what it saw.
 */
export function stub(signal, { ms, value = "ok", fail } = {}) {
  const log = { started: performance.now(), abortedAt: undefined, reason: undefined };
  const done = new Promise((resolve, reject) => {
    let timer;
    const onAbort = () => {
      clearTimeout(timer);
      log.abortedAt = performance.now();
      log.reason = signal.reason;
      reject(signal.reason);
    };
    if (signal.aborted) return onAbort();
    signal.addEventListener("abort", onAbort, { once: true });
    if (ms !== undefined) {
      timer = setTimeout(() => {
        signal.removeEventListener("abort", onAbort);
        if (fail) reject(fail);
        else resolve(value);
      }, ms);
    }
  });
  return Object.assign(done, { log });
}

/** A stub that ignores its signal entirely and never settles. */
export const deaf = () => new Promise(() => {});

/** Counts add/removeEventListener calls on one signal instance (a deadline's signal is one object). */
export function countListeners(signal) {
  const counts = { added: 0, removed: 0 };
  const add = signal.addEventListener.bind(signal);
  const remove = signal.removeEventListener.bind(signal);
  signal.addEventListener = (...args) => (counts.added++, add(...args));
  signal.removeEventListener = (...args) => (counts.removed++, remove(...args));
  return counts;
}

export function countedParent() {
  const controller = new AbortController();
  return { controller, signal: controller.signal, counts: countListeners(controller.signal) };
}

let ids = 0;
export const uid = (prefix) => `${prefix}-${Date.now().toString(36)}-${++ids}-${Math.random().toString(36).slice(2, 8)}`;

export async function seen(ctx, id, until) {
  const res = await fetch(`${ctx.fixtureUrl}/pipeline/seen?id=${encodeURIComponent(id)}&until=${until}`);
  return res.json();
}

/** A CPU-bound loop of roughly `ms` on this machine, without reading any clock. */
export function spin(iterations) {
  let x = 0;
  for (let i = 0; i < iterations; i++) x = (x + i * 2654435761) % 1_000_003;
  return x;
}

export const seedSteps = () => [
  { name: "retrieve", minMs: 5, preferredMs: 100, kind: "optional" },
  { name: "generate", minMs: 50, kind: "optional" },
  { name: "respond", minMs: 40, kind: "fallback" },
];

/**
 * Replaces `performance.now` with a clock that moves only when told (the
 * modelled-clock pattern above): fake time where timing is the subject.
 * Host timers stay real; the cases below never wait on one.
 */
export async function withFakeClock(body) {
  const own = Object.getOwnPropertyDescriptor(performance, "now");
  // A whole millisecond, so `at − now` is exact in the assertions.
  const clock = { t: Math.ceil(performance.now()) };
  Object.defineProperty(performance, "now", { value: () => clock.t, configurable: true, writable: true });
  try {
    return await body(clock);
  } finally {
    if (own) Object.defineProperty(performance, "now", own);
    else delete performance.now;
  }
}

/** Runs `code` in a child process with `lib` (the whole API, initialised) in scope; { code, ms, stdout }. */
export function spawnWithLib(ctx, code) {
  return ctx.spawnPackageScript(`await init();
const lib = await import(entryUrl);
${code}`);
}

export const untilAborted = (signal) => new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason), { once: true }));

/** Iterations of `spin` taking about `ms` here (measured once per call). */
export function calibrate(ms) {
  let n = 100_000;
  for (;;) {
    const t0 = performance.now();
    spin(n);
    const took = performance.now() - t0;
    if (took >= 2) return Math.max(1, Math.round((n * ms) / took));
    if (n > 1e8) return 3_000_000; // a clock frozen during CPU work (production Workers): a fixed amount
    n *= 4;
  }
}

/**
 * Bad input cases from a table of `[label, call, Type, pattern, param, code]`:
 * each rejects (or throws) with `Type`, a message matching `pattern`, and the
 * error's `.param` and `.code`, and the API still works afterwards.
 */
export function badInputCases(list) {
  return list.map(([label, call, Type, pattern, param, code]) => ({
    name: `bad input: ${label} → ${Type.name} (${param}, ${code})`,
    run: async (lib) => {
      const error = await rejects(async () => call(lib), Type, pattern);
      equal(error.param, param, `${label}: .param`);
      equal(error.code, code, `${label}: .code`);
      ok(lib.Deadline.in(5).remaining() >= 0, "the API still works afterwards");
    },
  }));
}

/**
 * Runs `body(clock)` on fake time (tests/js/fake-time.js): the package's
 * clock is swapped, whatever happens it is restored. `body` returns the
 * deadlines it made; once it settled at most their one wake-up may be armed,
 * and once they are disposed (and their instants passed) nothing is.
 */
export async function onFakeTime(body) {
  const clock = installFakeTime();
  try {
    const deadlines = await body(clock);
    ok(clock.pending() <= 1, `${clock.pending()} host timers armed after it settled`);
    for (const d of deadlines) d.dispose();
    await clock.advance(20_000);
    equal(clock.pending(), 0, "host timers left armed");
  } finally {
    clock.restore();
  }
}

/**
 * The size of a loaded core's Wasm memory, in bytes: `glue` is a glue module
 * (pkg/main.js's or pkg/derive-main.js's `glue`), whose `initSync()` returns
 * the instance's exports once loaded. The memory is found as the one
 * WebAssembly.Memory among them (the build shortens the export names; the
 * API has no reason to expose it).
 */
export const memoryBytes = (glue) => Object.values(glue.initSync()).find((v) => v instanceof WebAssembly.Memory).buffer.byteLength;
