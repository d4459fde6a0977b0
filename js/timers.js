// Host-timer facts shared by every module that arms a timer (deadline.js,
// stall.js, plan.js, retry.js). The deadline arithmetic itself is the core's;
// these are properties of `setTimeout` in the four runtimes.

/** 2^31 − 1 ms: browsers, Node, Deno and workerd fire a longer `setTimeout` at once (src/core/deadline.rs, MAX_TIMER_MS). */
export const MAX_TIMER_MS = 2_147_483_647;

/**
 * The delay to arm for `ms` (≥ 0): rounded up, so a timer never fires before
 * its instant, and clamped to the host limit; callers re-arm past it.
 */
export function timerMs(ms) {
  return ms < MAX_TIMER_MS ? Math.ceil(ms) : MAX_TIMER_MS;
}

/**
 * Lets the event loop exit while the timer is pending: Node's timers have
 * `unref()`, Deno's are numbers unref'd through `Deno.unrefTimer`; browsers
 * and workerd have nothing to unref.
 */
export const unref =
  typeof globalThis.Deno?.unrefTimer === "function"
    ? (id) => globalThis.Deno.unrefTimer(id)
    : (t) => {
        if (typeof t === "object" && typeof t.unref === "function") t.unref();
      };
