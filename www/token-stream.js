// The simulated upstream of section 2: a model endpoint streaming tokens on a
// timer, as a ReadableStream. It behaves like a real request: it stops
// producing when its request's AbortSignal aborts (what `withStallTimeout`
// does to the upstream `controller`) or when its reader cancels it.

const WORDS = (
  "A timeout should follow the user's remaining deadline rather than restart at every internal step. " +
  "Retrieval, generation, tool calls and delivery all spend the same end-to-end budget, and a stream " +
  "that has gone quiet is not progress: it holds a connection, memory and the user's patience until " +
  "someone decides it has stalled and releases the request."
).split(" ");

/**
 * @param {{ tokens: number, firstMs: number, everyMs: number, stallAfter: number, stallForMs: number }} plan
 *   `stallAfter` 0: never goes quiet; `stallForMs` 0: quiet for good.
 * @param {AbortSignal} signal the upstream request's signal
 * @param {{ onAbort: (reason: unknown) => void, onCancel: (reason: unknown) => void, onQuiet: (ms: number) => void }} events
 */
export function tokenStream({ tokens, firstMs, everyMs, stallAfter, stallForMs }, signal, events) {
  let timer;
  let sent = 0;
  let stopped = false;
  const stop = () => {
    stopped = true;
    clearTimeout(timer);
  };
  return new ReadableStream({
    start(controller) {
      const next = () => {
        if (stopped) return;
        controller.enqueue(`${WORDS[sent % WORDS.length]} `);
        sent++;
        if (sent >= tokens) {
          stop();
          controller.close();
          return;
        }
        if (stallAfter > 0 && sent === stallAfter) {
          events.onQuiet(stallForMs);
          if (stallForMs === 0) return; // silent for good, with the connection still open
          timer = setTimeout(next, stallForMs);
          return;
        }
        timer = setTimeout(next, everyMs);
      };
      signal.addEventListener(
        "abort",
        () => {
          stop();
          events.onAbort(signal.reason);
        },
        { once: true },
      );
      timer = setTimeout(next, firstMs);
    },
    cancel(reason) {
      stop();
      events.onCancel(reason);
    },
  });
}
