// Stall cases: the same file runs in Node, Deno, workerd and Chromium.
//
// Timing: no sleeps. Cases wait on the stream's own outcome (a read that
// rejects or finishes) and compare with performance.now(); sources that must
// produce over time use their own timers. "Not before the limit" is exact;
// "not much after" allows TIMER_SLACK_MS for a loaded 2-core CI machine.
// Cases against the fixture server (tests/fixtures/stall.mjs) also ask the
// server when it saw the connection close: proof of abort, not abandon.
import { aborted, equal, ok, rejects, throws } from "../assert.js";
import { installFakeTime } from "../fake-time.js";

const TIMER_SLACK_MS = 250;
/** How long a late wake yields before it looks again, and how many times in a row (the core's YIELD_MS, MAX_YIELDS). */
const YIELD_MS = 10;
const MAX_YIELDS = 3;
/** Extra allowance for the close to travel from the client's abort to the server (generous: 2 shared cores). */
const CLOSE_SLACK_MS = 1_000;
/** How much later than the client's start the server may see a request arrive (2 shared cores). */
const ARRIVAL_SLACK_MS = 25;
const BRAND = "edgeDeadlineError";
const enc = new TextEncoder();
const CHUNK = enc.encode("0123456789abcdef");

/** A source under the test's control, recording cancel reasons. */
export function source({ chunks = [], close = false, error } = {}) {
  const log = { cancelled: false, reason: undefined, pulls: 0 };
  let ctrl;
  const stream = new ReadableStream({
    start(c) {
      ctrl = c;
      for (const x of chunks) c.enqueue(x);
      if (close) c.close();
      if (error) c.error(error);
    },
    pull() {
      log.pulls++;
    },
    cancel(reason) {
      log.cancelled = true;
      log.reason = reason;
    },
  });
  return { stream, log, enqueue: (x) => ctrl.enqueue(x), close: () => ctrl.close() };
}

/** A small seeded generator (numerical recipes' LCG): the same "random" pauses in every runtime. */
export function lcg(seed) {
  let x = seed >>> 0;
  return () => {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    return x / 2 ** 32;
  };
}

/** Reads everything; resolves { chunks, bytes, values, error?, at }. */
async function drain(stream) {
  const reader = stream.getReader();
  const out = { chunks: 0, bytes: 0, values: [] };
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      out.chunks++;
      out.bytes += value.byteLength ?? value.length;
      out.values.push(value);
    }
  } catch (error) {
    out.error = error;
  }
  out.at = performance.now();
  return out;
}

function within(value, lo, hi, what) {
  ok(value >= lo, `${what} ${value} is below ${lo}`);
  ok(value <= hi, `${what} ${value} is above ${hi}`);
}

function timers(ctx) {
  return ctx.pendingTimers?.();
}

function sameTimers(ctx, before, what) {
  if (ctx.pendingTimers) equal(ctx.pendingTimers(), before, `host timers pending after ${what}`);
}

const uid = () => `${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}`;

/** The server's view of connection `id` (waits up to 2 s for the close). */
async function serverView(ctx, id) {
  return (await fetch(`${ctx.fixtureUrl}/stall/closed?id=${id}`)).json();
}

/** Asserts the server saw `id` closed between `lo` and `lo + CLOSE_SLACK_MS` after `field`. */
async function assertClosed(ctx, id, field, lo) {
  const view = await serverView(ctx, id);
  ok(view.known, `the server never saw request ${id}`);
  ok(view.closed, `the server did not see the connection close within 2 s (the request was abandoned, not aborted): ${JSON.stringify(view)}`);
  if (field) {
    // Two processes' clocks: allow 2 ms of granularity on the lower bound.
    within(view[field], lo - 2, lo + CLOSE_SLACK_MS, `server-side close ${field} (${JSON.stringify(view)})`);
  }
  return view;
}

const cases = [
  // ---- the wrapper on in-memory streams --------------------------------------------------------
  {
    name: "stall: chunks pass through unchanged and the stream closes with nothing pending",
    run: async (lib, ctx) => {
      const before = timers(ctx);
      const values = [CHUNK, enc.encode(""), "text chunk", enc.encode("x")];
      const src = source({ chunks: values, close: true });
      const controller = new AbortController();
      const r = await drain(lib.withStallTimeout(src.stream, { firstChunkMs: 1_000, stallMs: 1_000, controller }));
      equal(r.error, undefined, "errored");
      equal(r.chunks, 4);
      values.forEach((v, i) => equal(r.values[i], v, `chunk ${i} is the same object`));
      equal(controller.signal.aborted, false, "a normal close aborted the upstream");
      equal(src.log.cancelled, false);
      sameTimers(ctx, before, "close");
    },
  },
  {
    name: "stall: nothing before firstChunkMs → StreamStalled first-chunk, upstream aborted, source cancelled",
    run: async (lib, ctx) => {
      const before = timers(ctx);
      const src = source();
      const controller = new AbortController();
      const t0 = performance.now();
      const r = await drain(lib.withStallTimeout(src.stream, { firstChunkMs: 60, stallMs: 1_000, controller }));
      const e = r.error;
      ok(lib.isStreamStalled(e), `errored with ${e?.name}: ${e?.message}`);
      ok(e instanceof lib.StreamStalled && e instanceof Error);
      equal(e.name, "StreamStalled");
      equal(e[BRAND], "StreamStalled");
      equal(e.phase, "first-chunk");
      within(e.afterMs, 60, 60 + TIMER_SLACK_MS, "afterMs");
      ok(r.at - t0 >= 60, `errored ${r.at - t0} ms after wrapping`);
      equal(e.chunks, 0);
      equal(e.bytes, 0);
      equal(controller.signal.reason, e, "the controller's reason");
      equal(src.log.reason, e, "the source's cancel reason");
      ok(/no first chunk after \d+(\.\d)? ms/.test(e.message), e.message);
      sameTimers(ctx, before, "a stall");
    },
  },
  {
    name: "stall: progress then silence → StreamStalled stall with the counts so far",
    run: async (lib, ctx) => {
      const before = timers(ctx);
      const src = source({ chunks: [CHUNK, CHUNK, CHUNK] });
      const controller = new AbortController();
      const r = await drain(lib.withStallTimeout(src.stream, { firstChunkMs: 1_000, stallMs: 50, controller }));
      const e = r.error;
      ok(lib.isStreamStalled(e), `errored with ${e?.name}: ${e?.message}`);
      equal(e.phase, "stall");
      within(e.afterMs, 50, 50 + TIMER_SLACK_MS, "afterMs");
      equal(e.chunks, 3);
      equal(e.bytes, 48);
      equal(r.chunks, 3, "every chunk before the stall was delivered");
      ok(/no progress for .* ms after 3 chunks \(48 bytes\)/.test(e.message), e.message);
      equal(controller.signal.reason, e);
      equal(src.log.reason, e);
      sameTimers(ctx, before, "a stall");
    },
  },
  {
    name: "stall: empty chunks are not progress by default; a custom isProgress decides",
    run: async (lib, ctx) => {
      const before = timers(ctx);
      // A source that keeps sending empty chunks every 10 ms after one real chunk.
      let interval;
      const stream = new ReadableStream({
        start(c) {
          c.enqueue(CHUNK);
          interval = setInterval(() => c.enqueue(new Uint8Array(0)), 10);
        },
        cancel() {
          clearInterval(interval);
        },
      });
      const t0 = performance.now();
      const r = await drain(lib.withStallTimeout(stream, { firstChunkMs: 1_000, stallMs: 80 }));
      equal(r.error?.phase, "stall", `errored with ${r.error?.message}`);
      within(r.error.afterMs, 80, 80 + TIMER_SLACK_MS, "afterMs");
      ok(r.error.chunks > 1, `only ${r.error.chunks} chunks: the empty ones were not counted`);
      equal(r.error.bytes, 16);
      ok(r.at - t0 >= 80);
      // isProgress: only chunks with a "!" count, so "." heartbeats do not reset the limit.
      let beat;
      const text = new ReadableStream({
        start(c) {
          c.enqueue("token!");
          beat = setInterval(() => c.enqueue("."), 10);
        },
        cancel() {
          clearInterval(beat);
        },
      });
      const seen = [];
      const r2 = await drain(
        lib.withStallTimeout(text, { firstChunkMs: 1_000, stallMs: 60, isProgress: (x) => (seen.push(x), x.includes("!")) }),
      );
      equal(r2.error?.phase, "stall");
      ok(r2.error.chunks >= 2 && r2.error.bytes === 6 + (r2.error.chunks - 1), `bytes ${r2.error.bytes} for ${r2.error.chunks} chunks`);
      equal(seen[0], "token!", "isProgress sees the chunk itself");
      sameTimers(ctx, before, "stalls");
    },
  },
  {
    name: "stall: firstChunkMs longer than stallMs: the stall limit applies from the first chunk (guard wake)",
    run: async (lib) => {
      let ctrl;
      const stream = new ReadableStream({
        start(c) {
          ctrl = c;
        },
      });
      const t0 = performance.now();
      const wrapped = lib.withStallTimeout(stream, { firstChunkMs: 600, stallMs: 60 });
      // The first chunk arrives after 100 ms: past stallMs, within firstChunkMs.
      const d = lib.Deadline.in(100);
      await aborted(d.signal());
      ctrl.enqueue(CHUNK);
      const firstAt = performance.now();
      const r = await drain(wrapped);
      equal(r.error?.phase, "stall", `errored with ${r.error?.message}`);
      within(r.error.afterMs, 60, 60 + TIMER_SLACK_MS, "afterMs");
      ok(r.at - firstAt >= 60, `stalled ${r.at - firstAt} ms after the first chunk`);
      ok(r.at - t0 < 600, `stalled ${r.at - t0} ms after wrapping: the first-chunk limit delayed the verdict`);
      equal(r.error.chunks, 1);
    },
  },
  {
    name: "stall: a first chunk later than stallMs but within firstChunkMs is not a stall",
    run: async (lib) => {
      const stream = new ReadableStream({
        start(c) {
          setTimeout(() => (c.enqueue(CHUNK), c.close()), 90);
        },
      });
      const r = await drain(lib.withStallTimeout(stream, { firstChunkMs: 400, stallMs: 30 }));
      equal(r.error, undefined, `errored with ${r.error?.message}`);
      equal(r.bytes, 16);
    },
  },
  {
    name: "stall: after a burst (progress counted, not timed) the stall is never early and at most ~16 ms late",
    run: async (lib, ctx) => {
      const before = timers(ctx);
      for (const tail of [0, 3]) {
        // 2 000 chunks at once, then `tail` chunks 25 ms apart, then silence.
        let ctrl;
        const stream = new ReadableStream({
          start(c) {
            ctrl = c;
            for (let i = 0; i < 2_000; i++) c.enqueue(CHUNK);
          },
        });
        let sent = 0;
        const more = () => {
          if (sent++ < tail) {
            ctrl.enqueue(CHUNK);
            setTimeout(more, 25);
          }
        };
        setTimeout(more, 25);
        const reader = lib.withStallTimeout(stream, { firstChunkMs: 1_000, stallMs: 60 }).getReader();
        let lastAt = 0;
        let n = 0;
        const e = await rejects(
          (async () => {
            for (;;) {
              await reader.read();
              lastAt = performance.now();
              n++;
            }
          })(),
        );
        const at = performance.now();
        equal(e?.phase, "stall", `errored with ${e?.name}: ${e?.message}`);
        equal(n, 2_000 + tail);
        equal(e.chunks, 2_000 + tail);
        ok(at - lastAt >= 60, `stalled ${at - lastAt} ms after the last chunk`);
        within(e.afterMs, 60, 60 + 16 + TIMER_SLACK_MS, "afterMs");
      }
      sameTimers(ctx, before, "a burst");
    },
  },
  {
    name: "stall: the deadline errors the stream with DeadlineExceeded and aborts the upstream",
    run: async (lib, ctx) => {
      const before = timers(ctx);
      const src = source({ chunks: [CHUNK] });
      const controller = new AbortController();
      const d = lib.Deadline.in(80);
      const r = await drain(lib.withStallTimeout(src.stream, { firstChunkMs: 5_000, stallMs: 5_000, deadline: d, controller }));
      const e = r.error;
      ok(lib.isDeadlineExceeded(e), `errored with ${e?.name}: ${e?.message}`);
      equal(e.at, d.at);
      within(e.lateByMs, 0, TIMER_SLACK_MS, "lateByMs");
      ok(r.at >= d.at, "errored before the deadline");
      equal(controller.signal.reason, e);
      equal(src.log.reason, e);
      equal(r.chunks, 1);
      sameTimers(ctx, before, "the deadline");
    },
  },
  {
    name: "stall: stallMs reaching past the deadline is accepted and the deadline decides",
    run: async (lib) => {
      const d = lib.Deadline.in(50);
      const r = await drain(lib.withStallTimeout(source({ chunks: [CHUNK] }).stream, { firstChunkMs: 50, stallMs: 50, deadline: d }));
      // Both expire ~50 ms after wrapping; the stall one counts from the chunk,
      // which came after the deadline was set: at a tie or later, the deadline wins.
      ok(lib.isDeadlineExceeded(r.error), `errored with ${r.error?.name}: ${r.error?.message}`);
      const d2 = lib.Deadline.in(60);
      const r2 = await drain(lib.withStallTimeout(source().stream, { firstChunkMs: 10_000, stallMs: 10_000, deadline: d2 }));
      ok(lib.isDeadlineExceeded(r2.error));
      equal(r2.error.at, d2.at);
    },
  },
  {
    name: "stall: a deadline already passed errors the first read at once",
    run: async (lib, ctx) => {
      const before = timers(ctx);
      const src = source({ chunks: [CHUNK] });
      const controller = new AbortController();
      const wrapped = lib.withStallTimeout(src.stream, { firstChunkMs: 100, stallMs: 100, deadline: lib.Deadline.at(0), controller });
      const e = await rejects(wrapped.getReader().read());
      ok(lib.isDeadlineExceeded(e));
      equal(e.at, 0);
      ok(controller.signal.aborted);
      equal(src.log.reason, e);
      sameTimers(ctx, before, "an expired deadline");
    },
  },
  {
    name: "stall: a consumer's cancel reaches the source and the controller, and clears the timer",
    run: async (lib, ctx) => {
      const before = timers(ctx);
      const src = source({ chunks: [CHUNK] });
      const controller = new AbortController();
      const reader = lib.withStallTimeout(src.stream, { firstChunkMs: 10_000, stallMs: 10_000, controller }).getReader();
      equal((await reader.read()).value, CHUNK);
      await reader.cancel("no longer needed");
      equal(src.log.cancelled, true, "the source was not cancelled");
      equal(src.log.reason, "no longer needed");
      equal(controller.signal.reason, "no longer needed");
      sameTimers(ctx, before, "cancel");
    },
  },
  {
    name: "stall: an isProgress that throws errors the stream with its error, aborts and cancels, leaks nothing",
    run: async (lib, ctx) => {
      const before = timers(ctx);
      const src = source({ chunks: [CHUNK, CHUNK] });
      const controller = new AbortController();
      const boom = new Error("boom");
      let calls = 0;
      const r = await drain(
        lib.withStallTimeout(src.stream, {
          firstChunkMs: 10_000,
          stallMs: 10_000,
          controller,
          isProgress: () => {
            calls++;
            throw boom;
          },
        }),
      );
      equal(r.error, boom);
      equal(r.chunks, 0, "the chunk isProgress failed on was delivered");
      equal(calls, 1);
      equal(controller.signal.reason, boom);
      equal(src.log.reason, boom);
      sameTimers(ctx, before, "an isProgress error");
    },
  },
  {
    name: "stall: a source error errors the wrapper with it, aborts the upstream and clears the timer",
    run: async (lib, ctx) => {
      const before = timers(ctx);
      const broken = new Error("upstream broke");
      const controller = new AbortController();
      const r = await drain(lib.withStallTimeout(source({ chunks: [CHUNK], error: broken }).stream, { firstChunkMs: 10_000, stallMs: 10_000, controller }));
      equal(r.error, broken);
      equal(controller.signal.reason, broken);
      sameTimers(ctx, before, "a source error");
    },
  },
  {
    name: "stall: a source error reaches a reader that is not reading: closed rejects at once, the chunk read ahead is discarded, the upstream is aborted",
    run: async (lib, ctx) => {
      const before = timers(ctx);
      let ctrl;
      const src = new ReadableStream({
        start(c) {
          ctrl = c;
          c.enqueue(CHUNK);
        },
      });
      const controller = new AbortController();
      const reader = lib.withStallTimeout(src, { firstChunkMs: 10_000, stallMs: 10_000, controller }).getReader();
      let closed = "pending";
      reader.closed.then(
        () => (closed = "fulfilled"),
        (e) => (closed = e),
      );
      // The wrapper reads one chunk ahead: it waits in the wrapper's queue, and nobody reads.
      for (let i = 0; i < 50; i++) await null;
      const broken = new Error("upstream broke");
      ctrl.error(broken);
      for (let i = 0; i < 50; i++) await null;
      equal(closed, broken, "reader.closed of an idle reader");
      equal(controller.signal.reason, broken, "the upstream's abort reason");
      // As a native stream: the queued chunk is discarded, the read rejects.
      equal(await rejects(reader.read()), broken, "the next read");
      sameTimers(ctx, before, "a source error while nobody reads");
    },
  },
  {
    name: "stall: the wrapper holds the process while a read waits on the source, not while nobody reads or a chunk waits for the consumer (ref'd host timers in Node and Deno)",
    needs: ["pendingTimers"],
    run: async (lib, ctx) => {
      const turns = async () => {
        for (let i = 0; i < 50; i++) await null;
      };
      const before = ctx.pendingTimers();
      const src = source();
      const wrapped = lib.withStallTimeout(src.stream, { firstChunkMs: 10_000, stallMs: 10_000 });
      await turns();
      equal(ctx.pendingTimers(), before, "ref'd timers while nobody reads a silent source");
      const reader = wrapped.getReader();
      const read = reader.read();
      await turns();
      equal(ctx.pendingTimers(), before + 1, "ref'd timers while a read waits on the source");
      src.enqueue(CHUNK);
      equal((await read).value, CHUNK);
      src.enqueue(CHUNK); // read ahead, and held: nobody reads
      await turns();
      equal(ctx.pendingTimers(), before, "ref'd timers while a chunk waits for the consumer");
      equal((await reader.read()).value, CHUNK, "the held chunk");
      const second = reader.read();
      await turns();
      equal(ctx.pendingTimers(), before + 1, "ref'd timers while a second read waits");
      await reader.cancel("done");
      equal((await second).done, true);
      equal(ctx.pendingTimers(), before, "ref'd timers after cancel");
    },
  },
  {
    name: "stall: an unread wrapper over a silent source lets the process exit; a read waiting on one keeps it alive until the verdict",
    needs: ["spawnPackageScript"],
    run: async (lib, ctx) => {
      const { code, ms, stdout } = await ctx.spawnPackageScript(
        `await init(await readBytes(wasmUrl));
const lib = await import(entryUrl);
const silent = () => new ReadableStream({});
const unread = lib.withStallTimeout(silent(), { firstChunkMs: 15_000, stallMs: 15_000 });
const read = lib.withStallTimeout(silent(), { firstChunkMs: 300, stallMs: 300 });
const e = await read.getReader().read().catch((e) => e);
console.log(unread.locked, e.phase);`,
      );
      equal(code, 0, "child exit code");
      equal(stdout.trim(), "false first-chunk", "the waiting read ended with the first-chunk stall");
      ok(ms < 5_000, `the child took ${Math.round(ms)} ms to exit: the unread wrapper held it`);
    },
  },
  {
    name: "stall: a consumer slower than stallMs is not a stall (only time waiting on the source counts)",
    run: async (lib) => {
      const src = source({ chunks: [CHUNK, CHUNK, CHUNK, CHUNK], close: true });
      const reader = lib.withStallTimeout(src.stream, { firstChunkMs: 40, stallMs: 40 }).getReader();
      let n = 0;
      for (;;) {
        const { done } = await reader.read();
        if (done) break;
        n++;
        // The consumer works 3 × stallMs on each chunk.
        await aborted(lib.Deadline.in(120).signal());
      }
      equal(n, 4);
    },
  },
  {
    name: "fetchWithDeadline (fake time): a deadline past Node's own fetch cap (300 s without a byte) ends with our StreamStalled at the cap, said once; where the runtime has no such cap, or raises it per request (Bun), the deadline decides",
    needs: ["fixtureUrl"],
    run: async (lib, ctx) => {
      // Node's fetch (undici) fails a request after 300 s without a byte, whatever its signal says, and a
      // request cannot raise that without a dispatcher of its own: the package clamps its waits to it.
      const clamps = /^node /.test(ctx.runtime);
      const clock = installFakeTime();
      const warn = console.warn;
      const warnings = [];
      console.warn = (message) => warnings.push(String(message));
      const settle = () => new Promise((resolve) => setTimeout(resolve, 50)); // the host's clock: the aborted fetch settles
      try {
        const outcomes = [];
        const deadlines = [];
        for (let i = 0; i < 2; i++) {
          const deadline = lib.Deadline.in(630_000);
          deadlines.push(deadline);
          outcomes.push(lib.fetchWithDeadline(`${ctx.fixtureUrl}/hang`, undefined, { deadline }).then(() => "answered", (e) => e));
        }
        let settled = 0;
        for (const o of outcomes) o.then(() => settled++);
        await clock.advance(299_000);
        await settle();
        equal(settled, 0, "nothing ends before the cap");
        await clock.advance(1_001);
        await settle();
        if (clamps) {
          for (const e of await Promise.all(outcomes)) {
            ok(lib.isStreamStalled(e) && e.phase === "first-byte", `${e?.name}: ${e?.message}`);
            ok(Math.abs(e.afterMs - 300_000) <= 1, `cut at the cap: ${e.afterMs}`);
          }
          ok(warnings.length <= 1, "said once");
          if (warnings.length === 1) ok(/300 s without a byte/.test(warnings[0]) && /init\.dispatcher/.test(warnings[0]), warnings[0]);
        } else {
          equal(settled, 0, "no cap here (or raised): the deadline decides");
          equal(warnings.length, 0);
          await clock.advance(330_000);
          await settle();
          for (const e of await Promise.all(outcomes)) ok(lib.isDeadlineExceeded(e), `${e?.name}: ${e?.message}`);
        }
        for (const d of deadlines) d.dispose();
      } finally {
        console.warn = warn;
        clock.restore();
      }
    },
  },
  {
    name: "stall (fake time): a source answering within 70 ms is never cut by a consumer that starts 80 ms late or pauses at random",
    run: async (lib) => {
      const clock = installFakeTime();
      try {
        const random = lcg(20261201);
        const results = [];
        for (let i = 0; i < 60; i++) {
          const n = 12;
          let sent = 0;
          // Every read is answered within 70 ms of the wrapper asking: never a gap of stallMs.
          const src = new ReadableStream(
            {
              pull: (c) =>
                clock.sleep(1 + Math.floor(random() * 70)).then(() => (sent++ < n ? c.enqueue(CHUNK) : c.close())),
            },
            { highWaterMark: 0 },
          );
          const reader = lib.withStallTimeout(src, { firstChunkMs: 100, stallMs: 100 }).getReader();
          results.push(
            (async () => {
              let chunks = 0;
              try {
                for (;;) {
                  const { done } = await reader.read();
                  if (done) return chunks;
                  chunks++;
                  // The first chunk waits 80 ms for the consumer; later ones up to 3 × stallMs.
                  await clock.sleep(chunks === 1 ? 80 : Math.floor(random() * 300));
                }
              } catch (e) {
                return `${e?.name}: ${e?.message}`;
              }
            })(),
          );
        }
        await clock.advance(60_000);
        const cut = (await Promise.all(results)).filter((r) => r !== 12);
        equal(cut.length, 0, `healthy streams cut (${cut.slice(0, 3).join("; ")})`);
        equal(clock.pending(), 0, "timers left behind");
      } finally {
        clock.restore();
      }
    },
  },
  {
    name: "stall (fake time): silence counts only while the wrapper waits on the source; a real stall is still exact",
    run: async (lib) => {
      const clock = installFakeTime();
      try {
        // Chunk 1 is ready at once and waits 80 ms for the consumer; then the source goes silent.
        const src = source({ chunks: [CHUNK] });
        const controller = new AbortController();
        const t0 = clock.now();
        const reader = lib.withStallTimeout(src.stream, { firstChunkMs: 100, stallMs: 100, controller }).getReader();
        await clock.advance(80);
        equal((await reader.read()).value, CHUNK);
        let error;
        const read = reader.read().catch((e) => (error = e));
        await clock.advance(99);
        equal(error, undefined, "stalled before 100 ms of waiting on the source");
        await clock.advance(1);
        await read;
        ok(lib.isStreamStalled(error), `errored with ${error?.name}: ${error?.message}`);
        equal(error.phase, "stall");
        equal(error.afterMs, 100);
        equal(clock.now() - t0, 180);
        equal(controller.signal.reason, error);
        // Before the first chunk, too: a non-progress chunk held 50 ms is not silence.
        const quiet = source({ chunks: [enc.encode("")] });
        const r2 = lib.withStallTimeout(quiet.stream, { firstChunkMs: 100, stallMs: 1_000 }).getReader();
        await clock.advance(50);
        equal((await r2.read()).value.byteLength, 0);
        let e2;
        const read2 = r2.read().catch((e) => (e2 = e));
        await clock.advance(99);
        equal(e2, undefined, "first-chunk limit counted the time a chunk waited for the consumer");
        await clock.advance(1);
        await read2;
        ok(lib.isStreamStalled(e2) && e2.phase === "first-chunk", `errored with ${e2?.name}: ${e2?.message}`);
        equal(e2.afterMs, 100);
        equal(clock.pending(), 0, "timers left behind");
      } finally {
        clock.restore();
      }
    },
  },
  {
    name: "stall (fake time): the first-chunk and stall limits are declared at exactly their instants, not a millisecond before",
    run: async (lib) => {
      const clock = installFakeTime();
      try {
        const src = source();
        const controller = new AbortController();
        let abortedAt;
        controller.signal.addEventListener("abort", () => (abortedAt = clock.now()));
        const t0 = clock.now();
        const reader = lib.withStallTimeout(src.stream, { firstChunkMs: 100, stallMs: 40, controller }).getReader();
        const first = reader.read();
        await clock.advance(99);
        src.enqueue(CHUNK); // 99 ms: within the first-chunk limit
        equal((await first).value, CHUNK);
        let error;
        const second = reader.read().catch((e) => (error = e));
        await clock.advance(39);
        src.enqueue(CHUNK); // 39 ms after the last progress: within the stall limit
        await clock.advance(0);
        equal(error, undefined, "stalled before the limit");
        equal((await second).value, CHUNK);
        const third = reader.read().catch((e) => (error = e));
        await clock.advance(39);
        equal(error, undefined, "stalled 1 ms early");
        await clock.advance(1);
        await third;
        ok(lib.isStreamStalled(error), `errored with ${error?.name}: ${error?.message}`);
        equal(error.phase, "stall");
        equal(error.afterMs, 40);
        equal(error.chunks, 2);
        equal(abortedAt - t0, 99 + 39 + 40, "the upstream was aborted at the stall instant");
        ok(src.log.cancelled, "the source was cancelled");
        // The first-chunk limit on its own: exact too.
        const quiet = source();
        const r2 = lib.withStallTimeout(quiet.stream, { firstChunkMs: 100, stallMs: 10 }).getReader();
        let e2;
        const read2 = r2.read().catch((e) => (e2 = e));
        await clock.advance(99);
        equal(e2, undefined, "first-chunk stall 1 ms early");
        await clock.advance(1);
        await read2;
        equal(e2?.phase, "first-chunk");
        equal(e2.afterMs, 100);
        equal(clock.pending(), 0, "timers left behind");
      } finally {
        clock.restore();
      }
    },
  },
  {
    name: "stall (fake time): a burst after silence is sampled; the stall after it is never early and at most sampleMs late; exact again once the burst ends",
    run: async (lib) => {
      const clock = installFakeTime();
      try {
        for (const [stallMs, sampleMs] of [[100, 16], [20, 5]]) {
          // Silence just under the first-chunk limit, then 500 chunks in one instant (a burst), then silence.
          const src = source();
          const reader = lib.withStallTimeout(src.stream, { firstChunkMs: 200, stallMs }).getReader();
          let error;
          let n = 0;
          const reading = (async () => {
            for (;;) {
              const { done } = await reader.read();
              if (done) return;
              n++;
            }
          })().catch((e) => (error = e));
          await clock.advance(199);
          const burstAt = clock.now();
          for (let i = 0; i < 500; i++) src.enqueue(CHUNK);
          // All 500 are read at this one instant (a read takes a few promise hops).
          for (let i = 0; i < 100 && n < 500; i++) await clock.advance(0);
          await clock.advance(stallMs - 1);
          equal(n, 500, "chunks read");
          equal(error, undefined, `stalled ${clock.now() - burstAt} ms after a burst (limit ${stallMs})`);
          for (let i = 0; i <= sampleMs; i++) if (error === undefined) await clock.advance(1);
          await reading;
          ok(lib.isStreamStalled(error), `no stall within sampleMs of the limit (${stallMs} ms): ${error?.name}`);
          const late = clock.now() - burstAt - stallMs;
          ok(late >= 0 && late <= sampleMs, `declared ${late} ms after the limit (sampleMs ${sampleMs})`);
          ok(error.afterMs >= stallMs, `afterMs ${error.afterMs}`);
        }
        // A burst, then chunks 10 ms apart (not a burst): the stall after the last one is exact again.
        const src = source();
        const reader = lib.withStallTimeout(src.stream, { firstChunkMs: 200, stallMs: 50 }).getReader();
        let error;
        const reading = (async () => {
          for (;;) if ((await reader.read()).done) return;
        })().catch((e) => (error = e));
        for (let i = 0; i < 100; i++) src.enqueue(CHUNK);
        for (let i = 0; i < 100; i++) await clock.advance(0);
        for (let i = 0; i < 10; i++) {
          await clock.advance(10);
          src.enqueue(CHUNK);
        }
        const lastAt = clock.now();
        await clock.advance(49);
        equal(error, undefined, "stalled early after the burst ended");
        await clock.advance(1);
        await reading;
        equal(error?.phase, "stall", `errored with ${error?.name}: ${error?.message}`);
        equal(clock.now() - lastAt, 50);
        equal(error.afterMs, 50, "timed per chunk again after the burst");
        equal(clock.pending(), 0, "timers left behind");
      } finally {
        clock.restore();
      }
    },
  },
  {
    name: "stall (fake time): parked while a chunk waits for the consumer, only the deadline expires, at its instant; the consumer's read resumes the limits",
    run: async (lib) => {
      const clock = installFakeTime();
      try {
        const t0 = clock.now();
        const src = source({ chunks: [CHUNK, CHUNK] });
        const controller = new AbortController();
        let abortedAt;
        controller.signal.addEventListener("abort", () => (abortedAt = clock.now()));
        const deadline = lib.Deadline.in(300);
        const reader = lib.withStallTimeout(src.stream, { firstChunkMs: 50, stallMs: 50, deadline, controller }).getReader();
        // Nobody reads for 120 ms: the stall timer fires during the hold and parks.
        await clock.advance(120);
        equal(abortedAt, undefined, "a held chunk was reported as a stall");
        equal((await reader.read()).value, CHUNK);
        equal((await reader.read()).value, CHUNK);
        // Now the wrapper waits on the source again: a stall 50 ms later, exactly.
        let error;
        const read = reader.read().catch((e) => (error = e));
        await clock.advance(49);
        equal(error, undefined, "stalled before 50 ms of waiting");
        await clock.advance(1);
        await read;
        equal(error?.phase, "stall", `errored with ${error?.name}: ${error?.message}`);
        equal(abortedAt - t0, 170);
        // Parked past the deadline: the deadline still ends the stream at its instant.
        const src2 = source({ chunks: [CHUNK, CHUNK] });
        const c2 = new AbortController();
        let aborted2;
        c2.signal.addEventListener("abort", () => (aborted2 = clock.now()));
        const d2 = lib.Deadline.in(200);
        const r2 = lib.withStallTimeout(src2.stream, { firstChunkMs: 50, stallMs: 50, deadline: d2, controller: c2 }).getReader();
        await clock.advance(199);
        equal(aborted2, undefined, "ended before the deadline while parked");
        await clock.advance(1);
        equal(aborted2, d2.at, "the deadline ended a parked stream at its instant");
        ok(lib.isDeadlineExceeded(c2.signal.reason), `aborted with ${c2.signal.reason}`);
        await rejects(r2.read(), lib.DeadlineExceeded);
        deadline.dispose();
        d2.dispose();
        equal(clock.pending(), 0, "timers left behind");
      } finally {
        clock.restore();
      }
    },
  },
  {
    name: "stall (fake time): a late wake-up looks at what arrived meanwhile before it declares silence; a silent source still stalls, never early, at most 3 yields of 10 ms later; the deadline is not deferred",
    run: async (lib) => {
      const clock = installFakeTime();
      try {
        // A chunk at once, then one 120 ms later; the wrapper's wake is due at 100 ms.
        const src = source({ chunks: [CHUNK] });
        const controller = new AbortController();
        const reader = lib.withStallTimeout(src.stream, { firstChunkMs: 100, stallMs: 100, controller }).getReader();
        equal((await reader.read()).value, CHUNK);
        const t1 = clock.now();
        let error;
        let value;
        const read = reader.read().then((r) => (value = r.value), (e) => (error = e));
        // The source's byte, queued behind the wake (a stream already cancelled by a stall refuses it).
        clock.sleep(120).then(() => src.enqueue(CHUNK)).catch(() => {});
        // The event loop was busy for 300 ms: the wake (due at 100) runs first, 200 ms late.
        clock.jump(300);
        await clock.advance(0);
        await read;
        equal(error, undefined, `a late wake declared a stall before reading what had arrived: ${error?.message}`);
        equal(value, CHUNK);
        equal(controller.signal.aborted, false);
        // On time again: the stall after it is exact.
        const t2 = clock.now();
        const read2 = reader.read().catch((e) => (error = e));
        await clock.advance(99);
        equal(error, undefined, "stalled before 100 ms of silence");
        await clock.advance(1);
        await read2;
        ok(lib.isStreamStalled(error), `errored with ${error?.name}: ${error?.message}`);
        equal(error.afterMs, 100);
        equal(clock.now() - t2, 100);
        equal(t2 - t1, 300);

        // Silent for real: a late wake yields, then the stall stands (never early).
        const quiet = source({ chunks: [CHUNK] });
        const r2 = lib.withStallTimeout(quiet.stream, { firstChunkMs: 100, stallMs: 100 }).getReader();
        equal((await r2.read()).value, CHUNK);
        let e2;
        const p2 = r2.read().catch((e) => (e2 = e));
        clock.jump(300);
        await clock.advance(0);
        equal(e2, undefined, "declared before yielding to the I/O queued meanwhile");
        // Each yield's wake is on time, and nothing arrived: it yields again, MAX_YIELDS in all.
        for (let i = 1; i < MAX_YIELDS; i++) {
          await clock.advance(YIELD_MS);
          equal(e2, undefined, `declared after ${i} yield(s) of ${MAX_YIELDS}`);
        }
        await clock.advance(YIELD_MS);
        await p2;
        ok(lib.isStreamStalled(e2), `errored with ${e2?.name}: ${e2?.message}`);
        equal(e2.afterMs, 300 + MAX_YIELDS * YIELD_MS);
        // A loop that stays busy cannot hide a stall: at most 3 yields in a row.
        const busy = source({ chunks: [CHUNK] });
        const r3 = lib.withStallTimeout(busy.stream, { firstChunkMs: 100, stallMs: 100 }).getReader();
        equal((await r3.read()).value, CHUNK);
        let e3;
        const p3 = r3.read().catch((e) => (e3 = e));
        for (let i = 0; i < 4; i++) {
          equal(e3, undefined, `declared after ${i} late wakes`);
          clock.jump(i === 0 ? 300 : 10); // each wake comes late again
          await clock.advance(0);
        }
        await p3;
        ok(lib.isStreamStalled(e3), `after 3 yields the stall stands: ${e3?.name}`);
        equal(e3.afterMs, 330);
        // The deadline is never deferred.
        const d = lib.Deadline.in(200);
        const r4 = lib.withStallTimeout(source().stream, { firstChunkMs: 1_000, stallMs: 1_000, deadline: d }).getReader();
        let e4;
        const p4 = r4.read().catch((e) => (e4 = e));
        clock.jump(400);
        await clock.advance(0);
        await p4;
        ok(lib.isDeadlineExceeded(e4), `the deadline ended it at the late wake: ${e4?.name}`);
        equal(clock.pending(), 0, "timers left behind");
      } finally {
        clock.restore();
      }
    },
  },
  {
    name: "stall: told a text/event-stream contentType, keep-alive comments are silence by default; an isProgress given decides",
    run: async (lib) => {
      const pinging = () => {
        let ping;
        const stream = new ReadableStream({
          start(c) {
            c.enqueue(enc.encode("data: 1\n\n"));
            ping = setInterval(() => c.enqueue(enc.encode(": ping\n\n")), 10);
          },
          cancel() {
            clearInterval(ping);
          },
        });
        return stream;
      };
      const d = lib.Deadline.in(1_000); // bounds the case when the pings are taken for progress
      const r = await drain(lib.withStallTimeout(pinging(), { firstChunkMs: 500, stallMs: 80, deadline: d, contentType: "text/event-stream; charset=utf-8" }));
      d.dispose();
      ok(lib.isStreamStalled(r.error), `errored with ${r.error?.name}: ${r.error?.message}`);
      equal(r.error.phase, "stall");
      within(r.error.afterMs, 80, 80 + TIMER_SLACK_MS, "afterMs");
      // The caller's predicate wins: every chunk counts, so the pings keep it alive until cancelled.
      const reader = lib.withStallTimeout(pinging(), { firstChunkMs: 500, stallMs: 80, contentType: "text/event-stream", isProgress: () => true }).getReader();
      const t0 = performance.now();
      while (performance.now() - t0 < 200) equal((await reader.read()).done, false);
      await reader.cancel("enough");
      // Another content type: every non-empty chunk is progress, as before.
      const other = lib.withStallTimeout(pinging(), { firstChunkMs: 500, stallMs: 80, contentType: "application/octet-stream" }).getReader();
      const t1 = performance.now();
      while (performance.now() - t1 < 200) equal((await other.read()).done, false);
      await other.cancel("enough");
      const bad = await rejects(async () => lib.withStallTimeout(new ReadableStream(), { firstChunkMs: 1, stallMs: 1, contentType: 5 }), TypeError, /'options.contentType'/);
      equal(bad.param, "options.contentType");
    },
  },
  {
    name: "stall: a deadline's parent aborting (the client left) errors the stream with the parent's reason and aborts the upstream",
    run: async (lib, ctx) => {
      const before = timers(ctx);
      const client = new AbortController();
      const controller = new AbortController();
      const src = new ReadableStream({ pull: (c) => c.enqueue(CHUNK) }, { highWaterMark: 0 });
      const d = lib.Deadline.in(10_000, { signal: client.signal });
      const reader = lib.withStallTimeout(src, { firstChunkMs: 5_000, stallMs: 5_000, deadline: d, controller }).getReader();
      ok((await reader.read()).value === CHUNK);
      const reason = new Error("client went away");
      client.abort(reason);
      let chunksAfter = 0;
      let error;
      try {
        for (;;) {
          if ((await reader.read()).done) break;
          if (++chunksAfter > 2) break; // at most what was already read ahead
        }
      } catch (e) {
        error = e;
      }
      equal(error, reason, "the stream's error");
      ok(chunksAfter <= 1, `${chunksAfter} chunks read after the client left`);
      equal(controller.signal.reason, reason, "the upstream's abort reason");
      // Already gone before wrapping: the first read rejects at once.
      const gone = lib.Deadline.in(10_000, { signal: client.signal });
      const e2 = await rejects(lib.withStallTimeout(source({ chunks: [CHUNK] }).stream, { firstChunkMs: 100, stallMs: 100, deadline: gone }).getReader().read());
      equal(e2, reason);
      d.dispose();
      gone.dispose();
      sameTimers(ctx, before, "a departed client");
    },
  },
  {
    name: "stall: a source that errors with a plain Error after the upstream was aborted reports the abort's reason",
    run: async (lib) => {
      // Like workerd before 2026-04-21: aborting the fetch errors its body with an unbranded Error.
      const controller = new AbortController();
      let ctrl;
      const src = new ReadableStream({ start: (c) => void (ctrl = c) });
      controller.signal.addEventListener("abort", () => ctrl.error(new Error("The operation was aborted.")));
      const d = lib.Deadline.in(40);
      d.signal().addEventListener("abort", () => controller.abort(d.signal().reason));
      const r = await drain(lib.withStallTimeout(src, { firstChunkMs: 5_000, stallMs: 5_000, controller }));
      ok(lib.isDeadlineExceeded(r.error), `errored with ${r.error?.name}: ${r.error?.message}`);
      equal(r.error, d.signal().reason);
    },
  },
  {
    name: "stall: firstChunkMs 0 is a shortage, not a mistake: the stream stalls at once (no RangeError)",
    run: async (lib, ctx) => {
      const before = timers(ctx);
      const controller = new AbortController();
      const src = source({ chunks: [CHUNK], close: true });
      const r = await drain(lib.withStallTimeout(src.stream, { firstChunkMs: 0, stallMs: 100, controller }));
      ok(lib.isStreamStalled(r.error), `errored with ${r.error?.name}: ${r.error?.message}`);
      equal(r.error.phase, "first-chunk");
      equal(r.chunks, 0);
      equal(controller.signal.reason, r.error);
      const r2 = await drain(lib.withStallTimeout(source({ chunks: [CHUNK] }).stream, { firstChunkMs: -0, stallMs: 100 }));
      ok(lib.isStreamStalled(r2.error), `-0: errored with ${r2.error?.name}: ${r2.error?.message}`);
      sameTimers(ctx, before, "a zero limit");
    },
  },
  {
    name: "stall: a parked stream (consumer not reading) still ends at its deadline",
    run: async (lib) => {
      const src = source({ chunks: [CHUNK, CHUNK] });
      const d = lib.Deadline.in(70);
      const reader = lib.withStallTimeout(src.stream, { firstChunkMs: 20, stallMs: 20, deadline: d }).getReader();
      await reader.read();
      await aborted(lib.Deadline.in(150).signal());
      // The second chunk was waiting in the wrapper; the deadline has passed meanwhile.
      const e = await rejects(reader.read());
      ok(lib.isDeadlineExceeded(e), `errored with ${e?.name}: ${e?.message}`);
      equal(src.log.reason, e);
    },
  },
  {
    name: "stall: StreamStalled has a name, a brand that works across copies, and readable messages",
    run: (lib) => {
      const e = new lib.StreamStalled("stall", 9_000.25, 3, 48);
      ok(e instanceof Error);
      equal(e.name, "StreamStalled");
      equal(e.phase, "stall");
      equal(e.afterMs, 9_000.25);
      equal(e.chunks, 3);
      equal(e.bytes, 48);
      equal(e.message, "stream stalled: no progress for 9000.3 ms after 3 chunks (48 bytes)");
      equal(Object.keys(e).includes(BRAND), true, "the brand is an own enumerable property");
      equal(new lib.StreamStalled("first-chunk", 5_000, 0, 0).message, "stream stalled: no first chunk after 5000 ms");
      equal(new lib.StreamStalled("first-byte", 12, 0, 0).message, "stream stalled: no response headers after 12 ms");
      const cause = new Error("why");
      equal(new lib.StreamStalled("stall", 1, 0, 0, { cause }).cause, cause);
      // A clone (workerd's abort reasons, a second copy of the package) keeps the brand.
      const clone = Object.assign(new Error(e.message), { ...e });
      ok(lib.isStreamStalled(clone));
      const foreign = Object.assign(new Error("x"), { name: "StreamStalled" });
      equal(lib.isStreamStalled(foreign), false, "a name alone is not the brand");
      equal(lib.isStreamStalled(null), false);
      equal(lib.isStreamStalled(undefined), false);
      equal(lib.isDeadlineExceeded(e), false);
    },
  },

  // ---- sseProgress ---------------------------------------------------------------------------
  {
    name: "sse: keep-alive comments and blank lines are not progress; field lines are",
    run: (lib) => {
      for (const [chunk, want] of [
        [": ping\n\n", false],
        [":\n", false],
        ["\n\n\r\n", false],
        ["", false],
        [": a\r\n: b\r\n\r\n", false],
        ["data: x\n\n", true],
        [": ping\ndata: x\n\n", true],
        ["event: token\n", true],
        ["id: 7\n", true],
        ["retry: 10\n", false], // an event that only sets the reconnection time says "still here" too
        ["retry: 10\ndata: x\n", true],
        ["data\n", true],
        ["\uFEFF: ping\n\n", false],
      ]) {
        equal(lib.sseProgress(chunk), want, `text ${JSON.stringify(chunk)}`);
        equal(lib.sseProgress(enc.encode(chunk)), want, `bytes of ${JSON.stringify(chunk)}`);
        equal(lib.sseProgress(enc.encode(chunk).buffer), want, `ArrayBuffer of ${JSON.stringify(chunk)}`);
      }
      equal(lib.sseProgress(new DataView(enc.encode("data: 1\n").buffer)), true, "any ArrayBufferView");
      const bad = throws(() => lib.sseProgress(42), TypeError, /sseProgress: 'chunk' must be a Uint8Array, an ArrayBuffer or a string: current value is 42/);
      equal(bad.param, "chunk");
      equal(bad.code, "INVALID_TYPE");
      throws(() => lib.sseProgress({}), TypeError, /current value is an object/);
    },
  },
  {
    name: "sse: chunk boundaries anywhere (mid-line, mid-CRLF, mid-character, mid-BOM) give the oracle's answer",
    run: (lib) => {
      const texts = [
        ': ping\n\ndata: {"t":"héllo 🌍"}\n\n: ping\n\n',
        "\uFEFF: hi\r\n\r\nevent: x\r\ndata: 1\r\n\r\n:\r\n",
        ": only\r: comments\r\r: here\n",
        "data: a\n\n\n\n: x\ndata: b\r\n\r\n",
      ];
      for (const text of texts) {
        for (const asBytes of [false, true]) {
          const units = asBytes ? enc.encode(text) : text;
          const field = oracle(units, asBytes);
          const n = units.length;
          // Every split into two and a spread of splits into three.
          const splits = [];
          for (let i = 0; i <= n; i++) splits.push([i]);
          for (let i = 0; i <= n; i += 3) for (let j = i; j <= n; j += 5) splits.push([i, j]);
          for (const cut of splits) {
            const isProgress = lib.createSseProgress();
            const bounds = [0, ...cut, n];
            for (let k = 0; k + 1 < bounds.length; k++) {
              const piece = units.slice(bounds[k], bounds[k + 1]);
              let want = false;
              for (let i = bounds[k]; i < bounds[k + 1]; i++) want ||= field[i];
              equal(isProgress(piece), want, `${asBytes ? "bytes" : "text"} ${JSON.stringify(text)} cut at ${cut}, piece ${k}`);
            }
          }
        }
      }
    },
  },
  {
    name: "sse: sseProgress as isProgress gets fresh state per stream; keep-alives after events stall",
    run: async (lib) => {
      // Two streams interleaved: one ends mid-comment, the other mid-field.
      const a = source({ chunks: [": keep-", "alive\n\n"] });
      const b = source({ chunks: ["da", "ta: 1\n\n"] });
      const ra = drain(lib.withStallTimeout(a.stream, { firstChunkMs: 60, stallMs: 30, isProgress: lib.sseProgress }));
      const rb = drain(lib.withStallTimeout(b.stream, { firstChunkMs: 60, stallMs: 30, isProgress: lib.sseProgress }));
      const [resA, resB] = await Promise.all([ra, rb]);
      equal(resA.error?.phase, "first-chunk", "comments only: no progress at all");
      equal(resA.error.chunks, 2);
      equal(resB.error?.phase, "stall", "the split event counted");
      // Events, then keep-alive comments every 10 ms: a stall after the last event.
      let ping;
      const sse = new ReadableStream({
        start(c) {
          c.enqueue(enc.encode("data: 1\n\ndata: 2"));
          c.enqueue(enc.encode("\n\n"));
          ping = setInterval(() => c.enqueue(enc.encode(": ping\n\n")), 10);
        },
        cancel() {
          clearInterval(ping);
        },
      });
      const r = await drain(lib.withStallTimeout(sse, { firstChunkMs: 500, stallMs: 80, isProgress: lib.sseProgress }));
      equal(r.error?.phase, "stall");
      within(r.error.afterMs, 80, 80 + TIMER_SLACK_MS, "afterMs");
      ok(r.error.chunks > 2, "keep-alives arrived and were counted as chunks");
      equal((r.error.bytes - 18) % 8, 0, `bytes ${r.error.bytes}`);
    },
  },

  // ---- against the fixture server ------------------------------------------------------------
  {
    name: "stall fixture: a steady stream passes through fetchWithDeadline untouched",
    needs: ["fixtureUrl"],
    run: async (lib, ctx) => {
      const id = uid();
      const url = `${ctx.fixtureUrl}/stall/steady?id=${id}&n=10&gap=10`;
      const res = await lib.fetchWithDeadline(url, undefined, { deadline: lib.Deadline.in(10_000), firstByteMs: 2_000, firstChunkMs: 1_000, stallMs: 300 });
      equal(res.status, 200);
      equal(res.url, url);
      equal(res.headers.get("content-type"), "application/octet-stream");
      const r = await drain(res.body);
      equal(r.error, undefined, `errored with ${r.error?.message}`);
      equal(r.bytes, 160);
      ok(r.chunks >= 1 && r.chunks <= 10);
      const view = await serverView(ctx, id);
      equal(view.bytes, 160);
    },
  },
  {
    name: "stall fixture: slow but steady (longer than stallMs in total, never a gap that long) is not killed",
    needs: ["fixtureUrl"],
    run: async (lib, ctx) => {
      const id = uid();
      const t0 = performance.now();
      const res = await lib.fetchWithDeadline(`${ctx.fixtureUrl}/stall/steady?id=${id}&n=8&gap=50`, undefined, {
        deadline: lib.Deadline.in(10_000),
        firstChunkMs: 200,
        stallMs: 200,
      });
      const r = await drain(res.body);
      equal(r.error, undefined, `errored with ${r.error?.message}`);
      equal(r.bytes, 128);
      ok(r.at - t0 > 200, `the whole stream took only ${r.at - t0} ms`);
    },
  },
  {
    name: "stall fixture: headers then a stall mid-body → StreamStalled stall, and the server sees the close",
    needs: ["fixtureUrl"],
    run: async (lib, ctx) => {
      const id = uid();
      const controller = new AbortController();
      const res = await fetch(`${ctx.fixtureUrl}/stall/mid?id=${id}&n=3&gap=10`, { signal: controller.signal });
      const r = await drain(lib.withStallTimeout(res.body, { firstChunkMs: 1_000, stallMs: 150, controller }));
      const e = r.error;
      ok(lib.isStreamStalled(e), `errored with ${e?.name}: ${e?.message}`);
      equal(e.phase, "stall");
      within(e.afterMs, 150, 150 + TIMER_SLACK_MS, "afterMs");
      equal(e.bytes, 48);
      ok(e.chunks >= 1 && e.chunks <= 3, `chunks ${e.chunks}`);
      equal(r.bytes, 48);
      equal(controller.signal.reason, e);
      await assertClosed(ctx, id, "afterLastByteMs", 150);
    },
  },
  {
    name: "stall fixture: a stall before the first chunk → StreamStalled first-chunk, and the server sees the close",
    needs: ["fixtureUrl"],
    run: async (lib, ctx) => {
      const id = uid();
      const res = await lib.fetchWithDeadline(`${ctx.fixtureUrl}/stall/before?id=${id}`, undefined, {
        deadline: lib.Deadline.in(10_000),
        firstChunkMs: 120,
        stallMs: 50,
      });
      const r = await drain(res.body);
      const e = r.error;
      ok(lib.isStreamStalled(e), `errored with ${e?.name}: ${e?.message}`);
      equal(e.phase, "first-chunk");
      within(e.afterMs, 120, 120 + TIMER_SLACK_MS, "afterMs");
      equal(e.chunks, 0);
      equal(e.bytes, 0);
      await assertClosed(ctx, id, "afterHeadersMs", 120);
    },
  },
  {
    name: "stall fixture: SSE keep-alive comments after a few events (one split) → StreamStalled stall; close seen",
    needs: ["fixtureUrl"],
    run: async (lib, ctx) => {
      const id = uid();
      const res = await lib.fetchWithDeadline(`${ctx.fixtureUrl}/stall/sse?id=${id}&events=3&gap=40&ping=20`, undefined, {
        deadline: lib.Deadline.in(10_000),
        firstChunkMs: 1_000,
        stallMs: 150,
        isProgress: lib.sseProgress,
      });
      equal(res.headers.get("content-type"), "text/event-stream");
      const r = await drain(res.body);
      const e = r.error;
      ok(lib.isStreamStalled(e), `errored with ${e?.name}: ${e?.message}`);
      equal(e.phase, "stall", "keep-alives must not count, the split event must");
      within(e.afterMs, 150, 150 + TIMER_SLACK_MS, "afterMs");
      const events = ': connected\n\n' + 'event: token\ndata: {"i":1}\n\n' + 'event: token\ndata: {"i":2}\n\n' + 'data: {"i":3, "text":"last"}\n\n';
      const eventBytes = enc.encode(events).length;
      ok(e.bytes >= eventBytes + 8, `only ${e.bytes} bytes: no keep-alive arrived`);
      equal((e.bytes - eventBytes) % 8, 0, `bytes ${e.bytes} is not events + n × ": ping\\n\\n"`);
      const view = await assertClosed(ctx, id, "afterLastEventMs", 150);
      ok(view.bytes >= e.bytes);
    },
  },
  {
    name: "stall fixture: no headers within firstByteMs → fetchWithDeadline rejects with StreamStalled first-byte; close seen",
    needs: ["fixtureUrl"],
    run: async (lib, ctx) => {
      const id = uid();
      const t0 = performance.now();
      const e = await rejects(
        lib.fetchWithDeadline(`${ctx.fixtureUrl}/stall/no-headers?id=${id}`, undefined, { deadline: lib.Deadline.in(10_000), firstByteMs: 100 }),
      );
      ok(lib.isStreamStalled(e), `rejected with ${e?.name}: ${e?.message}`);
      equal(e.phase, "first-byte");
      within(e.afterMs, 100, 100 + TIMER_SLACK_MS, "afterMs");
      ok(performance.now() - t0 >= 100);
      // The server's clock starts when the request reaches it, a few ms after
      // the client's on a loaded machine: allow that much below the limit.
      await assertClosed(ctx, id, "afterStartMs", 100 - ARRIVAL_SLACK_MS);
    },
  },
  {
    name: "stall fixture: the deadline ends a body mid-stream with DeadlineExceeded; close seen",
    needs: ["fixtureUrl"],
    run: async (lib, ctx) => {
      const id = uid();
      const d = lib.Deadline.in(250);
      const res = await lib.fetchWithDeadline(`${ctx.fixtureUrl}/stall/mid?id=${id}&n=2&gap=10`, undefined, { deadline: d, stallMs: 5_000 });
      const r = await drain(res.body);
      ok(lib.isDeadlineExceeded(r.error), `errored with ${r.error?.name}: ${r.error?.message}`);
      equal(r.error.at, d.at);
      ok(r.at >= d.at, "errored before the deadline");
      equal(r.bytes, 32);
      await assertClosed(ctx, id);
      // A deadline that passed before headers: the fetch itself rejects with it.
      const d2 = lib.Deadline.in(80);
      const e = await rejects(lib.fetchWithDeadline(`${ctx.fixtureUrl}/stall/no-headers?id=${uid()}`, undefined, { deadline: d2 }));
      ok(lib.isDeadlineExceeded(e), `rejected with ${e?.name}: ${e?.message}`);
      equal(e.at, d2.at);
    },
  },
  {
    name: "stall fixture: a client that left (the deadline's parent) ends the body with its reason; close seen",
    needs: ["fixtureUrl"],
    run: async (lib, ctx) => {
      const id = uid();
      const client = new AbortController();
      const d = lib.Deadline.in(10_000, { signal: client.signal });
      const res = await lib.fetchWithDeadline(`${ctx.fixtureUrl}/stall/steady?id=${id}&n=200&gap=10`, undefined, { deadline: d, stallMs: 5_000 });
      const reader = res.body.getReader();
      ok((await reader.read()).value.byteLength > 0);
      const reason = new Error("client went away");
      client.abort(reason);
      const e = await rejects(async () => {
        for (;;) if ((await reader.read()).done) return;
      });
      ok(e === reason || e?.message === reason.message, `errored with ${e?.name}: ${e?.message}`);
      await assertClosed(ctx, id);
      d.dispose();
    },
  },
  {
    name: "stall fixture: a body ended mid-stream by the deadline errors with the branded reason, every time (20 fetchWithDeadline, 12 withStallTimeout)",
    needs: ["fixtureUrl"],
    run: async (lib, ctx) => {
      const url = () => `${ctx.fixtureUrl}/stall/steady?id=${uid()}&n=100&gap=5`;
      // The deadline starts once the headers are in, so it always ends the body.
      const viaFetch = async () => {
        const parent = new AbortController();
        const res = await lib.fetchWithDeadline(url(), undefined, { deadline: lib.Deadline.in(10_000, { signal: parent.signal }), stallMs: 5_000 });
        const d = lib.Deadline.in(60);
        d.signal().addEventListener("abort", () => parent.abort(d.signal().reason));
        return (await drain(res.body)).error;
      };
      const viaWrapper = async () => {
        const parent = new AbortController();
        const res = await fetch(url(), { signal: parent.signal });
        const d = lib.Deadline.in(60);
        d.signal().addEventListener("abort", () => parent.abort(d.signal().reason));
        return (await drain(lib.withStallTimeout(res.body, { firstChunkMs: 5_000, stallMs: 5_000, deadline: d }))).error;
      };
      // In batches of 4: browsers open at most 6 connections to one host.
      const errors = [];
      for (const [run, n] of [[viaFetch, 20], [viaWrapper, 12]]) {
        for (let i = 0; i < n; i += 4) errors.push(...(await Promise.all(Array.from({ length: Math.min(4, n - i) }, run))));
      }
      const unbranded = errors.filter((e) => !lib.isDeadlineExceeded(e)).map((e) => `${e?.name}: ${e?.message}`);
      equal(unbranded.length, 0, `unbranded body errors (${unbranded.slice(0, 2).join("; ")})`);
    },
  },
  {
    name: "stall fixture: zero firstByteMs / firstChunkMs degrade to StreamStalled (first-byte / first-chunk), never RangeError",
    needs: ["fixtureUrl"],
    run: async (lib, ctx) => {
      const d = lib.Deadline.in(5_000);
      const e = await rejects(lib.fetchWithDeadline(`${ctx.fixtureUrl}/stall/steady?id=${uid()}&n=2`, undefined, { deadline: d, firstByteMs: 0 }));
      ok(lib.isStreamStalled(e), `rejected with ${e?.name}: ${e?.message}`);
      equal(e.phase, "first-byte");
      const res = await lib.fetchWithDeadline(`${ctx.fixtureUrl}/stall/steady?id=${uid()}&n=2`, undefined, { deadline: d, firstChunkMs: 0 });
      const r = await drain(res.body);
      ok(lib.isStreamStalled(r.error), `body errored with ${r.error?.name}: ${r.error?.message}`);
      equal(r.error.phase, "first-chunk");
      d.dispose();
    },
  },
  {
    name: "stall fixture: an unread fetchWithDeadline body does not keep the process alive until the deadline",
    needs: ["fixtureUrl", "spawnPackageScript"],
    run: async (lib, ctx) => {
      const url = `${ctx.fixtureUrl}/stall/steady?id=${uid()}&n=3&gap=5`;
      const { code, ms, stdout } = await ctx.spawnPackageScript(
        `await init(await readBytes(wasmUrl));
const lib = await import(entryUrl);
const res = await lib.fetchWithDeadline(${JSON.stringify(url)}, undefined, { deadline: Deadline.in(15_000), stallMs: 10_000 });
const unread = lib.withStallTimeout(new Response("finished").body, { firstChunkMs: 15_000, stallMs: 15_000 });
console.log(res.status, unread.locked);`,
      );
      equal(code, 0, "child exit code");
      equal(stdout.trim(), "200 false");
      ok(ms < 5_000, `the child took ${Math.round(ms)} ms to exit`);
    },
  },
  {
    name: "stall fixture: SSE keep-alives are silence by default: fetchWithDeadline without isProgress stalls at stallMs, not at the deadline",
    needs: ["fixtureUrl"],
    run: async (lib, ctx) => {
      const id = uid();
      const t0 = performance.now();
      const d = lib.Deadline.in(2_000);
      const res = await lib.fetchWithDeadline(`${ctx.fixtureUrl}/stall/sse?id=${id}&events=2&gap=20&ping=20`, undefined, { deadline: d, firstChunkMs: 1_000, stallMs: 150 });
      const r = await drain(res.body);
      const took = r.at - t0;
      ok(lib.isStreamStalled(r.error), `errored with ${r.error?.name}: ${r.error?.message} after ${Math.round(took)} ms`);
      equal(r.error.phase, "stall");
      within(r.error.afterMs, 150, 150 + TIMER_SLACK_MS, "afterMs");
      ok(took < 1_500, `took ${Math.round(took)} ms: the pings kept it to the deadline`);
      await assertClosed(ctx, id, "afterLastEventMs", 150);
      // Only pings from the start: a first-chunk stall.
      const res2 = await lib.fetchWithDeadline(`${ctx.fixtureUrl}/stall/pings?id=${uid()}&ping=20`, undefined, { deadline: d, firstChunkMs: 150, stallMs: 150 });
      const r2 = await drain(res2.body);
      equal(r2.error?.phase, "first-chunk", `errored with ${r2.error?.name}: ${r2.error?.message}`);
      ok(r2.error.chunks >= 1 && r2.error.bytes % 8 === 0, `pings arrived: ${r2.error.chunks} chunks, ${r2.error.bytes} bytes`);
      d.dispose();
    },
  },
  {
    name: "stall fixture: a consumer blocked for 300 ms (a long synchronous task) is not a stall of a source that kept sending: 3 of 3 trials",
    needs: ["fixtureUrl", "blockLoop"],
    run: async (lib, ctx) => {
      for (let trial = 1; trial <= 3; trial++) {
        // 40 chunks of 16 bytes, one every 20 ms, from another process; stallMs 100.
        const controller = new AbortController();
        const res = await fetch(`${ctx.fixtureUrl}/stall/steady?id=${uid()}&n=40&gap=20`, { signal: controller.signal });
        const reader = lib.withStallTimeout(res.body, { firstChunkMs: 1_000, stallMs: 100, controller }).getReader();
        let bytes = 0;
        let reads = 0;
        let blockedAt;
        let error;
        try {
          for (;;) {
            const { done, value } = await reader.read();
            if (done) break;
            bytes += value.byteLength;
            if (++reads === 3) {
              blockedAt = performance.now();
              ctx.blockLoop(300); // the wrapper is waiting on the source meanwhile
            }
          }
        } catch (e) {
          error = e;
        }
        equal(error, undefined, `trial ${trial}: ${error?.name}: ${error?.message} (${Math.round(performance.now() - blockedAt)} ms after the block began)`);
        equal(bytes, 640, `trial ${trial}: bytes`);
        ok(!controller.signal.aborted, `trial ${trial}: the healthy upstream was aborted`);
      }
      // A source that really goes silent after the block still stalls.
      const res = await lib.fetchWithDeadline(`${ctx.fixtureUrl}/stall/mid?id=${uid()}&n=3&gap=10`, undefined, { deadline: lib.Deadline.in(5_000), stallMs: 100 });
      const reader = res.body.getReader();
      await reader.read();
      ctx.blockLoop(300);
      const e = await rejects(async () => {
        for (;;) if ((await reader.read()).done) return;
      });
      ok(lib.isStreamStalled(e), `errored with ${e?.name}: ${e?.message}`);
    },
  },
  {
    name: "stall fixture: fetchWithDeadline with default options works wherever a plain fetch does: a server that allows any origin but answers no preflight (in a browser, cross-origin: no budget header)",
    needs: ["fixtureUrl"],
    run: async (lib, ctx) => {
      const url = (id) => `${ctx.fixtureUrl}/stall/no-preflight?id=${id}`;
      const seen = async (id) => (await fetch(`${ctx.fixtureUrl}/stall/cors-seen?id=${id}`)).json();
      const plain = await fetch(url(uid()));
      equal(plain.status, 200, "a plain fetch works");
      await plain.text();
      const id = uid();
      const res = await lib.fetchWithDeadline(url(id), undefined, { deadline: lib.Deadline.in(5_000), stallMs: 1_000 });
      equal(res.status, 200);
      ok((await res.text()).endsWith("data: done\n\n"));
      const view = await seen(id);
      equal(view.preflights, 0, "a preflight was sent");
      equal(view.gets, 1);
      // Browsers apply CORS: there the default header goes to the page's own origin only.
      const crossOriginPage = typeof document !== "undefined" && new URL(ctx.fixtureUrl).origin !== location.origin;
      if (crossOriginPage) {
        equal(view.budgetHeader, null, "the budget header went cross-origin");
        // Asked for, it is sent: then the browser preflights, which this server refuses (as for any custom header).
        const id2 = uid();
        const e = await rejects(lib.fetchWithDeadline(url(id2), undefined, { deadline: lib.Deadline.in(5_000), propagate: true }), TypeError);
        ok(!lib.isTimeout(e), `a refused preflight is the network error: ${e?.name}`);
        equal((await seen(id2)).preflights, 1, "propagate: true sends the header (preflighted)");
      } else {
        ok(Number(view.budgetHeader) > 0 && Number(view.budgetHeader) <= 5_000, `no CORS here: the budget header is sent (${view.budgetHeader})`);
      }
    },
  },
  {
    name: "stall fixture: a consumer's cancel and the caller's init.signal both release the connection",
    needs: ["fixtureUrl"],
    run: async (lib, ctx) => {
      const id = uid();
      const res = await lib.fetchWithDeadline(`${ctx.fixtureUrl}/stall/mid?id=${id}&n=2&gap=10`, undefined, { deadline: lib.Deadline.in(10_000), stallMs: 5_000 });
      const reader = res.body.getReader();
      ok((await reader.read()).value.byteLength > 0);
      await reader.cancel("done reading");
      await assertClosed(ctx, id, "afterStartMs", 0);
      const id2 = uid();
      const caller = new AbortController();
      const res2 = await lib.fetchWithDeadline(`${ctx.fixtureUrl}/stall/mid?id=${id2}&n=1`, { signal: caller.signal }, {
        deadline: lib.Deadline.in(10_000),
        stallMs: 5_000,
      });
      const pending = drain(res2.body);
      caller.abort(new Error("client went away"));
      const r = await pending;
      ok(r.error, "the body did not error");
      await assertClosed(ctx, id2);
    },
  },
  ...badInputCases(),
];

/** Marks, for each code unit (or byte), whether it belongs to an SSE field line. */
function oracle(units, asBytes) {
  const at = (i) => (asBytes ? units[i] : units.charCodeAt(i));
  const out = new Array(units.length).fill(false);
  let i = 0;
  // A leading BOM is not content.
  if (asBytes && at(0) === 0xef && at(1) === 0xbb && at(2) === 0xbf) i = 3;
  if (!asBytes && at(0) === 0xfeff) i = 1;
  while (i < units.length) {
    let j = i;
    while (j < units.length && at(j) !== 10 && at(j) !== 13) j++;
    const isField = j > i && at(i) !== 58;
    for (let k = i; k < j; k++) out[k] = isField;
    i = j + 1;
  }
  return out;
}

function badInputCases() {
  const stream = () => new ReadableStream();
  const ok_ = { firstChunkMs: 100, stallMs: 100 };
  const w = (lib, s, o) => lib.withStallTimeout(s, o);
  const f = (lib, o, init) => lib.fetchWithDeadline("http://127.0.0.1:9/", init, o);
  const T = "INVALID_TYPE";
  // [label, call, class, message pattern, .param, .code]
  const table = [
    ["withStallTimeout(stream = null)", (lib) => w(lib, null, ok_), TypeError, /^withStallTimeout: 'stream' must be a ReadableStream: current value is null$/, "stream", T],
    ["withStallTimeout(stream = a string)", (lib) => w(lib, "data", ok_), TypeError, /'stream'.*a string/, "stream", T],
    ["withStallTimeout(stream = an async iterable)", (lib) => w(lib, { async *[Symbol.asyncIterator]() {} }, ok_), TypeError, /'stream'/, "stream", T],
    ["withStallTimeout(stream = a Uint8Array)", (lib) => w(lib, CHUNK, ok_), TypeError, /'stream'.*a Uint8Array/, "stream", T],
    ["withStallTimeout(options missing)", (lib) => w(lib, stream()), TypeError, /'options' must be an object like \{ firstChunkMs, stallMs \}/, "options", T],
    ["withStallTimeout(options = 5)", (lib) => w(lib, stream(), 5), TypeError, /'options'/, "options", T],
    ["firstChunkMs missing", (lib) => w(lib, stream(), { stallMs: 1 }), TypeError, /'options.firstChunkMs' must be a number.*undefined/, "options.firstChunkMs", T],
    ["stallMs missing", (lib) => w(lib, stream(), { firstChunkMs: 1 }), TypeError, /'options.stallMs' must be a number/, "options.stallMs", T],
    ["firstChunkMs = '100'", (lib) => w(lib, stream(), { ...ok_, firstChunkMs: "100" }), TypeError, /'options.firstChunkMs'/, "options.firstChunkMs", T],
    ["stallMs = 10n", (lib) => w(lib, stream(), { ...ok_, stallMs: 10n }), TypeError, /'options.stallMs'/, "options.stallMs", T],
    ...[
      ["NaN", NaN, "NOT_FINITE"],
      ["Infinity", Infinity, "NOT_FINITE"],
      ["-Infinity", -Infinity, "NOT_FINITE"],
      ["-1", -1, "NEGATIVE"],
      ["0", 0, "NOT_POSITIVE"],
      ["-0", -0, "NOT_POSITIVE"],
      ["2^60", 2 ** 60, "TOO_LARGE"],
    ].flatMap(([label, v, code]) => [
      ...(v === 0
        ? []
        : [[`firstChunkMs = ${label}`, (lib) => w(lib, stream(), { ...ok_, firstChunkMs: v }), RangeError, /^'options.firstChunkMs' must be a finite number of milliseconds, 0 or more/, "options.firstChunkMs", code]]),
      [`stallMs = ${label}`, (lib) => w(lib, stream(), { ...ok_, stallMs: v }), RangeError, /^'options.stallMs' must be a finite number of milliseconds greater than 0/, "options.stallMs", code],
    ]),
    ["deadline = 5000 (a number)", (lib) => w(lib, stream(), { ...ok_, deadline: 5_000 }), TypeError, /^withStallTimeout: 'options.deadline' must be a Deadline/, "options.deadline", T],
    ["deadline = null", (lib) => w(lib, stream(), { ...ok_, deadline: null }), TypeError, /'options.deadline'/, "options.deadline", T],
    ["deadline = a look-alike without the brand", (lib) => w(lib, stream(), { ...ok_, deadline: { at: 5, signal: () => new AbortController().signal } }), TypeError, /'options.deadline' must be a Deadline/, "options.deadline", T],
    ["controller = {}", (lib) => w(lib, stream(), { ...ok_, controller: {} }), TypeError, /'options.controller' must be an AbortController: current value is an object/, "options.controller", T],
    ["controller = an AbortSignal", (lib) => w(lib, stream(), { ...ok_, controller: new AbortController().signal }), TypeError, /'options.controller'/, "options.controller", T],
    ["isProgress = true", (lib) => w(lib, stream(), { ...ok_, isProgress: true }), TypeError, /^withStallTimeout: 'options.isProgress' must be a function/, "options.isProgress", T],
    [
      "a locked stream",
      (lib) => {
        const s = stream();
        s.getReader();
        return w(lib, s, ok_);
      },
      TypeError,
      /'stream' must be a ReadableStream that is not locked to a reader/,
      "stream",
      T,
    ],
    ["fetchWithDeadline(options missing)", (lib) => f(lib, undefined), TypeError, /^fetchWithDeadline: 'options' must be an object/, "options", T],
    ["fetchWithDeadline(deadline missing)", (lib) => f(lib, { stallMs: 10 }), TypeError, /^fetchWithDeadline: 'options.deadline' must be a Deadline/, "options.deadline", T],
    ["fetchWithDeadline(firstByteMs = -1)", (lib) => f(lib, { deadline: lib.Deadline.in(100), firstByteMs: -1 }), RangeError, /^'options.firstByteMs' must be a finite number of milliseconds, 0 or more/, "options.firstByteMs", "NEGATIVE"],
    ["fetchWithDeadline(firstByteMs = NaN)", (lib) => f(lib, { deadline: lib.Deadline.in(100), firstByteMs: NaN }), RangeError, /'options.firstByteMs'/, "options.firstByteMs", "NOT_FINITE"],
    ["fetchWithDeadline(stallMs = -5)", (lib) => f(lib, { deadline: lib.Deadline.in(100), stallMs: -5 }), RangeError, /'options.stallMs'/, "options.stallMs", "NEGATIVE"],
    ["fetchWithDeadline(firstChunkMs = '1')", (lib) => f(lib, { deadline: lib.Deadline.in(100), firstChunkMs: "1" }), TypeError, /'options.firstChunkMs'/, "options.firstChunkMs", T],
    ["fetchWithDeadline(isProgress = 1)", (lib) => f(lib, { deadline: lib.Deadline.in(100), isProgress: 1 }), TypeError, /'options.isProgress'/, "options.isProgress", T],
    ["fetchWithDeadline(init = 'GET')", (lib) => f(lib, { deadline: lib.Deadline.in(100) }, "GET"), TypeError, /^fetchWithDeadline: 'init' must be a RequestInit object/, "init", T],
    ["fetchWithDeadline(init.signal = {})", (lib) => f(lib, { deadline: lib.Deadline.in(100) }, { signal: {} }), TypeError, /'init.signal'/, "init.signal", T],
  ];
  return table.map(([label, call, Type, pattern, param, code]) => ({
    name: `bad input: ${label} → ${Type.name}`,
    run: async (lib) => {
      const e = await rejects(async () => call(lib), Type, pattern);
      equal(e.param, param, ".param");
      equal(e.code, code, ".code");
    },
  }));
}

// ---- messages: the core's templates, filled in JS ----------------------------------------------
cases.push({
  name: "stall: the core's messages read in full, numbers as JavaScript prints them (Infinity, 1e+300)",
  run: (lib) => {
    const max = Number.MAX_SAFE_INTEGER;
    for (const [options, message] of [
      [{ firstChunkMs: 10, stallMs: Infinity }, `'options.stallMs' must be a finite number of milliseconds greater than 0 and at most ${max}: current value is Infinity`],
      [{ firstChunkMs: 10, stallMs: 0 }, `'options.stallMs' must be a finite number of milliseconds greater than 0 and at most ${max}: current value is 0`],
      [{ firstChunkMs: 1e300, stallMs: 10 }, `'options.firstChunkMs' must be a finite number of milliseconds, 0 or more and at most ${max} (0: the wait has already run out): current value is 1e+300`],
    ]) {
      equal(throws(() => lib.withStallTimeout(new ReadableStream(), options), RangeError).message, message);
    }
  },
});

export default cases;
