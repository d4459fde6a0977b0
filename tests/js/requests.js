// Request scenarios: what one incoming request does with deadlines. In workerd
// each runs as a request of its own (the runner routes /request/<name> to it,
// and the cases reach it through the worker's own socket), so timers belong
// to that request and die with it; elsewhere the cases call them in-process.
// Every scenario answers plain JSON.

const kept = new Map(); // deadlines kept across requests (the `keep` scenario)

/** Waits for `signal` to abort; resolves the instant it did. */
function aborted(signal) {
  return new Promise((resolve) => {
    if (signal.aborted) resolve(performance.now());
    else signal.addEventListener("abort", () => resolve(performance.now()), { once: true });
  });
}

/**
 * How `signal` ended: late by how much after `at`, and whether its reason is
 * the package's for that instant (DeadlineExceeded at `at`, or a step's
 * StepTimeout).
 */
function outcome(lib, signal, at, firedAt) {
  const r = signal.reason;
  const own = lib.isStepTimeout(r) ? r.capMs > 0 : lib.isDeadlineExceeded(r) && r.at === at;
  return { lateByMs: firedAt - at, own, at };
}

export const scenarios = {
  /**
   * A root deadline of `ms`, a reserve at a third of it and a plan step
   * capped at half of it, all armed. With `early`, the request answers at
   * once and leaves them pending; otherwise it waits for all three and
   * reports how late each fired after its own instant.
   */
  async family(lib, { ms, early }) {
    const root = lib.Deadline.in(ms);
    const reserve = root.reserve((ms * 2) / 3);
    const signals = [
      [root.signal(), root.at],
      [reserve.signal(), reserve.at],
    ];
    let stepSignal;
    const p = lib.plan(root, [{ name: "call", minMs: 1, preferredMs: ms / 2, kind: "optional" }]);
    // The step's instant is its cap from p.run's start, a moment after this
    // reading: so "not before stepStart + capMs" is the weaker, safe check.
    const stepStart = performance.now();
    const step = p.run("call", (signal, capMs) => {
      stepSignal = [signal, stepStart + capMs, capMs];
      return aborted(signal);
    });
    step.catch(() => {});
    signals.push(stepSignal);
    if (early) return { armed: signals.length };
    const fired = await Promise.all(signals.map(([s]) => aborted(s)));
    return { stepCapMs: stepSignal[2], fired: signals.map(([s, at], i) => outcome(lib, s, at, fired[i])) };
  },

  /** Arms a deadline of `ms` and keeps it under `key` for a later request. */
  keep(lib, { ms, key }) {
    const d = lib.Deadline.in(ms);
    d.signal();
    kept.set(key, d);
    return { at: d.at };
  },

  /** Reads the signal of the deadline kept under `key` by an earlier request. */
  read(lib, { key }) {
    const d = kept.get(key);
    kept.delete(key);
    const signal = d.signal();
    return { aborted: signal.aborted, now: performance.now(), at: d.at, ...(signal.aborted ? outcome(lib, signal, d.at, performance.now()) : {}) };
  },

  /**
   * One root; `n` reserves, `n` concurrent plan steps, `n` concurrent retry
   * attempts and `n` stall-detected streams given it, none disposed while
   * the others are made.
   * Answers how many of each were armed, or the error that stopped it.
   */
  async many(lib, { n }) {
    const root = lib.Deadline.in(60_000);
    root.signal();
    const done = { reserves: 0, steps: 0, attempts: 0, streams: 0, called: 0 };
    const release = new AbortController();
    const released = aborted(release.signal);
    const held = () => (done.called++, released);
    try {
      for (let i = 0; i < n; i++, done.reserves++) root.reserve(i % 1_000).signal();
      const p = lib.plan(root, [{ name: "call", minMs: 1, preferredMs: 30_000, kind: "optional" }]);
      const steps = [];
      for (let i = 0; i < n; i++, done.steps++) steps.push(p.run("call", held));
      const attempts = [];
      for (let i = 0; i < n; i++, done.attempts++) {
        attempts.push(lib.retry(held, { deadline: root, attemptMinMs: 1, attemptTimeoutMs: 30_000, backoff: { baseMs: 1, maxMs: 1, jitter: 0 }, idempotent: true }));
      }
      // Stall detection given the root: each wrapped stream waits on a source that never answers.
      const readers = [];
      for (let i = 0; i < n; i++, done.streams++) {
        const source = new ReadableStream({ pull: () => released });
        const reader = lib.withStallTimeout(source, { firstChunkMs: 30_000, stallMs: 30_000, deadline: root }).getReader();
        reader.read().catch(() => {});
        readers.push(reader);
      }
      // Give every attempt its turn to start (retry starts its first attempt after an await).
      await new Promise((r) => setTimeout(r, 1));
      release.abort();
      await Promise.allSettled([...steps, ...attempts]);
      await Promise.all(readers.map((r) => r.cancel()));
      return { ...done };
    } catch (e) {
      return { ...done, error: `${e?.name}: ${e?.message}` };
    } finally {
      release.abort();
      root.dispose();
    }
  },
};

/** Runs a scenario in this process, as the runtimes without request isolation do. */
export function inProcess(lib) {
  return async (name, params) => JSON.parse(JSON.stringify(await scenarios[name](lib, params)));
}
