// Fake time for cases where timing is the subject: replaces `performance.now`,
// `setTimeout` and `clearTimeout` on the global object (the package reads them
// at call time) and lets a case advance the clock by hand. Runs unchanged in
// Node, Deno, workerd and Chromium.
//
// Use it only around code that arms no real timers the case waits on (no
// Deadline signals armed before install), and always `restore()` in `finally`.

/** Microtask turns flushed after each timer (stream reads settle through several promise hops). */
const TURNS = 64;

export function installFakeTime() {
  const g = globalThis;
  const real = { setTimeout: g.setTimeout, clearTimeout: g.clearTimeout };
  const ownNow = Object.prototype.hasOwnProperty.call(performance, "now");
  const realNow = performance.now;
  // A whole millisecond (never earlier than the real clock): whole-ms advances
  // then add up exactly, so a case can compare durations with `equal`.
  let t = Math.ceil(realNow.call(performance));
  let seq = 1e9; // far from real timer ids (Deno.unrefTimer takes any number)
  const timers = new Map();
  g.setTimeout = (fn, ms = 0, ...args) => {
    const id = ++seq;
    timers.set(id, { at: t + Math.max(0, Number(ms) || 0), id, fn, args });
    return id;
  };
  g.clearTimeout = (id) => {
    timers.delete(id);
  };
  performance.now = () => t;

  async function settle() {
    for (let i = 0; i < TURNS; i++) await null;
  }

  function next(until) {
    let best;
    for (const timer of timers.values()) {
      if (timer.at <= until && (best === undefined || timer.at < best.at || (timer.at === best.at && timer.id < best.id))) best = timer;
    }
    return best;
  }

  return {
    now: () => t,
    /** Timers still pending on the fake clock. */
    pending: () => timers.size,
    /** Runs every timer due within `ms`, in order, letting promises settle after each. */
    async advance(ms) {
      const end = t + ms;
      await settle();
      for (let timer = next(end); timer; timer = next(end)) {
        timers.delete(timer.id);
        t = Math.max(t, timer.at);
        timer.fn(...timer.args);
        await settle();
      }
      t = end;
      await settle();
    },
    /** A promise resolved `ms` from now on the fake clock. */
    sleep(ms) {
      return new Promise((resolve) => g.setTimeout(resolve, ms));
    },
    restore() {
      g.setTimeout = real.setTimeout;
      g.clearTimeout = real.clearTimeout;
      if (ownNow) performance.now = realNow;
      else delete performance.now;
    },
  };
}
