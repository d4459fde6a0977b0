// Fake time for cases where timing is the subject: swaps the package's clock
// (js/timers.js `setClock`, exported by pkg/main.js: the copy every entry uses): `now`, `setTimeout`, `clearTimeout`) for one that
// a case advances by hand. Nothing global is patched: the case's own code
// reads the fake clock through the returned `now()` and waits on it with
// `sleep(ms)`. Runs unchanged in Node, Deno, workerd and Chromium.
//
// The swap starts fresh wake-up queues, so deadlines armed before it stay on
// the host's clock; make the deadlines a case measures after `installFakeTime()`,
// and always `restore()` in `finally`.

import { setClock } from "../../pkg/main.js";

/** Microtask turns flushed after each timer (stream reads settle through several promise hops). */
const TURNS = 64;

export function installFakeTime() {
  // A whole millisecond (never earlier than the real clock): whole-ms advances
  // then add up exactly, so a case can compare durations with `equal`.
  let t = Math.ceil(performance.now());
  let seq = 0;
  const timers = new Map();
  /** Every host timer armed on the fake clock: `{ at, ms }`, in order (what the package asked the host for). */
  const armed = [];
  const fake = {
    now: () => t,
    setTimeout(fn, ms = 0) {
      const id = ++seq;
      const delay = Math.max(0, Number(ms) || 0);
      armed.push({ at: t, ms: delay });
      timers.set(id, { at: t + delay, id, fn });
      return id;
    },
    clearTimeout(id) {
      timers.delete(id);
    },
  };
  const previous = setClock(fake);

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
    /** Host timers still pending on the fake clock. */
    pending: () => timers.size,
    /** The host timers armed so far, `{ at, ms }` each: how many, and for when. */
    armed,
    /** Runs every timer due within `ms`, in order, letting promises settle after each. */
    async advance(ms) {
      const end = t + ms;
      await settle();
      for (let timer = next(end); timer; timer = next(end)) {
        timers.delete(timer.id);
        t = Math.max(t, timer.at);
        timer.fn();
        await settle();
      }
      t = end;
      await settle();
    },
    /**
     * Moves the clock without running any timer: a host timer that fires
     * late (or a clock read between two timers). Run `advance(0)` after it
     * to fire what is due.
     */
    jump(ms) {
      t += ms;
    },
    /**
     * Fires the pending host timer that is due soonest *now*, whatever its
     * instant: a host that wakes early (Node's can, by a millisecond).
     */
    async fireEarly() {
      const timer = next(Infinity);
      if (!timer) return false;
      timers.delete(timer.id);
      timer.fn();
      await settle();
      return true;
    },
    /** A promise resolved `ms` from now on the fake clock. */
    sleep(ms) {
      return new Promise((resolve) => fake.setTimeout(resolve, ms));
    },
    restore() {
      setClock(previous);
    },
  };
}
