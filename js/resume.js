// Streams that recover: the attempts behind one streamed body, for `relay`
// and `fetchWithDeadline` with `retry` (and `resume`).
//
// Every decision is the core's streamed-read machine (src/core/read.rs
// `Read`, through src/wasm/read.rs `ReadMachine`; its module doc lists the
// machine's invariants): where an event ends and what reached the reader,
// which chunks are progress, when an attempt has stalled, whether a failed
// attempt is made again and how (as it was, with `Last-Event-ID`, through
// the caller's hook, or not at all, inside the deadline, the retry loop and
// the retry budget), whether a resumed answer may continue the stream, and
// the reader's error when the read ends. This file only tells the machine
// what happened and does what it asks: the attempts' requests (each with a
// child node of its own, so its own signal), the body's reader, one timer,
// the bytes the machine asks it to keep (an unfinished event: the machine
// counts them, so they are held once, here), the pieces waiting for the
// reader, and the errors the package throws.
//
// # The per-chunk path
// The upstream is read only when the reader reads (no read ahead). The
// common chunk is one `then` on the attempt's read, two clock reads (when
// the reader came back, when the chunk came) and one Wasm call with the
// chunk's bytes (`chunk`), which also carries the time the reader kept the
// last piece (a hold, so reader slowness is not a stall) and answers its
// first action, whether more follow and whether the stall watcher samples
// (a burst: then the chunk's own clock read is skipped until any other
// input, and the reader's instant stands for it, as src/core/read.rs
// allows). A chunk of whole events, or any chunk of another body, is handed
// on as it came, with no other call. A hold not told with a chunk is told
// before any other input (`tell`). Anything else (several pieces, a failure,
// the end, a backoff, a budget to lend) takes `slowRead`.
//
// # Invariants (the host's; the machine's are in src/core/read.rs)
// 1. One machine per read, one timer (the `outer` child, re-armed on each
//    `Wake`), one child node per attempt (aborted when the machine says
//    `Abort`: with the attempt's own failure, a `StreamStalled`, the cancel's
//    reason or the deadline's, so its request is released, not abandoned).
// 2. An attempt's answer that comes after it was dropped is not read: its
//    body is cancelled.
// 3. A read awaiting an attempt, a hook, a backoff or a body keeps a Node or
//    Deno process alive (js/keepalive.js: every timer of the package is
//    unref'd and someone awaits the read); the hold is let go when the read
//    ends, or at the next wake once nobody reads.
// 4. The reader's error is built from the machine's ending (its class,
//    detail, message and `deliveredBytes`): `StreamStalled`, `StreamTooLarge`,
//    `RetryFailed` with the last attempt's error as its `cause`, and before
//    the body the last attempt's error as it is (an `UpstreamStatus`, a
//    `ResumeRefused`, the upstream's own error); the deadline's
//    `DeadlineExceeded` and the caller's abort reason as they are.
// 5. With tracing on, each attempt's body has one `deadline.stream` span
//    (js/stall.js `streamSpan`), numbered, from its headers to its end.

import { concat } from "./bytes.js";
import * as core from "./edge_deadline.js";
import { argumentError, CODES, DeadlineExceeded, isDeadlineExceeded, RetryFailed, StreamStalled } from "./errors.js";
import { propagateFormats } from "./headers.js";
import { hold, releaseHold } from "./keepalive.js";
import { tracing } from "./otel.js";
import { classified, defaultClassify, newRun, serverWait } from "./retry.js";
import { retryBudgetCore } from "./retry_budget.js";
import { failure as outcomeOf, isEventStream, predicate, streamEnded, streamSpan } from "./stall.js";
import { child, now } from "./timers.js";
import * as check from "./validate.js";

/** The codes of a stream refused past a cap (the core's `CutRefusal`). */
const LINE_TOO_LONG = "LINE_TOO_LONG";
const NO_LIMIT = Number.MAX_SAFE_INTEGER;
const encoder = new TextEncoder();
const noop = () => {};

// The machine's actions (src/wasm/read.rs `poll`), a first action's parts (a chunk's answer) and a connect's ways, named by the core.
const { Nothing: NOTHING, Connect: CONNECT, Abort: ABORT, Deliver: DELIVER, Wake: WAKE, End: END, DeliverChunk: DELIVER_CHUNK, Keep: KEEP, Discard: DISCARD, DeliverPieces: DELIVER_PIECES } = core.ReadAction;
const { Kind: KIND, More: MORE, Sampling: SAMPLING } = core.ReadFlag; // a chunk is not timed while the watcher samples
const { HandBack: HAND_BACK, Cancelled: CANCELLED, Failed: FAILED } = core.ReadEnding;
const BY_HOOK = core.ReadHow.Hook;

let utf8HeadersSeen;
/** Whether this runtime's `Headers` take any text and send it as UTF-8 (workerd), not a ByteString only. */
function utf8Headers() {
  if (utf8HeadersSeen === undefined) {
    try {
      new Headers({ "x-probe": "\u20ac" });
      utf8HeadersSeen = true;
    } catch {
      utf8HeadersSeen = false;
    }
  }
  return utf8HeadersSeen;
}

/**
 * A last event id as a `Last-Event-ID` header value that goes out as its
 * UTF-8 bytes, as EventSource sends it: where `Headers` takes a ByteString
 * (Node, Deno, browsers) one character per byte, where it takes any text
 * and sends it as UTF-8 (workerd) the text.
 */
function lastEventIdHeader(id) {
  return utf8Headers() ? id : byteString(encoder.encode(id));
}

/** Bytes as a string of one character per byte (no spread: an id may be longer than the stack allows). */
function byteString(bytes) {
  let out = "";
  for (let k = 0; k < bytes.length; k += 8192) out += String.fromCharCode.apply(null, bytes.subarray(k, k + 8192));
  return out;
}

/** A non-ok answer, as the error `classify` sees (with `.response` and `.status`). */
export class UpstreamStatus extends Error {
  constructor(response) {
    super(`the upstream answered ${response.status}${response.statusText ? ` ${response.statusText}` : ""}`);
    this.name = "UpstreamStatus";
    this.status = response.status;
    this.response = response;
  }
}

/**
 * A resumed attempt's ok answer that cannot continue the stream (the core's
 * `resumeRefusal`): `.code` `not-event-stream` (a resume by id that got no
 * event stream), `not-partial` (a byte range's continuation that is not a
 * 206) or `range-mismatch` (a 206 that starts elsewhere); `.status` its status.
 */
export class ResumeRefused extends Error {
  constructor(code, status) {
    super(`the resumed answer (${status}) cannot continue the stream: ${code}`);
    this.name = "ResumeRefused";
    this.code = code;
    this.status = status;
  }
}

/**
 * Checks a stream's `retry` and `resume` options (types here, ranges in the
 * core) and returns a factory for one read, or `undefined` when neither is
 * given. `where` names the API in errors.
 */
export function resumeOptions(o, where) {
  const maxEvent = cap("options.maxEventBytes", o.maxEventBytes, false);
  const maxLine = cap("options.maxLineBytes", o.maxLineBytes, true);
  if ((o.retry === undefined || o.retry === false) && o.resume === undefined) return undefined;
  const r = o.retry === undefined || o.retry === true ? {} : check.obj("options.retry", o.retry, "true or an object like { attemptMinMs, maxAttempts, backoff }");
  if (r.attemptTimeoutMs !== undefined) {
    throw argumentError("type", CODES.INVALID_TYPE, "options.retry.attemptTimeoutMs", `'options.retry.attemptTimeoutMs' does not apply to a stream (${where}): its attempts are bounded by firstByteMs, firstChunkMs, stallMs and the deadline`);
  }
  const hook = o.resume === undefined ? undefined : check.fn("options.resume", o.resume, "a function ({ chunks, bytes, lastEventId, attempt, signal }) => Response | Promise<Response> | undefined");
  if (o.deadline === undefined) throw check.typeError("options.deadline", "a Deadline: a stream's retries live inside one", o.deadline);
  // Validated now (a bad option is the call's error); each read gets its own loop.
  newRun("options.retry", r, o.deadline.at, true).run.free();
  return { r, hook, maxEvent, maxLine };
}

/** A cap option (`maxEventBytes`, or `maxLineBytes` when `line`): checked by the core, which gives its default when not given. */
function cap(param, value, line) {
  if (value !== undefined) check.number(param, value, "a whole number of bytes");
  return core.resumeCap(line, value);
}

/**
 * An event stream refused past a cap (the core's `CutRefusal`): `.code`
 * `EVENT_TOO_LARGE` (an event longer than `maxEventBytes`) or
 * `LINE_TOO_LONG` (a line longer than `maxLineBytes`), `.maxBytes` the cap.
 */
export class StreamTooLarge extends Error {
  constructor(code, maxBytes) {
    super(core.resumeCapMessage(code === LINE_TOO_LONG, maxBytes));
    this.name = "StreamTooLarge";
    this.code = code;
    this.maxBytes = maxBytes;
  }
}

/**
 * One resumable read. `connect(signal, { attempt, lastEventId, headers })`
 * makes an attempt's request; `s` holds the checked options (`deadline`,
 * `signal`, `signal2`, `firstByteMs`, `firstChunkMs`, `stallMs`,
 * `isProgress`, `otel` (each attempt's stream is traced as one without
 * `retry`), `retry` from {@link resumeOptions}; `fromHeaders`: the
 * first-chunk limit counts from each attempt's headers, as
 * `fetchWithDeadline`'s does, not from its start, as a relay's does). `head()` resolves to the first attempt's
 * answer that will be read (`{ response }`), or to a non-ok answer handed
 * back as it is (`{ response, final: true }`), and rejects when no attempt
 * got that far; `read()` then gives the reader's chunks.
 */
export function resumable(connect, s) {
  const { deadline, retry } = s;
  const { run, classify: given, budget } = newRun("options.retry", retry.r, deadline.at, true);
  // The caller's classify; left out, a non-ok answer is the core's (`status_failure`) and any other error retry's.
  const userClassify = retry.r.classify === undefined ? undefined : given;
  const hook = retry.hook;
  const formats = s.formats ?? propagateFormats(undefined);
  const t = tracing(s.otel);
  const m = new core.ReadMachine(run, deadline.at, s.firstByteMs, s.firstChunkMs, s.stallMs, s.fromHeaders === true, hook !== undefined, retry.maxEvent, retry.maxLine);
  // The shared retry budget's core, looked up at each use (a disposed budget throws there).
  const b = budget === undefined ? undefined : () => retryBudgetCore(budget);
  // The one timer, and what everything hangs from: the deadline (and its parents), the caller's signal (and a Request's).
  const outer = child([deadline, s.signal, s.signal2], Infinity, { onTime: onWake, onAbort: onOuterAbort });
  let cur; // the attempt: { n, node, response, reader, isProgress, span, chunks, bytes, sse }
  let attempts = 0;
  let lastError; // the last failed attempt's error
  let reported; // the error the host just reported (a Failed input)
  let chunk; // the chunk just given to the machine (DELIVER_CHUNK hands it on)…
  let chunkBytes; // …as bytes (KEEP holds them)
  const held = []; // the bytes kept (KEEP), in order, taken by DELIVER and DISCARD
  const queue = []; // pieces for the reader…
  const pieceAttempts = []; // …and the attempt each came from
  let pieceFrom = 0; // the attempt of the piece read() gave last
  const kept = hook === undefined ? undefined : [];
  let head; // the first answer read
  let handBack; // a non-ok (or bodiless) first answer to hand back as it is
  let ended = false; // the machine ended: `failure` is the reader's error, or none (done)
  let failure;
  let freed = false;
  let closed = false;
  // The reader keeps the piece it got last from `heldAt` (the upstream is not read meanwhile) until it
  // reads again at `heldTo`: told to the machine with the next chunk, or before any other input.
  let heldAt;
  let heldTo;
  let told = false; // the hold was told alone: its end is told when the reader reads again
  let sampling = false; // the last chunk's answer said the watcher samples, and no other input came since
  let waiting = false; // a read awaits: hold the process (invariant 3)
  let holding = false;
  let notify; // wakes a read that awaits a change
  let endAbort; // the reason the attempt is aborted with when the read ends failed
  let cancelReason; // a cancel's, or the host's own error that ends the read
  let contentSeen = false; // content reached the reader (kept when the machine is freed)
  let lent; // the retry budget's core while it is lent

  if (outer.aborted) onOuterAbort(outer.reason);
  else {
    if (lend()) {
      m.start(now());
      giveBack();
      act(NOTHING, "start");
    }
  }

  /**
   * Lends the shared retry budget to the machine for an input that may
   * start or retry an attempt (src/wasm/read.rs); `giveBack` after it. False
   * when the budget was disposed: the read ended with its error (a retry
   * using a disposed budget throws), and the input is not given.
   */
  function lend() {
    if (b === undefined) return true;
    try {
      lent = b();
    } catch (error) {
      stop(error);
      return false;
    }
    m.lend(lent);
    return true;
  }
  function giveBack() {
    if (lent === undefined) return;
    m.giveBack(lent);
    lent = undefined;
  }

  /** Tells the machine of a hold not told yet (before any input but a chunk, which carries it). */
  function tell() {
    if (heldAt === undefined || ended) return;
    const from = heldAt;
    const to = heldTo;
    heldAt = heldTo = undefined;
    m.hold(from);
    if (to === undefined) told = true;
    else if (lend()) {
      const first = m.unhold(to);
      giveBack();
      act(first, "unhold");
    }
  }

  /** Invariant 3. */
  function keep() {
    const on = waiting && !ended && !closed;
    if (on === holding) return;
    holding = on;
    if (on) hold();
    else releaseHold();
  }

  function changed() {
    const n = notify;
    notify = undefined;
    n?.();
  }

  function onWake() {
    if (ended) return;
    tell();
    if (ended || !lend()) return;
    m.wake(now());
    giveBack();
    act(NOTHING, "wake");
    keep();
  }

  function onOuterAbort(reason) {
    if (ended) return;
    m.aborted(now(), isDeadlineExceeded(reason) && reason.at === deadline.at);
    act(NOTHING, "aborted");
  }

  /**
   * Does what the machine asks after an input (`why`: which, for an abort's
   * reason); `first`: the first action when the call answered it (NOTHING: poll).
   * An abort's reason is known once the whole answer is read: the
   * cancel's, the ending's, or the attempt's own failure.
   */
  function act(first, why) {
    if (why !== "chunk") sampling = false;
    let abort = false;
    let connectTo;
    let end;
    // `first` may carry MORE: more actions follow (without it, none does: no `poll` needed).
    const more = first === NOTHING || (first & MORE) !== 0;
    for (let kind = first === NOTHING ? m.poll() : first & KIND; kind !== NOTHING; kind = more ? m.poll() : NOTHING) {
      if (kind === DELIVER_CHUNK) give(chunk);
      else if (kind === KEEP) held.push(chunkBytes);
      else if (kind === DELIVER) give(concat(takeHeld(m.count())));
      else if (kind === DELIVER_PIECES) for (const piece of takeHeld(m.count())) give(piece);
      else if (kind === DISCARD) takeHeld(m.count());
      else if (kind === WAKE) outer.rearm(m.at());
      else if (kind === ABORT) abort = true;
      else if (kind === CONNECT) connectTo = [m.attempt(), m.how(), m.lastEventId()];
      else if (kind === END) end = ending(why);
    }
    if (abort && cur !== undefined) {
      const reason = end === CANCELLED ? cancelReason : end === FAILED ? endAbort : attemptError(why);
      const a = cur;
      cur = undefined;
      drop(a, reason, end);
    }
    if (end !== undefined) finish();
    else if (connectTo !== undefined) launch(connectTo[0], connectTo[1], connectTo[2]);
    changed();
  }

  /** The next `n` bytes kept, as the pieces they were read in (the last one cut where `n` ends). */
  function takeHeld(n) {
    let i = 0;
    let rest = n;
    while (i < held.length && held[i].byteLength <= rest) rest -= held[i++].byteLength;
    const pieces = held.splice(0, i);
    if (rest > 0 && held.length > 0) {
      pieces.push(held[0].subarray(0, rest));
      held[0] = held[0].subarray(rest);
    }
    return pieces;
  }

  /** A piece for the reader. */
  function give(piece) {
    queue.push(piece);
    pieceAttempts.push(attempts);
    if (kept !== undefined) kept.push(piece);
  }

  /** The error the current attempt failed with (invariant 1), from the input `why` and the machine's cause; remembered as the last. */
  function attemptError(why) {
    if (why === "failed") return (lastError = reported);
    if (why === "wake" || why === "unhold" || why === "head") {
      const [kind, detail, afterMs, chunks, bytes, status] = m.cause();
      if (kind === "stalled") lastError = new StreamStalled(detail, afterMs, chunks, bytes);
      else if (kind === "status" && why === "head") lastError = new UpstreamStatus(cur.response);
      else if (kind === "refused" && why === "head") lastError = new ResumeRefused(detail, status);
    }
    // Else a replayed resume: the failure that led to it stands.
    return lastError;
  }

  /** The read ended: the reader's error from the machine's (invariant 4). Answers the `core.ReadEnding`. */
  function ending(why) {
    ended = true;
    const e = m.ending();
    if (e === HAND_BACK) handBack = cur?.response;
    if (e !== FAILED) return e;
    const [cls, detail, message, delivered] = m.error();
    let error;
    if (cls === "DeadlineExceeded") error = endAbort = deadlineError();
    else if (cls === "AbortError") error = endAbort = outer.reason;
    else if (cls === "StreamTooLarge") error = endAbort = new StreamTooLarge(detail, detail === LINE_TOO_LONG ? retry.maxLine : retry.maxEvent);
    else {
      // The attempt that failed last: this one, when the ending came with its failure.
      const last = cur !== undefined ? attemptError(why) : lastError;
      endAbort = last;
      error = cls === "RetryFailed" ? new RetryFailed(detail, message, m.records(), last === undefined ? undefined : { cause: last }) : last;
    }
    if (delivered !== undefined && error !== null && typeof error === "object") error.deliveredBytes = delivered;
    failure = error;
    return FAILED;
  }

  /** The deadline's own error when it has one, else ours for its instant. */
  function deadlineError() {
    if (outer.aborted && isDeadlineExceeded(outer.reason)) return outer.reason;
    const t1 = now();
    return new DeadlineExceeded(deadline.at, t1 > deadline.at ? t1 - deadline.at : 0);
  }

  /** Ends attempt `a`: its request aborted with `reason`, its body cancelled, its span ended. */
  function drop(a, reason, end) {
    if (a.span !== undefined) {
      const outcome = end === CANCELLED ? "cancelled" : reason === outer.reason && outer.aborted ? outcomeOf(reason, outer) : outcomeOf(reason, undefined);
      streamEnded(t, a.span, outcome, reason, a.chunks, a.bytes, a.n);
      a.span = undefined;
    }
    if (!a.node.aborted) a.node.abort(reason);
    if (a.reader !== undefined) a.reader.cancel(reason).catch(noop);
    else if (a.response !== undefined && a.response !== handBack) a.response.body?.cancel(reason).catch(noop);
    a.node.dispose();
  }

  /** The machine ended: the timer goes, the attempt that ended well is released, the machine is freed. */
  function finish() {
    held.length = 0;
    heldAt = heldTo = undefined;
    told = false;
    const a = cur;
    if (a !== undefined && failure === undefined) {
      cur = undefined;
      if (a.span !== undefined) streamEnded(t, a.span, "closed", undefined, a.chunks, a.bytes, a.n);
      a.node.dispose();
    }
    outer.dispose();
    keep();
    if (!freed) {
      freed = true;
      contentSeen = m.content();
      m.free();
    }
  }

  /** What is left of the deadline now, in the formats a continuation sends (the hook's `headers`). */
  function budgetHeaders() {
    const out = {};
    const remaining = deadline.remaining();
    for (const f of formats) out[f] = core.encodeHeader(f, remaining);
    return out;
  }

  /** Makes attempt `n` as the machine says (`how`: a `core.ReadHow`). */
  function launch(n, how, id) {
    attempts = n;
    // A new attempt's notes start afresh: a hold of the last one's is not its.
    heldAt = heldTo = undefined;
    told = false;
    const node = child([outer], Infinity);
    const a = { n, hooked: how === BY_HOOK, t0: now(), node, response: undefined, reader: undefined, isProgress: undefined, span: undefined, chunks: 0, bytes: 0, sse: false };
    cur = a;
    let pending;
    try {
      if (how === BY_HOOK) {
        const made = hook({ chunks: kept.slice(), bytes: m.deliveredBytes(), lastEventId: id, attempt: n, signal: node.signal, headers: budgetHeaders() });
        if (made == null) {
          m.declined(now());
          return act(NOTHING, "declined");
        }
        pending = Promise.resolve(made);
      } else {
        const headers = id === undefined ? {} : { "last-event-id": lastEventIdHeader(id) };
        pending = Promise.resolve(connect(node.signal, { attempt: n, lastEventId: id, headers }));
      }
    } catch (error) {
      pending = Promise.reject(error);
    }
    pending.then(
      (response) => answered(a, response),
      (error) => failed(a, error),
    );
  }

  /** Attempt `a` failed with `error` (a network error, a hook that threw, a body's error). */
  function failed(a, error) {
    if (cur !== a || ended) return;
    if (a.node.aborted) error = a.node.reason; // some runtimes reject with their own AbortError: ours is the reason
    let word;
    try {
      word = classified(userClassify ?? defaultClassify, error);
    } catch (broken) {
      return stop(broken);
    }
    const wait = serverWait(error);
    reported = error;
    tell();
    if (cur !== a || ended || !lend()) return;
    m.failed(now(), word, wait);
    giveBack();
    act(NOTHING, "failed");
  }

  /** The host's own error ends the read (the machine is stopped as by a cancel). */
  function stop(error) {
    if (ended) return;
    cancelReason = error;
    m.cancel(now());
    act(NOTHING, "cancel");
    failure = error;
    changed();
  }

  /** Attempt `a`'s answer arrived. */
  function answered(a, response) {
    if (cur !== a || ended) {
      response?.body?.cancel?.(a.node.reason).catch(noop);
      return;
    }
    if (!check.looksLikeResponse(response)) {
      const param = a.hooked ? "options.resume" : "upstream";
      return stop(argumentError("type", CODES.INVALID_RETURN, param, `'${param}' must give a Response: it gave ${check.describe(response)}`));
    }
    a.response = response;
    const type = response.headers.get("content-type");
    const sse = isEventStream(type);
    a.sse = sse;
    let word;
    let wait;
    if (!response.ok) {
      const error = new UpstreamStatus(response);
      try {
        if (userClassify !== undefined) word = classified(userClassify, error);
      } catch (broken) {
        return stop(broken);
      }
      wait = serverWait(error);
    }
    const t1 = now();
    const range = response.headers.get("content-range") ?? undefined;
    if (!lend()) return;
    m.head(t1, response.status, sse, range, response.body !== null, word, wait);
    giveBack();
    act(NOTHING, "head");
    if (cur !== a || ended) return;
    // Read: the machine took the answer.
    a.reader = response.body.getReader();
    a.isProgress = s.isProgress === undefined ? undefined : predicate(s.isProgress, "relay");
    if (t !== null) {
      const started = s.firstByteMs === undefined && !s.fromHeaders ? a.t0 : t1;
      a.span = streamSpan(t, s.firstChunkMs ?? core.firstChunkWait(deadline.at, started), s.stallMs ?? NO_LIMIT, deadline.at, t1, s.firstByteMs, a.n);
    }
    head ??= response;
  }

  /** Resolves when something changed (an answer, a failure, a wake, the end). */
  function change() {
    return new Promise((resolve) => {
      notify = resolve;
    });
  }

  /**
   * The reader's next `{ done, value }`; rejects with the reader's error.
   * The common case (an attempt being read, a chunk the machine hands on as
   * it came, nothing else to do) is one `then` on the attempt's read; the
   * rest is `slowRead`'s.
   */
  function read() {
    if (told) {
      told = false;
      if (!ended && lend()) {
        const first = m.unhold(now());
        giveBack();
        act(first, "unhold");
      }
    } else if (heldAt !== undefined) heldTo = now();
    const a = cur;
    if (queue.length > 0 || ended || a === undefined || a.reader === undefined || b !== undefined) return slowRead();
    reading = a;
    waiting = true;
    if (!holding) keep();
    return a.reader.read().then(onNext, onError);
  }

  // `read`'s callbacks, made once: one read is in flight at a time (`reading`'s).
  let reading;
  const onNext = (next) => {
    const a = reading;
    waiting = false;
    if (next.done || cur !== a || ended) return slowRead(a, next);
    const value = next.value;
    const first = take(a, value);
    if (first !== DELIVER_CHUNK) {
      if (first !== -1) act(first, "chunk");
      return slowRead();
    }
    heldAt = chunkAt;
    pieceFrom = attempts;
    if (kept !== undefined) kept.push(value);
    return { done: false, value };
  };
  const onError = (error) => {
    waiting = false;
    return slowRead(reading, undefined, error, true);
  };
  let chunkAt = 0; // when the last chunk was given

  /** Gives the machine attempt `a`'s chunk `value`: its first action (plus MORE: more follow), or -1 when the attempt failed instead. */
  function take(a, value) {
    const bytes = value instanceof Uint8Array ? value : ArrayBuffer.isView(value) ? new Uint8Array(value.buffer, value.byteOffset, value.byteLength) : typeof value === "string" ? encoder.encode(value) : new Uint8Array(value);
    let progress;
    if (a.isProgress !== undefined) {
      try {
        progress = Boolean(a.isProgress(value));
      } catch (error) {
        failed(a, error);
        return -1;
      }
    }
    if (a.span !== undefined) {
      a.chunks++;
      a.bytes += bytes.byteLength;
    }
    chunk = value;
    chunkBytes = bytes;
    const from = heldAt;
    const to = heldTo;
    heldAt = heldTo = undefined;
    // While the watcher samples, the reader's instant (after the latest wake) stands for the chunk's.
    const t1 = (chunkAt = sampling && to !== undefined ? to : now());
    if (!lend()) return -1;
    // A body that is not an event stream: the machine needs only the count (no bytes cross).
    // The instants go as numbers, NaN for none (src/wasm/read.rs `chunk`).
    const first = a.sse ? m.chunk(t1, bytes, progress, from ?? NaN, to ?? NaN) : m.chunkLen(t1, bytes.byteLength, progress, from ?? NaN, to ?? NaN);
    giveBack();
    sampling = (first & SAMPLING) !== 0;
    return first & ~SAMPLING;
  }

  /**
   * `read` for everything but the common case; `next`, or `error` when it
   * `threw`, is what attempt `from` gave before it was called.
   */
  async function slowRead(from, next, error, threw = false) {
    if (from !== undefined && from === cur && !ended) {
      if (threw) failed(from, error);
      else if (next.done) {
        tell();
        m.end(now());
        act(NOTHING, "end");
      }
    }
    waiting = true;
    keep();
    try {
      for (;;) {
        if (queue.length > 0) {
          tell();
          pieceFrom = pieceAttempts.shift();
          const value = queue.shift();
          if (!ended && cur?.reader !== undefined) heldAt = now();
          return { done: false, value };
        }
        if (ended) {
          if (failure !== undefined) throw failure;
          return { done: true, value: undefined };
        }
        const a = cur;
        if (a === undefined || a.reader === undefined) {
          await change();
          continue;
        }
        let got;
        try {
          got = await a.reader.read();
        } catch (e) {
          failed(a, e);
          continue;
        }
        if (cur !== a || ended) continue;
        if (got.done) {
          tell();
          m.end(now());
          act(NOTHING, "end");
          continue;
        }
        const first = take(a, got.value);
        if (first !== -1) act(first, "chunk");
      }
    } finally {
      waiting = false;
    }
  }

  return {
    /** The first answer: `{ response }` to read, or `{ response, final: true }` to hand back as it is. */
    async head() {
      waiting = true;
      keep();
      try {
        while (head === undefined && !ended) await change();
      } finally {
        waiting = false;
      }
      if (head !== undefined) return { response: head };
      if (handBack !== undefined) return { response: handBack, final: true };
      if (failure !== undefined) throw failure;
      // The body ended before any was read: an empty answer.
      return { response: head };
    },
    read,
    /** Whether content reached the reader (relay commits on it). */
    content: () => (freed ? contentSeen : m.content()),
    /** The attempt the last piece read came from. */
    attempts: () => pieceFrom,
    /** Ends the read (a reader's cancel, or done): aborts the attempt, frees the machine. */
    close(reason) {
      if (closed) return;
      if (!ended) {
        cancelReason = reason;
        m.cancel(now());
        act(NOTHING, "cancel");
      }
      closed = true;
      outer.dispose();
      keep();
    },
  };
}

