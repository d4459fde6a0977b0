// The conformance table (tests/conformance/cases.json) in the JS API: one
// case per row, each mapping its `op` to the API and checking the outcome or
// the error (class, `.param`, `.code`, fields). tests/web/cases/conformance.rs
// runs the same rows through the Rust web API, so a host that answers
// differently fails. The same file runs in Node, Deno, workerd and Chromium.
import table from "../conformance-table.js";
import { AssertionError } from "../assert.js";
import { installFakeTime } from "../fake-time.js";
import { glue, timerMs } from "../../../pkg/main.js";

/** `{ "$": "NaN" }` and friends: the numbers JSON cannot write. */
function decode(value) {
  if (Array.isArray(value)) return value.map(decode);
  if (value !== null && typeof value === "object") {
    if (Object.keys(value).length === 1 && typeof value.$ === "string") {
      const special = { NaN: NaN, Infinity: Infinity, "-Infinity": -Infinity, "-0": -0 }[value.$];
      if (special === undefined) throw new AssertionError(`unknown special value ${value.$}`);
      return special;
    }
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, decode(v)]));
  }
  return value;
}

function show(v) {
  return typeof v === "number" && Object.is(v, -0) ? "-0" : JSON.stringify(v);
}

function same(actual, expected, what) {
  if (!Object.is(actual, expected)) throw new AssertionError(`${what}: expected ${show(expected)}, got ${show(actual)}`);
}

/** `actual` equals `from + offset` for some clock reading `from` in [before, after]. */
function offsetFrom(actual, offset, before, after, what) {
  const eps = 1e-6;
  if (!(actual >= before + offset - eps && actual <= after + offset + eps)) {
    throw new AssertionError(`${what}: expected now + ${offset} (now between ${before} and ${after}), got ${actual}`);
  }
}

/** `*` in `pattern` stands for one number. */
function like(actual, pattern, what) {
  const re = new RegExp(`^${pattern.split("*").map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("[0-9]+(?:\\.[0-9]+)?")}$`);
  if (typeof actual !== "string" || !re.test(actual)) throw new AssertionError(`${what}: expected ${show(pattern)}, got ${show(actual)}`);
}

const now = () => performance.now();

/** The class a host error reports: a branded name, else the built-in constructor's. */
function classOf(e) {
  return e?.edgeDeadlineError ?? e?.name ?? typeof e;
}

/** Checks an error against the row's `error` (class, then every other field it names). */
function checkError(e, expected, what) {
  same(classOf(e), expected.class, `${what}: class (${e?.message})`);
  for (const [key, value] of Object.entries(expected)) {
    if (key === "class") continue;
    if (key === "attempts") same(e.attempts?.length, value, `${what}: attempts`);
    else same(e[key], value, `${what}: .${key}`);
  }
}

/** The row's attempt script as a function: attempt n resolves n ("ok") or fails with that failure. */
function scripted(attempts) {
  let n = 0;
  const fn = async () => {
    const word = attempts[n++];
    if (word === "ok") return n;
    // "retry-after N": a 429 asking for N s, on the error as HTTP clients attach it.
    if (word.startsWith("retry-after ")) {
      const response = new Response(null, { status: 429, headers: { "retry-after": word.slice(12) } });
      throw Object.assign(new Error(`attempt ${n}: 429`), { failure: "not-applied", response });
    }
    // "status N [retry-after S]": the attempt throws a Response (`if (!res.ok) throw res`);
    // "response N": an error carrying one, without a failure word (the default classify reads the status).
    const [kind, status, header, value] = word.split(" ");
    if (kind === "status") throw new Response(null, { status: Number(status), headers: header ? { [header]: value } : {} });
    if (kind === "response") throw Object.assign(new Error(`attempt ${n}: ${status}`), { response: new Response(null, { status: Number(status) }) });
    throw Object.assign(new Error(`attempt ${n}: ${word}`), { failure: word });
  };
  const classify = (e) => e.failure;
  return { fn, classify };
}

function deadlineOf(lib, a) {
  return a.at !== undefined ? lib.Deadline.at(a.at) : lib.Deadline.in(a.inMs);
}

/** Builds an error value as the row describes it, with its `cause` chain. */
function makeError(lib, spec) {
  // `wrappedIn`: that many plain errors around it, each the cause of the next.
  if (spec.wrappedIn > 0) return new Error("wrapper", { cause: makeError(lib, { ...spec, wrappedIn: spec.wrappedIn - 1 }) });
  const cause = spec.cause === undefined ? undefined : { cause: makeError(lib, spec.cause) };
  switch (spec.class) {
    case "DeadlineExceeded":
      return new lib.DeadlineExceeded(5, spec.lateByMs ?? 1, cause);
    case "InsufficientBudget":
      return new lib.InsufficientBudget(spec.remainingMs ?? 3, spec.minMs ?? 10, cause);
    case "StepTimeout":
      return new lib.StepTimeout(spec.step ?? "generate", spec.capMs ?? 100, cause);
    case "InvalidHeader":
      return new lib.InvalidHeader("grpc-timeout", "bad", cause);
    case "StreamStalled":
      return new lib.StreamStalled(spec.phase ?? "stall", spec.afterMs ?? 100, spec.chunks ?? 1, spec.bytes ?? 1, cause);
    case "AttemptTimeout":
      return new lib.AttemptTimeout(spec.attempt ?? 1, spec.timeoutMs ?? 100, cause);
    case "RetryFailed":
      return new lib.RetryFailed("exhausted", "retry stopped", [], cause);
    case "TimeoutError":
      return new DOMException("signal timed out", "TimeoutError");
    case "AbortError":
      return new DOMException("aborted", "AbortError");
    case "Overloaded":
      return new lib.Overloaded(1, 1, cause);
    case "CircuitOpen":
      return new lib.CircuitOpen("inner", "open", 5, 5, "circuit 'inner' is open", cause);
    case "Error":
      return new Error("wrapper", cause);
    default:
      throw new AssertionError(`no such error class in the table: ${spec.class}`);
  }
}

/** The upstream error of a `plan.stream` row's failing sources: URL credentials, an internal host, a key. */
const LEAK = "request to http://user:s3cret@10.0.3.7:8443/v1 failed: key sk-live-abc123";

/** Each op: the JS API call for a row's args; returns the outcome to compare with `expect`. */
const ops = {
  "deadline.at": (lib, a) => lib.Deadline.at(a.instantMs),
  "deadline.in": (lib, a) => lib.Deadline.in(a.ms),
  "deadline.reserve": (lib, a) => lib.Deadline.at(a.at).reserve(a.ms),
  "deadline.min": (lib, a) => lib.Deadline.min(...a.ats.map((at) => lib.Deadline.at(at))),
  "deadline.budget": (lib, a) => ({ value: lib.Deadline.at(a.at).budget(a.preferredMs) }),
  "deadline.step": async (lib, a) => {
    let ran = false;
    await lib.Deadline.at(a.at).step(a.minMs, () => (ran = true));
    return { ran };
  },
  "headers.to": (lib, a) => ({ headers: lib.toHeaders(lib.Deadline.at(a.at), { format: a.formats }) }),
  "headers.from": (lib, a) => {
    const headers = new Headers();
    for (const [name, value] of a.headers) headers.append(name, value);
    const options = { maxMs: a.maxMs };
    if (a.transitMs !== undefined) options.transitMs = a.transitMs;
    const found = lib.deadlineFromHeaders(headers, options);
    return { deadline: found.deadline, source: found.source, rejected: found.rejected.map((r) => ({ header: r.header, code: r.error.code, isInvalidHeader: lib.isInvalidHeader(r.error) })) };
  },
  "caps.forPlatform": (lib, a) => {
    const found = lib.platformDeadline(a);
    return { deadline: found.deadline, bound: found.bound, cpuMs: found.cpuMs, fetchIdleMs: found.fetchIdleMs };
  },
  plan: async (lib, a) => {
    const options = a.marginMs === undefined ? undefined : { marginMs: a.marginMs };
    const p = lib.plan(deadlineOf(lib, a), a.steps, options);
    const results = [];
    for (const name of a.run ?? []) {
      const before = now();
      try {
        let cap;
        const value = await p.run(name, (_signal, budgetMs) => (cap = budgetMs));
        results.push(lib.isSkipped(value) ? { skipped: value.reason } : { capMs: cap, before, after: now() });
      } catch (e) {
        results.push({ error: e });
      }
    }
    return { results, at: p.deadline.at };
  },
  // A streamed plan step: `source` is what `run` gives ("events": an SSE body
  // of two events that ends; "throw"; "status:N": a Response with status N;
  // "error-after": one event, then the body errors). Gives the response's
  // status, its SSE event names, the trace's outcomes and whether `run` ran.
  // An upstream error that must never reach the client (plan.stream rows).
  "plan.stream": async (lib, a) => {
    const enc = new TextEncoder();
    const sse = { "content-type": "text/event-stream" };
    let ran = false;
    const source = () => {
      ran = true;
      if (a.source === "events") return new Response("data: a\n\ndata: b\n\n", { headers: sse });
      if (a.source === "throw") throw new Error(LEAK);
      if (a.source.startsWith("status:")) return new Response("no", { status: Number(a.source.slice(7)) });
      let n = 0;
      // The error comes 10 ms after the event, so the event is read (and sent) first in every host.
      const fail = (c) => new Promise((resolve) => setTimeout(() => resolve(c.error(new Error(LEAK))), 10));
      const body = new ReadableStream({ pull: (c) => (n++ === 0 ? c.enqueue(enc.encode("data: a\n\n")) : fail(c)) });
      return new Response(body, { headers: sse });
    };
    const p = lib.plan(deadlineOf(lib, a), a.steps);
    const res = await p.stream(a.step, source, a.trace === undefined ? undefined : { trace: a.trace });
    const text = await res.text();
    const events = (res.headers.get("content-type") ?? "").startsWith("text/event-stream")
      ? text
          .split("\n\n")
          .filter((b) => b.trim() !== "")
          .map((b) => b.split("\n").find((l) => l.startsWith("event: "))?.slice(7) ?? "message")
          .join()
      : "";
    // The codes the client was told: the fallback's JSON body, or each error event's data.
    let codes = "";
    if (!events && (res.headers.get("content-type") ?? "").startsWith("application/json")) codes = JSON.parse(text).code ?? "";
    else if (events) codes = [...text.matchAll(/event: error\ndata: (.*)\n/g)].map((m) => JSON.parse(m[1]).code).join();
    const leaked = /s3cret|10\.0\.3\.7|sk-live/.test(text);
    return { status: res.status, events, outcomes: p.records.map((r) => r.outcome).join(), ran, codes, leaked };
  },
  retry: async (lib, a) => {
    const { fn, classify } = scripted(a.attempts);
    const options = { deadline: deadlineOf(lib, a) };
    if (!a.defaultClassify) options.classify = classify;
    for (const k of ["attemptMinMs", "attemptTimeoutMs", "backoff", "maxAttempts", "idempotent", "maxRetryAfterMs"]) if (a[k] !== undefined) options[k] = a[k];
    return { value: await lib.retry(fn, options) };
  },
  hedge: async (lib, a) => {
    const { fn } = scripted(a.attempts);
    const options = { deadline: deadlineOf(lib, a), delayMs: a.delayMs };
    if (a.maxAttempts !== undefined) options.maxAttempts = a.maxAttempts;
    return { value: await lib.hedge(fn, options) };
  },
  "budget.new": (lib, a) => {
    new lib.RetryBudget(a).dispose();
    return { ok: true };
  },
  // The event stream's cut with caps (the core's EventCut, through the
  // streamed-read machine as js/resume.js drives it): what reaches the
  // reader, joined, and the refusal's code ("none").
  "resume.cut": (lib, a) => {
    const m = sseMachine(a.maxEventBytes, a.maxLineBytes);
    const enc = new TextEncoder();
    const dec = new TextDecoder();
    let delivered = "";
    let refused = "none";
    const held = new Held();
    try {
      for (const c of a.chunks) {
        const chunk = enc.encode(c);
        // The first action comes with the chunk (with the flag More when more follow: `poll` gives them).
        for (let kind = m.chunk(1, chunk, undefined, NaN, NaN) & glue.ReadFlag.Kind; kind !== Nothing; kind = m.poll()) {
          const bytes = held.apply(kind, m, chunk);
          if (bytes !== undefined) delivered += dec.decode(bytes);
          else if (kind === glue.ReadAction.End && m.ending() === glue.ReadEnding.Failed) {
            const [cls, detail] = m.error();
            refused = cls === "StreamTooLarge" ? detail : `${cls} ${detail}`;
          }
        }
      }
    } finally {
      m.free();
    }
    return { delivered, refused };
  },
  // The ids a stream remembers for checking a resume by id (the core's
  // DeliveredIds, through the machine): after `count` events with distinct
  // ids, whether a resume by id can still be checked.
  "resume.ids": (lib, a) => {
    const m = sseMachine(a.count * 32 + 64, 64);
    try {
      m.chunk(1, new TextEncoder().encode(Array.from({ length: a.count }, (_, i) => `id: ${i + 1}\ndata: x\n\n`).join("")), undefined, NaN, NaN);
      while (m.poll() !== 0);
      return { checkable: m.checkable() };
    } finally {
      m.free();
    }
  },
  // A scripted read (the core's streamed-read machine, src/core/read.rs, through
  // its binding): the script's inputs in, the actions out, one line each
  // (the format of src/core/read/script.rs).
  read: (lib, a) => readScript(a),
  // Which content types the hosts read as an event stream (both ask the core).
  "sse.isEventStream": (lib, a) => ({ answers: a.types.map((t) => glue.isEventStream(t)).join() }),
  // One SSE progress predicate fed `chunks` (as bytes, split as given): which of them are progress.
  "sse.progress": (lib, a) => {
    const isProgress = lib.createSseProgress();
    const enc = new TextEncoder();
    return { progress: a.chunks.map((c) => isProgress(enc.encode(c))).join() };
  },
  "stall.wrap": (lib, a) => {
    const source = new ReadableStream();
    const wrapped = lib.withStallTimeout(source, a);
    wrapped.cancel().catch(() => {}); // a wait of 0 has already errored it
    return { ok: true };
  },
  // A scripted stream: `steps` drive the source ("enqueue" a 16-byte chunk,
  // "close", "error") and a reader of the wrapper ("read", "cancel"),
  // "idle" lets promise reactions run, "snap" records what the reads, the
  // reader's `closed`, the upstream controller and the source have seen.
  "stall.stream": async (lib, a) => {
    const text = (v) => (v instanceof Error ? v.message : String(v));
    let ctrl;
    let source = "open";
    const stream = new ReadableStream({
      start: (c) => void (ctrl = c),
      cancel: (r) => void (source = `cancelled:${text(r)}`),
    });
    const controller = new AbortController();
    const reader = lib.withStallTimeout(stream, { firstChunkMs: a.firstChunkMs, stallMs: a.stallMs, controller }).getReader();
    let closed = "pending";
    reader.closed.then(
      () => (closed = "fulfilled"),
      (e) => (closed = `error:${text(e)}`),
    );
    const reads = [];
    const snaps = [];
    for (const step of a.steps) {
      if (step === "enqueue") ctrl.enqueue(new Uint8Array(16));
      else if (step === "close") ctrl.close();
      else if (step === "error") ctrl.error(new Error("upstream broke"));
      else if (step === "read") {
        const i = reads.push("pending") - 1;
        reader.read().then(
          (r) => (reads[i] = r.done ? "done" : `chunk:${r.value.byteLength}`),
          (e) => (reads[i] = `error:${text(e)}`),
        );
      } else if (step === "cancel") reader.cancel("cancelled").catch(() => {});
      else if (step === "idle") for (let i = 0; i < 50; i++) await null;
      else if (step === "snap") {
        const upstream = controller.signal.aborted ? `aborted:${text(controller.signal.reason)}` : "open";
        snaps.push(`reads:${reads.join(",")};closed:${closed};upstream:${upstream};source:${source}`);
      } else throw new AssertionError(`no stream step named ${step}`);
    }
    return { trace: snaps.join(" | ") };
  },
  // The host delay a wait becomes: js/timers.js `timerMs`, the JS twin of the core's `timer_ms`.
  "timers.timerMs": (lib, a) => ({ value: timerMs(a.ms) }),
  // Deadlines `offsets[i]` ms ahead on fake time, their signals taken in
  // order (each queues a wake-up), those in `cancel` disposed; `value` is the
  // order their signals abort in.
  "timers.order": async (lib, a) => {
    const clock = installFakeTime();
    const deadlines = [];
    try {
      const fired = [];
      for (const [i, ms] of a.offsets.entries()) {
        const d = lib.Deadline.in(ms);
        deadlines.push(d);
        d.signal().addEventListener("abort", () => fired.push(i));
      }
      for (const i of a.cancel ?? []) deadlines[i].dispose();
      await clock.advance(Math.max(...a.offsets) + 1);
      return { value: fired.join() };
    } finally {
      for (const d of deadlines) d.dispose();
      clock.restore();
    }
  },
  "fetch.options": async (lib, a) => {
    const deadline = lib.Deadline.in(100_000);
    try {
      // 127.0.0.1:9 (discard): nothing answers; the options must fail before any I/O.
      await lib.fetchWithDeadline("http://127.0.0.1:9/", undefined, { deadline, ...a });
      return { ok: true };
    } finally {
      deadline.dispose();
    }
  },
  // A breaker's calls on fake time: call i is made `calls[i].at` ms after the
  // start and ends at once with its outcome. `admitted` says what each call
  // met ("closed", "probe", or the refusal's state: "open", "half-open"),
  // `states` each key's state after the last call, in order of first use.
  "breaker.calls": (lib, a) => {
    const clock = installFakeTime();
    let breaker;
    try {
      breaker = new lib.CircuitBreaker(a.options);
      const t0 = clock.now();
      const admitted = [];
      const keys = [];
      for (const c of a.calls) {
        clock.jump(t0 + c.at - clock.now());
        if (!keys.includes(c.key)) keys.push(c.key);
        let permit;
        try {
          permit = breaker.acquire(c.key);
        } catch (e) {
          if (!lib.isCircuitOpen(e)) throw e;
          admitted.push(e.state);
          continue;
        }
        admitted.push(permit.probe ? "probe" : "closed");
        ({ success: () => permit.success(), failure: () => permit.failure(), timeout: () => permit.timeout(), cancel: () => permit.cancel() })[c.outcome]();
      }
      return { admitted: admitted.join(","), states: keys.map((k) => breaker.state(k)).join(",") };
    } finally {
      breaker?.dispose();
      clock.restore();
    }
  },
  // How one call that rejects with the row's error counts, read from the
  // key's counters: "cancel" (nothing counted), "timeout" (a slow failure),
  // "failure", or "success".
  "breaker.outcome": async (lib, a) => {
    const breaker = new lib.CircuitBreaker({ consecutiveFailures: 0 });
    try {
      await breaker.run("k", () => Promise.reject(makeError(lib, a.error))).catch(() => {});
      const s = breaker.stats("k");
      return { outcome: s.calls === 0 ? "cancel" : s.slowCalls > 0 ? "timeout" : s.failures > 0 ? "failure" : "success" };
    } finally {
      breaker.dispose();
    }
  },
  // A limiter fed windows of calls on a clock the op drives: window i's calls
  // start at (i + 1) × 10 000 − rttMs and end at (i + 1) × 10 000, the last
  // started first (with `drop`, as dropped calls); `limits` is the limit
  // after each window, joined with commas.
  "limiter.windows": async (lib, a) => {
    // The package's clock, faked: the limiter reads it once per microtask
    // checkpoint, so each move of the clock is followed by a checkpoint.
    const clock = installFakeTime();
    const turn = () => new Promise((resolve) => resolve()).then(() => {});
    try {
      await turn();
      const t0 = clock.now();
      const limiter = new lib.ConcurrencyLimiter(a.options);
      const limits = [];
      for (const [i, w] of a.windows.entries()) {
        clock.jump(t0 + (i + 1) * 10_000 - w.rttMs - clock.now());
        await turn();
        const permits = [];
        for (let k = 0; k < w.calls; k++) {
          const p = limiter.tryAcquire();
          if (p !== undefined) permits.push(p);
        }
        clock.jump(w.rttMs);
        await turn();
        for (const p of permits.reverse()) (w.drop ? p.drop() : p.release());
        limits.push(limiter.limit);
      }
      return { limits: limits.join(",") };
    } finally {
      clock.restore();
    }
  },
  // A TimeoutBook on fake time, its aggregator answering what the events say:
  // each event, `at` ms after the start, is a table the book reads
  // (`{ table: { bucket: [timeoutMs, floorMs] } }`, nulls allowed), a failed
  // read (`{ fail: true }`), or `timeout(bucket, { fallbackMs })`, whose
  // values make `served`, joined with commas.
  "book.serve": async (lib, a) => {
    const clock = installFakeTime();
    try {
      let answer = null;
      const aggregator = { fetch: async () => (answer === null ? new Response("down", { status: 503 }) : Response.json(answer)) };
      const book = new lib.TimeoutBook({ ...a.options, aggregator, onWarning: () => {} });
      const t0 = clock.now();
      const served = [];
      for (const e of a.events) {
        clock.jump(t0 + e.at - clock.now());
        if (e.table !== undefined || e.fail) {
          const rows = Object.entries(e.table ?? {}).map(([name, [timeoutMs, floorMs, n]]) => [name, { timeoutMs, floorMs, n }]);
          answer = e.fail ? null : { v: 1, q: e.q ?? 0.99, buckets: Object.fromEntries(rows) };
          await book.refresh();
        } else served.push(book.timeout(e.bucket, { fallbackMs: e.fallbackMs }));
      }
      return { served: served.join(",") };
    } finally {
      clock.restore();
    }
  },
  "errors.isTimeout": (lib, a) => ({ value: lib.isTimeout(makeError(lib, a.error)) }),
  "errors.message": (lib, a) => ({ message: makeError(lib, a.error).message }),
};

/** Compares a successful op's outcome with the row's `expect`. */
function checkOutcome(out, expect, before, after, what) {
  const d = out && typeof out.at === "number" && typeof out.remaining === "function" ? out : out?.deadline;
  for (const [key, value] of Object.entries(expect)) {
    switch (key) {
      case "at":
        same(d.at, value, `${what}: at`);
        break;
      case "expired":
        same(d.expired(), value, `${what}: expired()`);
        break;
      case "offsetMs":
        offsetFrom(d.at, value, before, after, `${what}: the instant`);
        break;
      case "headers": {
        same(JSON.stringify(Object.entries(out.headers).sort()), JSON.stringify(Object.entries(value).sort()), `${what}: headers`);
        break;
      }
      case "rejected":
        same(out.rejected.length, value.length, `${what}: rejected count (${JSON.stringify(out.rejected)})`);
        value.forEach((r, i) => {
          same(out.rejected[i].header, r.header, `${what}: rejected[${i}].header`);
          same(out.rejected[i].code, r.code, `${what}: rejected[${i}].code`);
          same(out.rejected[i].isInvalidHeader, true, `${what}: rejected[${i}] is an InvalidHeader`);
        });
        break;
      case "results":
        same(out.results.length, value.length, `${what}: results`);
        value.forEach((r, i) => {
          const got = out.results[i];
          const at = `${what}: run ${i}`;
          if (r.error !== undefined) {
            if (got.error === undefined) throw new AssertionError(`${at}: expected ${r.error}, got ${JSON.stringify(got)}`);
            const { error: cls, ...fields } = r;
            checkError(got.error, { ...fields, class: cls }, at);
          } else if (r.skipped !== undefined) {
            if (got.skipped === undefined) throw new AssertionError(`${at}: expected a skip, got ${got.error ? classOf(got.error) + ": " + got.error.message : JSON.stringify(got)}`);
            like(got.skipped, r.skipped, `${at}: skip reason`);
          } else {
            if (got.capMs === undefined) throw new AssertionError(`${at}: expected it to run, got ${got.error ? classOf(got.error) + ": " + got.error.message : JSON.stringify(got)}`);
            if (r.capMs !== undefined) same(got.capMs, r.capMs, `${at}: cap`);
            // A cap of everything left but `capFromEndMs`: at − now − capFromEndMs, now read inside `run`.
            if (r.capFromEndMs !== undefined) offsetFrom(out.at - r.capFromEndMs - got.capMs, 0, got.before, got.after, `${at}: the cap's end`);
          }
        });
        break;
      case "actions":
        if (JSON.stringify(out.actions) !== JSON.stringify(value)) throw new AssertionError(`${what}: actions: expected ${JSON.stringify(value, null, 1)}, got ${JSON.stringify(out.actions, null, 1)}`);
        break;
      default:
        same(out[key], value, `${what}: ${key}`);
    }
  }
}

/** A streamed-read machine reading an event stream with these caps, no limit in sight. */
function sseMachine(maxEventBytes, maxLineBytes) {
  const run = new glue.RetryRun(1e12, undefined, undefined, 10, 10, 0, undefined, 1, true, undefined, false, 7n);
  const m = new glue.ReadMachine(run, 1e12, undefined, 1e9, 1e9, false, false, maxEventBytes, maxLineBytes);
  m.start(0);
  m.head(0, 200, true, undefined, true, undefined, undefined);
  while (m.poll() !== glue.ReadAction.Nothing);
  return m;
}

const { Nothing, Connect, Abort, Deliver, Wake, DeliverChunk, Keep, Discard, DeliverPieces } = glue.ReadAction;

/**
 * The bytes a host keeps for a ReadMachine (Keep), as src/core/read/script.rs
 * `Held` keeps them: `apply` answers what an action delivers (Deliver,
 * DeliverChunk, DeliverPieces), or undefined.
 */
class Held {
  bytes = new Uint8Array(0);
  apply(kind, m, chunk) {
    if (kind === DeliverChunk) return chunk;
    if (kind === Keep) {
      const all = new Uint8Array(this.bytes.length + chunk.length);
      all.set(this.bytes);
      all.set(chunk, this.bytes.length);
      this.bytes = all;
    } else if (kind === Deliver || kind === Discard || kind === DeliverPieces) {
      const n = m.count();
      const out = this.bytes.subarray(0, n);
      this.bytes = this.bytes.subarray(n);
      if (kind !== Discard) return out;
    }
    return undefined;
  }
}

/** The `read` op: drives a ReadMachine through `a.script`; its actions as lines, and the end's fallback words. */
function readScript(a) {
  const run = new glue.RetryRun(a.deadlineAt, undefined, undefined, a.backoffMs, a.backoffMs, 0, undefined, a.maxAttempts, true, undefined, false, 7n);
  const m = new glue.ReadMachine(run, a.deadlineAt, a.firstByteMs, a.firstChunkMs, a.stallMs, a.fromHeaders ?? false, a.hook ?? false, a.maxEventBytes ?? 1000, a.maxLineBytes ?? 1000);
  const enc = new TextEncoder();
  // A byte-order mark is delivered as a byte of the body, not stripped.
  const dec = new TextDecoder("utf-8", { ignoreBOM: true });
  const actions = [];
  let reason;
  let chunk; // the last chunk given, for a "deliver it as it came" (DeliverChunk)
  const held = new Held();
  let first; // the first action a chunk answers with
  try {
    for (const line of a.script) {
      const [t, verb, ...words] = line.split(" ");
      const now = Number(t);
      const rest = line.slice(t.length + verb.length + 2);
      switch (verb) {
        case "start":
        case "end":
        case "wake":
        case "hold":
        case "cancel":
        case "declined":
          m[verb](now);
          break;
        case "unhold":
          first = m.unhold(now);
          break;
        case "abort":
          m.aborted(now, rest === "deadline");
          break;
        case "chunk":
          chunk = enc.encode(rest);
          first = m.chunk(now, chunk, undefined, NaN, NaN);
          break;
        case "fail":
          m.failed(now, rest, undefined);
          break;
        case "head":
          m.head(now, Number(words[0]), words[1] === "sse", words.length > 2 ? words.slice(2).join(" ") : undefined, words[1] !== "none", undefined, undefined);
          break;
        default:
          throw new AssertionError(`no input ${verb}`);
      }
      const answered = (first ?? m.poll()) & glue.ReadFlag.Kind; // the flags More and Sampling aside
      first = undefined;
      for (let kind = answered; kind !== Nothing; kind = m.poll()) {
        const bytes = held.apply(kind, m, chunk);
        if (bytes !== undefined) actions.push(`deliver ${dec.decode(bytes)}`);
        else if (kind === Keep || kind === Discard) continue;
        else if (kind === Connect) {
          const how = m.how();
          const id = m.lastEventId();
          actions.push(`connect ${m.attempt()} ${how === glue.ReadHow.AsItWas ? "plain" : how === glue.ReadHow.LastEventId ? `id:${id}` : `hook bytes=${m.deliveredBytes()} id=${id ?? "-"}`}`);
        } else if (kind === Abort) actions.push("abort");
        else if (kind === Wake) actions.push(`wake ${m.at() === Infinity ? "none" : m.at()}`);
        else {
          const ending = m.ending();
          const ENDINGS = { [glue.ReadEnding.Done]: "done", [glue.ReadEnding.HandBack]: "hand-back", [glue.ReadEnding.Cancelled]: "cancelled" };
          if (ending !== glue.ReadEnding.Failed) actions.push(`end ${ENDINGS[ending]}`);
          else {
            const [cls, detail, , delivered, status, code, words] = m.error();
            actions.push(`end ${cls} ${detail} bytes=${delivered ?? "-"} ${status} ${code}`);
            reason = words;
          }
        }
      }
    }
  } finally {
    m.free();
  }
  return { actions, reason };
}

function skipOf(row) {
  if (row.hosts !== undefined && !row.hosts.includes("js")) return "a Rust-only row";
  return row.skip?.js;
}

const cases = table.cases.map((row) => ({
  name: `conformance: ${row.name}`,
  skip: skipOf(row),
  run: async (lib) => {
    const args = decode(row.args);
    const op = ops[row.op];
    if (op === undefined) throw new AssertionError(`no op named ${row.op}`);
    const before = now();
    let out;
    try {
      out = await op(lib, args);
    } catch (e) {
      if (row.error === undefined) throw e;
      checkError(e, row.error, row.name);
      return;
    }
    const after = now();
    if (row.error !== undefined) throw new AssertionError(`${row.name}: expected ${row.error.class}, got ${JSON.stringify(out)}`);
    checkOutcome(out, row.expect, before, after, row.name);
  },
}));

export default cases;
