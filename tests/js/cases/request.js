// Request deadline cases: Deadline.forRequest (the earliest of the budget, the
// platform's caps, the caller's headers and the client, and which one won),
// the wire pair (toWire / fromWire) and afterResponse (work after the
// response, cut before the platform's drain cap). The same file runs in Node,
// Deno, workerd and Chromium; the incoming request's own signal in Workers
// (enable_request_signal), service bindings and RPC between two Workers are
// tests/platform/ (real workerd services).
import { setClock } from "../../../pkg/main.js";
import { equal, near, ok, rejects, throwsArg } from "../assert.js";
import { installFakeTime } from "../fake-time.js";

const OWN = "edge-deadline-remaining-ms";
const URL_ = "http://127.0.0.1/x";

const cases = [
  {
    name: "forRequest: the earliest of budget, platform cap and caller's header wins, and limit names it; a header never extends it",
    run: (lib) => {
      const { Deadline } = lib;
      const budget = Deadline.forRequest(new Request(URL_), undefined, { budgetMs: 8_000 });
      near(budget.remaining(), 8_000, 50);
      equal(budget.limit, "budget");
      const caller = Deadline.forRequest(new Request(URL_, { headers: { [OWN]: "500" } }), undefined, { budgetMs: 8_000 });
      near(caller.remaining(), 500, 50);
      equal(caller.limit, "caller");
      const longer = Deadline.forRequest(new Request(URL_, { headers: { "grpc-timeout": "60S" } }), undefined, { budgetMs: 2_000 });
      near(longer.remaining(), 2_000, 50, "a caller shortens, never extends");
      equal(longer.limit, "budget");
      const platform = Deadline.forRequest({ headers: {} }, undefined, { budgetMs: 60_000, platform: "vercel-edge", fallbackReserveMs: 1_000 });
      near(platform.remaining(), 24_000, 50, "Vercel's 25 s first-byte cap, less the reserve");
      equal(platform.limit, "platform");
      // Workers' fetch has no wall-clock cap: without a budget only the caller (and the client) bound it.
      const workers = Deadline.forRequest({ headers: { "connect-timeout-ms": "300" } }, undefined, { platform: "cloudflare-workers" });
      near(workers.remaining(), 300, 50);
      equal(workers.limit, "caller");
      // A malformed header is the caller's mistake: ignored, never an error.
      const bad = Deadline.forRequest(new Request(URL_, { headers: { [OWN]: "soon" } }), undefined, { budgetMs: 900 });
      near(bad.remaining(), 900, 50);
      equal(bad.limit, "budget");
      // A reserve larger than what the caller left: an expired deadline that says why, not an error.
      const short = Deadline.forRequest(new Request(URL_, { headers: { [OWN]: "50" } }), undefined, { budgetMs: 8_000, fallbackReserveMs: 300 });
      ok(short.expired());
      const reason = short.signal().reason;
      ok(lib.isDeadlineExceeded(reason));
      equal(reason.reserveMs, 300);
      equal(reason.limit, "caller");
      for (const d of [budget, caller, longer, platform, workers, bad, short]) d.dispose();
    },
  },
  {
    name: "forRequest: a spent caller ('0 ms left') read a clock tick before the fold is an expired deadline named caller, never a RangeError",
    run: (lib) => {
      // A clock that ticks 1 ms at every reading: the headers and the fold see different instants (workerd's clock ticks in whole ms).
      let t = 10_000;
      const previous = setClock({ now: () => ++t, setTimeout: (fn, ms) => setTimeout(fn, ms), clearTimeout: (id) => clearTimeout(id) });
      try {
        const spent = lib.Deadline.forRequest(new Request(URL_, { headers: { [OWN]: "0" } }), undefined, { budgetMs: 1_500 });
        ok(spent.expired());
        equal(spent.limit, "caller");
        spent.dispose();
      } finally {
        setClock(previous);
      }
    },
  },
  {
    name: "forRequest follows request.signal: the client leaving aborts the deadline with the client's reason; a client already gone is a shortage",
    run: async (lib) => {
      const { Deadline } = lib;
      const client = new AbortController();
      const request = new Request(URL_, { signal: client.signal });
      const d = Deadline.forRequest(request, undefined, { budgetMs: 5_000 });
      const signal = d.signal();
      ok(!signal.aborted);
      equal(d.limit, "budget");
      const why = new Error("the client left");
      client.abort(why);
      await null;
      ok(signal.aborted, "aborted when the client left");
      equal(signal.reason?.message ?? String(signal.reason), "the client left");
      equal(d.limit, "client");
      await rejects(d.step(10, async () => "ran"), undefined, /client left/);
      d.dispose();

      const gone = new AbortController();
      gone.abort(new Error("gone already"));
      const late = Deadline.forRequest(new Request(URL_, { signal: gone.signal }), undefined, { budgetMs: 5_000 });
      ok(late.expired(), "a client already gone: nothing left");
      equal(late.limit, "client");
      ok(late.signal().aborted);
      late.dispose();

      const off = new AbortController();
      const unlinked = Deadline.forRequest(new Request(URL_, { signal: off.signal }), undefined, { budgetMs: 5_000, requestSignal: false });
      off.abort();
      await null;
      ok(!unlinked.signal().aborted, "requestSignal: false does not follow the client");
      unlinked.dispose();
    },
  },
  {
    name: "forRequest: ctx with a completed promise (Deno's info) disposes the deadline when the response is done",
    run: async (lib) => {
      const clock = installFakeTime();
      try {
        let done;
        const completed = new Promise((resolve) => (done = resolve));
        const d = lib.Deadline.forRequest(new Request(URL_), { completed }, { budgetMs: 1_000 });
        const signal = d.signal();
        equal(clock.pending(), 1, "the deadline's wake-up is armed");
        done();
        await clock.advance(2_000);
        ok(!signal.aborted, "disposed when the response completed: it never fires");
        equal(clock.pending(), 0, "and nothing is left armed");
      } finally {
        clock.restore();
      }
    },
  },
  {
    name: "forRequest: bad options are TypeErrors/RangeErrors naming the option",
    run: (lib) => {
      const { Deadline } = lib;
      const req = new Request(URL_);
      throwsArg(() => Deadline.forRequest(null, undefined, { budgetMs: 1 }), TypeError, "request", "INVALID_TYPE");
      throwsArg(() => Deadline.forRequest(req, undefined, undefined), TypeError, "options", "INVALID_TYPE");
      throwsArg(() => Deadline.forRequest(req, undefined, {}), TypeError, "options", "MISSING_OPTION");
      throwsArg(() => Deadline.forRequest(req, undefined, { budgetMs: NaN }), RangeError, "options.budgetMs", "NOT_FINITE");
      throwsArg(() => Deadline.forRequest(req, undefined, { budgetMs: "8000" }), TypeError, "options.budgetMs", "INVALID_TYPE");
      throwsArg(() => Deadline.forRequest(req, undefined, { budgetMs: 1, platform: "lambda" }), RangeError, "options.platform", "UNKNOWN_PLATFORM");
      throwsArg(() => Deadline.forRequest(req, undefined, { budgetMs: 1, transitMs: -1 }), RangeError, "options.transitMs", "NEGATIVE");
      throwsArg(() => Deadline.forRequest(req, undefined, { budgetMs: 1, fallbackReserveMs: Infinity }), RangeError, "options.fallbackReserveMs", "NOT_FINITE");
      throwsArg(() => Deadline.forRequest(req, undefined, { budgetMs: 1, requestSignal: "yes" }), TypeError, "options.requestSignal", "INVALID_TYPE");
    },
  },
  {
    name: "toWire/fromWire: remaining ms (rounded down), the reserve and the limit survive JSON; the receiver caps it like a header",
    run: async (lib) => {
      const { Deadline } = lib;
      const clock = installFakeTime();
      try {
        const sender = Deadline.in(1_000.7).reserve(200);
        const wire = JSON.parse(JSON.stringify(sender.toWire()));
        equal(JSON.stringify(wire), JSON.stringify({ remainingMs: 800, reserveMs: 200, limit: "budget" }));
        const received = Deadline.fromWire(wire, { maxMs: 5_000 });
        equal(received.remaining(), 800);
        equal(received.limit, "budget");
        const capped = Deadline.fromWire(wire, { maxMs: 300 });
        equal(capped.remaining(), 300, "never later than maxMs");
        equal(Deadline.fromWire(wire, { maxMs: 5_000, transitMs: 30 }).remaining(), 770);
        // Every limit crosses as itself (the names' order matches the core's).
        for (const limit of ["budget", "platform", "caller", "background"]) {
          const d = Deadline.fromWire({ remainingMs: 100, reserveMs: 0, limit }, { maxMs: 1_000 });
          equal(d.limit, limit);
          equal(d.remaining(), 100);
        }
        // A sender whose client left, or a spent wire: expired, not an error.
        const gone = Deadline.fromWire({ remainingMs: 500, reserveMs: 0, limit: "client" }, { maxMs: 1_000 });
        ok(gone.expired());
        equal(gone.limit, "client");
        const spent = Deadline.fromWire({ remainingMs: 0, reserveMs: 300, limit: "caller" }, { maxMs: 1_000 });
        ok(spent.expired());
        const reason = spent.signal().reason;
        ok(lib.isDeadlineExceeded(reason));
        equal(reason.reserveMs, 300, "the sender's reserve explains why nothing was left");
        // A deadline sent after it passed carries 0.
        const late = Deadline.in(10);
        await clock.advance(20);
        equal(late.toWire().remainingMs, 0);
        // The wire is read when received, counted from then: time in transit is the receiver's transitMs.
        const d = Deadline.fromWire(wire, { maxMs: 5_000 });
        await clock.advance(100);
        equal(d.remaining(), 700);
        for (const x of [sender, received, capped, gone, spent, late, d]) x.dispose();
      } finally {
        clock.restore();
      }
    },
  },
  {
    name: "fromWire: bad input is a TypeError/RangeError naming the field; toWire of a deadline whose client left says so",
    run: async (lib) => {
      const { Deadline } = lib;
      const good = { remainingMs: 100, reserveMs: 0, limit: "budget" };
      throwsArg(() => Deadline.fromWire(null, { maxMs: 1 }), TypeError, "wire", "INVALID_TYPE");
      throwsArg(() => Deadline.fromWire({ ...good, remainingMs: "5" }, { maxMs: 1 }), TypeError, "wire.remainingMs", "INVALID_TYPE");
      throwsArg(() => Deadline.fromWire({ ...good, remainingMs: NaN }, { maxMs: 1 }), RangeError, "wire.remainingMs", "NOT_FINITE");
      throwsArg(() => Deadline.fromWire({ ...good, reserveMs: -1 }, { maxMs: 1 }), RangeError, "wire.reserveMs", "NEGATIVE");
      throwsArg(() => Deadline.fromWire({ ...good, limit: "soon" }, { maxMs: 1 }), RangeError, "wire.limit", "UNKNOWN_VALUE");
      throwsArg(() => Deadline.fromWire({ ...good, limit: 3 }, { maxMs: 1 }), RangeError, "wire.limit", "UNKNOWN_VALUE");
      // A limit is one of the names only: not a number's text, another spelling or an Object property.
      for (const limit of ["0", "4", "Budget", "toString", "__proto__", "constructor", ""]) {
        throwsArg(() => Deadline.fromWire({ ...good, limit }, { maxMs: 1 }), RangeError, "wire.limit", "UNKNOWN_VALUE");
      }
      throwsArg(() => Deadline.fromWire(good), TypeError, "options", "INVALID_TYPE");
      throwsArg(() => Deadline.fromWire(good, { maxMs: -1 }), RangeError, "options.maxMs", "NEGATIVE");
      throwsArg(() => Deadline.fromWire(good, { maxMs: 1, transitMs: "1" }), TypeError, "options.transitMs", "INVALID_TYPE");
      const client = new AbortController();
      const d = Deadline.in(5_000, client.signal);
      client.abort();
      equal(d.toWire().limit, "client");
      ok(Deadline.fromWire(d.toWire(), { maxMs: 5_000 }).expired(), "the receiver of a departed client's wire has nothing");
    },
  },
  {
    name: "afterResponse: the work starts when the body has been sent, under a deadline cut marginMs before the drain cap, with limit background",
    run: async (lib) => {
      const clock = installFakeTime();
      try {
        const waited = [];
        const ctx = { waitUntil: (p) => waited.push(p) };
        const log = [];
        const body = new ReadableStream({
          start(c) {
            c.enqueue(new TextEncoder().encode("hello"));
            c.close();
          },
        });
        const response = lib.afterResponse(ctx, new Response(body, { status: 201, headers: { "x-a": "1" } }), async (deadline) => {
          log.push(["start", deadline.remaining(), deadline.limit]);
          const reason = await new Promise((resolve) => deadline.signal().addEventListener("abort", () => resolve(deadline.signal().reason)));
          log.push(["cut", reason.name, reason.limit]);
          throw reason; // work that stops on the cut rejects with it; that is not an error of the response
        });
        equal(waited.length, 1, "registered with waitUntil at once");
        equal(response.status, 201);
        equal(response.headers.get("x-a"), "1");
        await clock.advance(5_000);
        equal(log.length, 0, "nothing runs before the response has been sent");
        equal(await response.text(), "hello");
        await clock.advance(0);
        equal(JSON.stringify(log), JSON.stringify([["start", 29_000, "background"]]), "Workers: 30 s after the response, less the 1 s margin");
        await clock.advance(28_999);
        equal(log.length, 1);
        await clock.advance(1);
        equal(JSON.stringify(log[1]), JSON.stringify(["cut", "DeadlineExceeded", "background"]));
        equal(await waited[0], undefined, "the waitUntil promise settles when the work is cut");
        equal(clock.pending(), 0, "no timer left");
      } finally {
        clock.restore();
      }
    },
  },
  {
    name: "afterResponse: no body starts at once; a cancelled body (client left) starts it; work that ignores the signal is let go at the cut",
    run: async (lib) => {
      const clock = installFakeTime();
      try {
        const waited = [];
        const ctx = { waitUntil: (p) => waited.push(p) };
        let started = 0;
        const none = lib.afterResponse(ctx, new Response(null, { status: 204 }), () => started++, { platform: "custom", caps: { wallMs: 500 }, marginMs: 100 });
        equal(none.status, 204);
        await clock.advance(0);
        equal(started, 1);
        await waited[0];
        let seen;
        const cancelled = lib.afterResponse(ctx, new Response(new ReadableStream({ pull() {} })), (d) => {
          seen = d.remaining();
          return new Promise(() => {}); // never settles, never reads its signal
        }, { platform: "custom", caps: { wallMs: 500 }, marginMs: 100 });
        await cancelled.body.cancel("client left");
        await clock.advance(0);
        equal(seen, 400);
        let settled = false;
        waited[1].then(() => (settled = true));
        await clock.advance(399);
        ok(!settled);
        await clock.advance(1);
        ok(settled, "let go at the cut, before the platform's kill");
        equal(clock.pending(), 0);
        const early = lib.afterResponse(ctx, new Response("x"), async () => "flushed", { budgetMs: 50 });
        await early.text();
        await clock.advance(0);
        await waited[2];
        equal(clock.pending(), 0, "work done early: the deadline is disposed");
      } finally {
        clock.restore();
      }
    },
  },
  {
    name: "afterResponse: bad input throws at once (TypeError/RangeError naming it), not after the response",
    run: (lib) => {
      const ctx = { waitUntil() {} };
      const r = () => new Response("x");
      throwsArg(() => lib.afterResponse(undefined, r(), () => {}), TypeError, "ctx", "INVALID_TYPE");
      throwsArg(() => lib.afterResponse({}, r(), () => {}), TypeError, "ctx.waitUntil", "INVALID_TYPE");
      throwsArg(() => lib.afterResponse(ctx, "x", () => {}), TypeError, "response", "INVALID_TYPE");
      throwsArg(() => lib.afterResponse(ctx, r(), null), TypeError, "work", "INVALID_TYPE");
      throwsArg(() => lib.afterResponse(ctx, r(), () => {}, { marginMs: -1 }), RangeError, "options.marginMs", "NEGATIVE");
      throwsArg(() => lib.afterResponse(ctx, r(), () => {}, { platform: "vercel-edge" }), RangeError, "options.trigger", "UNSUPPORTED_TRIGGER");
    },
  },
];

export default cases;
