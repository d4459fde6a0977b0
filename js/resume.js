// Streams that recover: the attempts behind one streamed body, for `relay`
// and `fetchWithDeadline` with `retry` (and `resume`).
//
// What to do after a failure is the core's (src/core/resume.rs `Resume`, see
// its module doc: retry as it was before content, `Last-Event-ID` or the
// caller's hook after it, or the end), and so is whether another attempt may
// be made at all and when (src/core/retry.rs `RetryRun`: the deadline,
// `attemptMinMs`, backoff, the retry budget, the server's `Retry-After`).
// This file owns what only the host can do: the attempts' requests, signals
// and stall guards (js/stall.js), and the bytes: which of them reached the
// reader, cut on event boundaries.
//
// # The per-chunk path
// A chunk is looked at once, by the cutter below, in the pull that hands it
// to the reader: no Wasm call, no timer, no promise beyond the read. On a
// `text/event-stream` the cutter scans the bytes for the blank lines that
// end events and for `id:` lines; a chunk that ends on an event boundary (the
// common case) is passed on as it is, a chunk that ends inside an event is
// passed on up to its last boundary and the rest is held until the event
// completes. Any other body is passed on as it is, counted.
//
// # Invariants
// 1. Before content reached the reader (an event with a field: a comment is
//    not content; any byte of another body), a failed attempt (a network
//    error, a non-ok status that `classify` calls retryable, a first-byte or
//    first-chunk stall) is made again, inside the deadline and the retry
//    budget, and the reader never sees it. A non-ok status that is not
//    retried is handed back as it is.
// 2. Events are never split: an event reaches the reader whole or not at
//    all. A failure drops the held part of an unfinished event.
// 3. After content, a stream is never restarted silently: it resumes with
//    `Last-Event-ID` (the last id the reader got, as the SSE standard keeps
//    it), through the caller's `resume` hook, or ends with the failure.
//    Each event reaches the reader exactly once: a stream resumed by id is
//    held until its first event with an id, and if that id was already
//    delivered the upstream ignored the header; that attempt is dropped and
//    the core decides again (the hook, or the end).
// 4. The deadline, the caller's signal and a reader's cancel end the read
//    where it is (no further attempt); every attempt's request is aborted
//    when it fails or is dropped (released, not abandoned); when the read
//    ends, every timer and listener is gone and the core's loop is freed.
// 5. A backoff between attempts keeps a Node or Deno process alive (its
//    timer is unref'd, like every timer of the package): someone awaits it.
// 6. When the read ends with a failure once the reader has the body, the
//    reader's error is ours, with `deliveredBytes`: a `StreamStalled` or a
//    `StreamTooLarge` as it is, the deadline's `DeadlineExceeded` and the
//    caller's abort reason as they are (without the field: they are shared),
//    anything else (an upstream's `TypeError`, a status, a refused resume)
//    as the `cause` of a `RetryFailed` (the retry loop's stop, or
//    "not-resumable" when it allowed an attempt none could continue).

import * as core from "./edge_deadline.js";
import { argumentError, CODES, isDeadlineExceeded, RetryFailed, StreamStalled } from "./errors.js";
import { propagateFormats } from "./headers.js";
import { hold, releaseHold } from "./keepalive.js";
import { classified, defaultClassify, newRun, serverWait } from "./retry.js";
import { retryBudgetCore } from "./retry_budget.js";
import { guard, isEventStream, isStreamStalled } from "./stall.js";
import { child, now } from "./timers.js";
import * as check from "./validate.js";

const LF = 10;
const CR = 13;
const COLON = 58;
const SPACE = 32;
const I = 105; // "i"
const D = 100; // "d"

// Where the cutter is in a line.
const START = 0; // at its start
const COMMENT = 1; // a comment
const OTHER = 2; // a field that is not `id`
const NAME_I = 3; // the field name so far is "i"
const NAME_ID = 4; // … "id"
const VALUE_START = 5; // after "id:", before an optional space
const VALUE = 6; // in the id's value
const RETRY_VALUE = 7; // after "retry:": not content (src/core/sse.rs)
const NAME_R = 7; // NAME_R + k: the field name so far is the first k letters of "retry" (1…5)
const R = 114; // "r"
const RETRY_NAME = [114, 101, 116, 114, 121];

// The core's flags (src/core/resume.rs `flags`) and answers (`Next`).
const CONTENT = 1;
const EVENT_STREAM = 2;
const LAST_EVENT_ID = 4;
const IGNORED = 8;
const HOOK = 16;
const UNCHECKED = 32;
const RETRY = 0;
const BY_ID = 1;
const BY_HOOK = 2;

const decoder = new TextDecoder();
const FNV_OFFSET = 0x811c9dc5 | 0;
const FNV_PRIME = 0x01000193;
/**
 * How many of the latest delivered ids a resumed stream is checked against
 * (besides the first): the core's rule (src/core/resume.rs `DeliveredIds`,
 * `RECENT_IDS`, ids compared exactly: an FNV-1a hash finds a candidate,
 * the bytes confirm it), which the Rust host uses as it is.
 */
const RECENT = 1024;
/**
 * The longest id kept for resuming, in bytes: the core's `MAX_ID_BYTES`
 * (src/core/resume.rs). A longer one ends resuming by id (as an empty id
 * does) and is not remembered.
 */
const MAX_ID = 1024;
/** The codes of a stream refused past a cap (the core's `CutRefusal`). */
const EVENT_TOO_LARGE = "EVENT_TOO_LARGE";
const LINE_TOO_LONG = "LINE_TOO_LONG";
const noop = () => {};

/**
 * Cuts an event stream on event boundaries and keeps, as the standard does,
 * the last event id (`id:` lines, set when their event completes; a value
 * with a NUL is ignored; an empty one clears it). One per read; `reset` at
 * each attempt (its line state and unfinished event go, what the reader got
 * stays).
 *
 * # Invariants
 * 1. `cut` returns whole events only: the bytes up to the chunk's last event
 *    boundary, with the unfinished event before them; the rest waits in
 *    `pending`.
 * 2. `content` turns true with the first whole event that has a field (a
 *    comment is not content); `lastIdLen`/`lastEventId()` are the id of the
 *    last whole event that set one. An id's bytes are copied and hashed
 *    (FNV-1a) as they are scanned: no string per event.
 * 3. While `verifying` (a stream resumed by id), the first whole event with
 *    an id ends it: `replayed` when that id was delivered already (the
 *    first one, or one of the last RECENT), else it passes.
 * 4. `progress` says whether the last chunk cut held a character of a field
 *    line: js/sse.js's rule, so the stall guard can take it as its predicate.
 * 5. A byte-order mark that opens a body is not part of a line (as in the
 *    core's `EventCut`): the first body's is relayed, a later attempt's is
 *    dropped (a reader strips only the stream's first).
 * 6. `lastEventIdHeader()` is the id's UTF-8 bytes, one character per byte,
 *    as EventSource sends `Last-Event-ID`; no call spreads an id's bytes.
 * 7. Caps (the core's `EventCut` rule, pinned by the `resume.cut` rows of
 *    tests/conformance): no event longer than `maxEvent` bytes and no line
 *    longer than `maxLine` (its end not counted) is held. At the byte past
 *    either, `refused` is set to the core's code, the events completed
 *    before it are returned, and every later chunk gives nothing. Lengths
 *    are checked at each line end and at the chunk's end, not per byte:
 *    where the refusal falls does not depend on chunk boundaries.
 */
export class EventCutter {
  content = false;
  progress = false;
  verifying = false;
  replayed = false;
  /** Pieces of the unfinished event. */
  pending = [];
  lastIdBuf = new Uint8Array(64);
  lastIdLen = 0;
  firstHash = undefined;
  recent = new Int32Array(RECENT);
  /** The bytes of the first id and of the last RECENT: a hash match is confirmed by them. */
  firstId = undefined;
  recentIds = new Array(RECENT);
  recentCount = 0;
  line = START;
  prevCR = false;
  fields = false; // the event so far has a field line
  idBuf = new Uint8Array(64);
  idLen = 0;
  idHash = FNV_OFFSET;
  idNul = false;
  blockIdBuf = new Uint8Array(64); // the id this event sets
  blockIdLen = -1; // -1: the event has no id line
  blockHash = 0;
  /** How much of a leading byte-order mark was matched; -1: past it. */
  bom = 0;
  /** The first body's mark is relayed; a resumed body's is dropped (a reader strips only the stream's first). */
  keepBom = true;
  /** The bytes of the event in progress and of its line in progress, before the chunk being cut. */
  eventLen = 0;
  lineLen = 0;
  /** The cap passed (`EVENT_TOO_LARGE`, `LINE_TOO_LONG`), once one was (invariant 7). */
  refused = undefined;

  /** A cutter with an event cap and a line cap, in bytes (checked by the caller). */
  constructor(maxEvent, maxLine) {
    this.maxEvent = maxEvent;
    this.maxLine = maxLine;
  }

  /** A new attempt: `verifying` when it resumes by id; `first`: the stream's first body (its mark is relayed). */
  reset(verifying, first) {
    this.line = START;
    this.prevCR = false;
    this.fields = false;
    this.blockIdLen = -1;
    this.idLen = 0;
    this.idHash = FNV_OFFSET;
    this.idNul = false;
    this.pending = [];
    this.eventLen = 0;
    this.lineLen = 0;
    this.replayed = false;
    this.verifying = verifying;
    this.bom = 0;
    this.keepBom = first;
  }

  /**
   * Whether every id delivered is remembered (the first and the last
   * RECENT are all of them): the core's `DeliveredIds::checkable`, pinned by
   * the `resume.ids` rows of tests/conformance. Past it, a resume by id
   * cannot be checked for a replay, and the core does not make one.
   */
  checkable() {
    return this.recentCount <= RECENT + 1;
  }

  /** Whether an id was delivered (the first one, or one of the last RECENT): its hash finds it, its bytes confirm it. */
  delivered(hash, bytes) {
    if (hash === this.firstHash && sameBytes(this.firstId, bytes)) return true;
    const recent = this.recent;
    for (let k = Math.min(this.recentCount, RECENT) - 1; k >= 0; k--) if (recent[k] === hash && sameBytes(this.recentIds[k], bytes)) return true;
    return false;
  }

  /** Bytes `from`…`to` of `b` are part of an id's value: copied and hashed. */
  idBytes(b, from, to) {
    let buf = this.idBuf;
    let len = this.idLen;
    if (len + to - from > buf.length) {
      const bigger = new Uint8Array(2 * (len + to - from));
      bigger.set(buf.subarray(0, len));
      buf = this.idBuf = bigger;
    }
    let h = this.idHash;
    let nul = false;
    for (let k = from; k < to; k++) {
      const c = b[k];
      buf[len++] = c;
      h = Math.imul(h ^ c, FNV_PRIME);
      nul ||= c === 0;
    }
    this.idLen = len;
    this.idHash = h;
    if (nul) this.idNul = true;
  }

  /** The id line ended: its value is the event's id. */
  idLine() {
    if (this.idLen > MAX_ID) {
      // Past the cap: no longer resumable by id from here (as an empty id says).
      this.blockIdLen = 0;
    } else if (!this.idNul) {
      const b = this.blockIdBuf;
      this.blockIdBuf = this.idBuf;
      this.idBuf = b;
      this.blockIdLen = this.idLen;
      this.blockHash = this.idHash;
    }
    this.idLen = 0;
    this.idHash = FNV_OFFSET;
    this.idNul = false;
  }

  /** An event ended. False when it shows the upstream replayed (invariant 3). */
  endBlock() {
    const len = this.blockIdLen;
    if (len >= 0) {
      const hash = this.blockHash;
      if (this.verifying && len > 0) {
        if (this.delivered(hash, this.blockIdBuf.subarray(0, len))) return false;
        this.verifying = false;
      }
      const b = this.lastIdBuf;
      this.lastIdBuf = this.blockIdBuf;
      this.blockIdBuf = b;
      this.lastIdLen = len;
      if (len > 0) {
        const copy = this.lastIdBuf.slice(0, len);
        if (this.firstId === undefined) {
          this.firstHash = hash;
          this.firstId = copy;
        }
        const k = this.recentCount++ & (RECENT - 1);
        this.recent[k] = hash;
        this.recentIds[k] = copy;
      }
      this.blockIdLen = -1;
    }
    if (this.fields) this.content = true;
    this.fields = false;
    return true;
  }

  /** The last event id the reader got, or undefined (none, or an empty one). */
  lastEventId() {
    if (this.lastIdLen === 0) return undefined;
    const bytes = this.lastIdBuf.subarray(0, this.lastIdLen);
    for (const b of bytes) if (b > 127) return decoder.decode(bytes);
    return byteString(bytes);
  }

  /**
   * The last event id as a `Last-Event-ID` header value that goes out as
   * its UTF-8 bytes, as EventSource sends it: where `Headers` takes a
   * ByteString (Node, Deno, browsers) one character per byte, where it
   * takes any text and sends it as UTF-8 (workerd) the text; undefined
   * when there is none.
   */
  lastEventIdHeader() {
    if (this.lastIdLen === 0) return undefined;
    return utf8Headers() ? this.lastEventId() : byteString(this.lastIdBuf.subarray(0, this.lastIdLen));
  }

  /**
   * Cuts a chunk: the part up to its last event boundary (with what was
   * pending before it), or undefined while an event is open (or when the
   * chunk shows a replay: `replayed`).
   */
  cut(chunk) {
    if (this.refused !== undefined) return undefined;
    let b = chunk instanceof Uint8Array ? chunk : ArrayBuffer.isView(chunk) ? new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength) : typeof chunk === "string" ? new TextEncoder().encode(chunk) : new Uint8Array(chunk);
    let boundary = -1;
    let blank = false; // the last terminator ended an event
    let progress = false;
    let i = 0;
    if (this.bom >= 0) {
      // A leading byte-order mark (possibly split across chunks) is not part of a line, as in the core's EventCut.
      let m = this.bom;
      while (i < b.length && m < 3 && b[i] === BOM[m]) {
        i++;
        m++;
      }
      if (m === 3) this.bom = -1;
      else if (i < b.length) {
        // Not a mark after all: what matched is the start of a line that is not `id`.
        if (m > 0) {
          if (!this.keepBom) this.pending.push(BOM.subarray(0, m));
          this.line = OTHER;
          this.fields = true;
          progress = true;
        }
        this.bom = -1;
      } else this.bom = m;
      if (!this.keepBom && i > 0) {
        b = b.subarray(i);
        i = 0;
      }
    }
    // The line state in locals for the loop (the fields are written back).
    let ln = this.line;
    let cr = this.prevCR;
    const n = b.length;
    // Where the event and the line in progress started (before the chunk: negative), for the caps.
    let es = -this.eventLen;
    let ls = i - this.lineLen;
    const maxEvent = this.maxEvent;
    const maxLine = this.maxLine;
    for (; i < n; i++) {
      const c = b[i];
      if (c === LF || c === CR) {
        if (i - es >= maxEvent || i - ls > maxLine) return this.refuse(b, boundary, es + maxEvent, ls + maxLine);
        ls = i + 1;
        if (c === LF && cr) {
          cr = false;
          if (blank) boundary = i + 1;
          continue;
        }
        cr = c === CR;
        if (ln === START) {
          if (!this.endBlock()) {
            this.line = ln;
            this.prevCR = cr;
            this.progress = true;
            this.replayed = true;
            return undefined;
          }
          boundary = i + 1;
          es = i + 1;
          blank = true;
        } else {
          if (ln >= NAME_ID && ln <= VALUE) this.idLine();
          else if (ln > NAME_R && ln < NAME_R + 5) {
            // A field named a strict prefix of "retry" ("re"): content after all.
            this.fields = true;
            progress = true;
          }
          ln = START;
          blank = false;
        }
        continue;
      }
      cr = false;
      blank = false;
      if (ln <= OTHER && ln !== START) {
        // The rest of a comment or of a field that is not `id`: on to the line's end.
        if (ln === OTHER) progress = true;
        while (i + 1 < n) {
          const x = b[i + 1];
          if (x === LF || x === CR) break;
          i++;
        }
      } else if (ln === START) {
        if (c === COLON) ln = COMMENT;
        else if (c === R) ln = NAME_R + 1; // perhaps "retry", which is not content
        else {
          this.fields = true;
          progress = true;
          if (c !== I) ln = OTHER;
          else if (i + 2 < n && b[i + 1] === D && b[i + 2] === COLON) {
            // "id:" whole in this chunk (the usual case): straight to its value.
            i += 2;
            ln = VALUE_START;
          } else ln = NAME_I;
        }
      } else if (ln >= RETRY_VALUE) {
        if (ln === RETRY_VALUE) continue;
        const k = ln - NAME_R;
        if (k < 5 && c === RETRY_NAME[k]) ln++;
        else if (k === 5 && c === COLON) ln = RETRY_VALUE;
        else {
          ln = OTHER;
          this.fields = true;
          progress = true;
        }
      } else if (ln >= VALUE_START) {
        progress = true;
        // An id's value, to the line's end (one leading space is not part of it).
        const from = ln === VALUE_START && c === SPACE ? i + 1 : i;
        ln = VALUE;
        let end = from;
        while (end < n && b[end] !== LF && b[end] !== CR) end++;
        this.idBytes(b, from, end);
        i = end - 1;
      } else {
        progress = true;
        if (ln === NAME_I) ln = c === D ? NAME_ID : OTHER;
        else ln = c === COLON ? VALUE_START : OTHER;
      }
    }
    this.line = ln;
    this.prevCR = cr;
    this.progress = progress;
    if (n - es > maxEvent || n - ls > maxLine) return this.refuse(b, boundary, es + maxEvent, ls + maxLine);
    this.eventLen = n - es;
    this.lineLen = n - ls;
    if (boundary < 0) {
      this.pending.push(b);
      return undefined;
    }
    return this.join(b, boundary);
  }

  /**
   * A cap was passed in `b` (invariant 7): the event cap at index
   * `pastEvent`, or the line cap at `pastLine`, whichever came first (the
   * event's on a tie, as the core checks it first). What ended before it
   * (up to `boundary`) is returned.
   */
  refuse(b, boundary, pastEvent, pastLine) {
    this.refused = pastEvent <= pastLine ? EVENT_TOO_LARGE : LINE_TOO_LONG;
    const out = boundary < 0 ? undefined : this.join(b, boundary, true);
    this.pending = [];
    return out;
  }

  /** The pending pieces and `b` up to `boundary`, joined; the rest of `b` is pending (unless `drop`). */
  join(b, boundary, drop = false) {
    const n = b.length;
    const head = boundary === n ? b : b.subarray(0, boundary);
    let out = head;
    const pending = this.pending;
    if (pending.length > 0) {
      let size = head.length;
      for (const p of pending) size += p.length;
      out = new Uint8Array(size);
      let at = 0;
      for (const p of pending) {
        out.set(p, at);
        at += p.length;
      }
      out.set(head, at);
      this.pending = [];
    }
    if (boundary < n && !drop) this.pending.push(b.subarray(boundary));
    return out;
  }
}

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

/** Whether two byte arrays hold the same bytes. */
function sameBytes(a, b) {
  if (a === undefined || a.length !== b.length) return false;
  for (let k = 0; k < a.length; k++) if (a[k] !== b[k]) return false;
  return true;
}

/** Bytes as a string of one character per byte (no spread: an id may be longer than the stack allows). */
function byteString(bytes) {
  let out = "";
  for (let k = 0; k < bytes.length; k += 8192) out += String.fromCharCode.apply(null, bytes.subarray(k, k + 8192));
  return out;
}

const BOM = new Uint8Array([0xef, 0xbb, 0xbf]);

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
 * How a stream's failure is classified unless `classify` says otherwise: a
 * non-ok status as the core says (src/core/resume.rs `status_failure`: 429
 * and 503 "not-applied", 408 and other 5xx "ambiguous", others
 * "permanent"); any other error as `retry` does.
 */
function streamClassify(error) {
  return error instanceof UpstreamStatus ? core.statusFailure(error.status) : defaultClassify(error);
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
  const classify = retry.r.classify === undefined ? streamClassify : given;
  const hook = retry.hook;
  const formats = s.formats ?? propagateFormats(undefined);
  const budgetCore = budget === undefined ? undefined : () => retryBudgetCore(budget);
  // Everything hangs from `outer`: the deadline (and its parents), the caller's signal (and a Request's).
  const outer = child([deadline, s.signal, s.signal2], Infinity);
  let cur; // the attempt being made or read: { node, reader, sse }
  let eventStream = false; // the body is an event stream (the first that was read says)
  let sleeping; // the backoff: { node, reject }
  let kind = RETRY; // how the next attempt is made
  let attempts = 0;
  let resumes = 0;
  let ignored = false;
  let lastError;
  let ended = false; // read() answers done
  let closed = false; // released
  let head; // the first answer read
  // What reached the reader.
  let content = false;
  let bytes = 0;
  const kept = hook === undefined ? undefined : [];
  // The event stream's cutter: event boundaries, ids, what the reader got of them.
  const cutter = new EventCutter(retry.maxEvent, retry.maxLine);
  let tooLarge; // the cutter refused the stream past a cap: the read ends with it
  let thrown; // … and the reader was given it
  let held = []; // a resumed-by-id attempt's pieces, until its first event with an id
  const queue = []; // pieces ready for the reader beyond the one a chunk gives
  // An event stream read with the stall guard's predicate: its pieces, cut as
  // the guard reads each chunk, until the reader takes them (see `scanAhead`).
  const ahead = [];

  /**
   * The stall guard's progress predicate on an event stream (the caller
   * gave none): the one scan of each chunk, made as the guard reads it. Its
   * pieces wait in `ahead` for the reader, and are the reader's from then on:
   * if the attempt fails while one waits, it is still delivered first (the
   * guard drops a chunk it read ahead; its bytes were received whole).
   */
  function scanAhead(chunk) {
    if (cutter.replayed) return true;
    // What `accept` queues besides its piece belongs after it, in `ahead` (the queue may hold an older attempt's pieces).
    const queued = queue.length;
    const piece = accept(chunk);
    if (piece !== undefined) ahead.push(piece);
    if (queue.length > queued) ahead.push(...queue.splice(queued));
    return cutter.progress;
  }

  /**
   * Cuts a chunk of an event stream: the piece for the reader, or undefined
   * while an event is open or a resumed stream is held (invariant 3). When
   * the held pieces are let go, the first is returned and the rest queued.
   */
  function accept(chunk) {
    const was = cutter.verifying;
    const piece = cutter.cut(chunk);
    if (cutter.refused !== undefined && tooLarge === undefined) {
      tooLarge = new StreamTooLarge(cutter.refused, cutter.refused === LINE_TOO_LONG ? cutter.maxLine : cutter.maxEvent);
      // What a resumed stream held before its first id is not checked: it never reaches the reader.
      if (was && cutter.verifying) held = [];
    }
    if (piece === undefined) return undefined;
    if (!was) {
      bytes += piece.byteLength;
      if (kept !== undefined) kept.push(piece);
      return piece;
    }
    held.push(piece);
    if (cutter.verifying) return undefined;
    // The resumed stream's first id is new: what was held goes to the reader.
    for (let i = 1; i < held.length; i++) queue.push(deliver(held[i]));
    const first = held[0];
    held = [];
    return deliver(first);
  }

  /** What is left of the deadline now, in the formats a continuation sends (the hook's `headers`). */
  function budgetHeaders() {
    const out = {};
    const remaining = deadline.remaining();
    for (const f of formats) out[f] = core.encodeHeader(f, remaining);
    return out;
  }

  /** A piece reaches the reader: counted, and kept for the hook. */
  function deliver(piece) {
    bytes += piece.byteLength ?? piece.length;
    kept?.push(piece);
    return piece;
  }

  /** A chunk of the current attempt → a piece for the reader, or undefined (held). */
  function take(chunk) {
    if (cur.scanned) return ahead.length > 0 ? ahead.shift() : undefined;
    if (!cur.sse) {
      // A body's chunks are bytes (Uint8Array).
      const size = chunk.byteLength;
      if (size > 0) content = true;
      bytes += size;
      if (kept !== undefined) kept.push(chunk);
      return chunk;
    }
    return accept(chunk);
  }

  /** Ends the current attempt: its request is aborted (released). */
  function drop(reason) {
    const c = cur;
    cur = undefined;
    if (c === undefined) return;
    if (!c.node.aborted) c.node.abort(reason);
    c.reader?.cancel(reason).catch(noop);
    c.node.dispose();
  }

  /** The deadline or the caller's signal ended the read: the core records it; its reason stands. */
  function signalled() {
    const reason = outer.reason;
    if (closed) return reason;
    try {
      run.aborted(now(), isDeadlineExceeded(reason) && reason.at === deadline.at);
    } catch {
      // The loop had already stopped.
    }
    return reason;
  }

  /**
   * Sleeps `ms` unless the read is ended first; rejects with the reason it
   * ended with. Someone awaits it (a reader, or the caller of `relay` or
   * `fetchWithDeadline`), and the backoff's timer is unref'd: it holds a
   * Node or Deno process alive meanwhile (js/keepalive.js).
   */
  function sleep(ms) {
    hold();
    return new Promise((resolve, reject) => {
      const node = child([outer], now() + ms, {
        onTime: (c) => {
          c.dispose();
          sleeping = undefined;
          resolve();
        },
        onAbort: () => reject(signalled()),
      });
      sleeping = { node, reject };
    }).finally(releaseHold);
  }

  /**
   * An attempt failed with `error` (`status`: a non-ok answer, kept for a
   * reader before content): asks the loop and the core; resolves when the
   * next attempt may be made, rejects with the failure when none may.
   */
  async function failed(error) {
    if (tooLarge !== undefined) {
      refused();
      throw ending(tooLarge);
    }
    drop(error);
    // Pieces cut before the failure are the reader's: they go first.
    if (ahead.length > 0) queue.push(...ahead.splice(0));
    if (outer.aborted) throw signalled();
    if (closed) throw error;
    const t = now();
    let delay;
    let wait;
    if (cutter.replayed) {
      ignored = true;
      delay = budgetCore ? run.failedBudgeted(t, "not-applied", budgetCore(), undefined) : run.failed(t, "not-applied", undefined);
      error = lastError ?? error;
    } else if (isStreamStalled(error)) {
      delay = budgetCore ? run.timedOutBudgeted(t, budgetCore()) : run.timedOut(t);
    } else {
      const failure = classified(classify, error);
      wait = serverWait(error);
      delay = budgetCore ? run.failedBudgeted(t, failure, budgetCore(), wait) : run.failed(t, failure, wait);
    }
    lastError = error;
    if (delay === undefined) throw ending(error, run.stop());
    const bits = (content || cutter.content ? CONTENT : 0) | (eventStream ? EVENT_STREAM : 0) | (cutter.lastIdLen > 0 ? LAST_EVENT_ID : 0) | (ignored ? IGNORED : 0) | (hook ? HOOK : 0) | (cutter.checkable() ? 0 : UNCHECKED);
    const answer = core.resumeNext(bits, resumes, delay, wait);
    const next = answer % 4;
    if (next === 3) throw ending(error);
    if (next !== RETRY) resumes++;
    kind = next;
    const ms = (answer - next) / 4;
    if (ms > 0) await sleep(ms);
  }

  /** Makes the next attempt; resolves `{ response, final }` for an answer handed back, else undefined. */
  async function open() {
    if (closed) {
      ended = true;
      return undefined;
    }
    const t0 = now();
    const timeoutMs = budgetCore ? run.startBudgeted(t0, budgetCore()) : run.start(t0);
    if (timeoutMs === undefined) {
      if (lastError !== undefined) throw ending(lastError, run.stop());
      const { reason, message } = run.stop();
      throw new RetryFailed(reason, message, []);
    }
    attempts++;
    const node = child([outer], Infinity);
    cur = { node, reader: undefined, sse: false };
    const by = kind;
    cutter.reset(by === BY_ID, attempts === 1);
    held = [];
    // Not given: the core's default wait for first content, from where it starts (here for a relay's).
    const firstChunkMs = s.firstChunkMs ?? (s.firstByteMs === undefined && !s.fromHeaders ? core.firstChunkWait(deadline.at, t0) : undefined);
    // The wait for headers: `firstByteMs`, else (a relay's) what `firstChunkMs` allows.
    const headersMs = s.firstByteMs ?? (s.fromHeaders ? undefined : firstChunkMs);
    const phase = s.firstByteMs === undefined ? "first-chunk" : "first-byte";
    const wait = headersMs === undefined ? undefined : child([node], t0 + headersMs, { onTime: () => node.abort(new StreamStalled(phase, now() - t0, 0, 0)) });
    let response;
    let onAbort = noop;
    // Someone awaits this attempt (a reader, or the caller of relay or
    // fetchWithDeadline) and every timer bounding it is unref'd: a Node or
    // Deno process is held alive until it settles or the deadline ends it.
    hold();
    try {
      let pending;
      if (by === BY_HOOK) {
        const made = hook({ chunks: kept.slice(), bytes, lastEventId: cutter.lastEventId(), attempt: attempts, signal: node.signal, headers: budgetHeaders() });
        if (made == null) {
          wait?.dispose();
          node.dispose();
          throw lastError;
        }
        pending = Promise.resolve(made);
      } else {
        const id = by === BY_ID ? cutter.lastEventId() : undefined;
        const headers = id === undefined ? {} : { "last-event-id": cutter.lastEventIdHeader() };
        pending = Promise.resolve(connect(node.signal, { attempt: attempts, lastEventId: id, headers }));
      }
      response = await new Promise((resolve, reject) => {
        onAbort = () => {
          reject(node.reason);
          pending.then((late) => late?.body?.cancel?.(node.reason).catch(noop), noop);
        };
        if (node.aborted) onAbort();
        else node.signal.addEventListener("abort", onAbort, { once: true });
        pending.then(resolve, reject);
      });
    } catch (error) {
      if (by === BY_HOOK && !node.aborted && error === lastError) {
        cur = undefined;
        throw ending(error);
      }
      wait?.dispose();
      return failed(node.aborted ? node.reason : error);
    } finally {
      releaseHold();
      node.signal.removeEventListener("abort", onAbort);
      wait?.dispose();
    }
    if (closed) {
      response?.body?.cancel?.().catch(noop);
      return undefined;
    }
    if (!isResponse(response)) {
      const param = by === BY_HOOK ? "options.resume" : "upstream";
      const error = argumentError("type", CODES.INVALID_RETURN, param, `'${param}' must give a Response: it gave ${check.describe(response)}`);
      cur = undefined;
      node.abort(error);
      node.dispose();
      throw error;
    }
    if (!response.ok) {
      const error = new UpstreamStatus(response);
      // Before anything was read, an answer that is not retried is the reader's, as it is.
      if (head === undefined) {
        cur = undefined;
        try {
          await failed(error);
        } catch (e) {
          if (e !== error) throw e;
          node.dispose();
          return { response, final: true };
        }
        response.body?.cancel().catch(noop);
        node.dispose();
        return undefined;
      }
      response.body?.cancel().catch(noop);
      return failed(error);
    }
    if (response.body === null) {
      node.dispose();
      cur = undefined;
      if (head === undefined) return { response, final: true };
      ended = true;
      return undefined;
    }
    const type = response.headers.get("content-type");
    const sse = isEventStream(type);
    if (by !== RETRY) {
      // A resume must continue where the reader is (the core's rule): else it is a failed attempt, never spliced.
      const refusal = core.resumeRefusal(by === BY_ID, eventStream, response.status, sse, response.headers.get("content-range") ?? undefined, bytes);
      if (refusal !== undefined) {
        response.body?.cancel().catch(noop);
        return failed(new ResumeRefused(refusal, response.status));
      }
    }
    // On an event stream the cutter's scan is the guard's predicate too: one scan per chunk.
    const scanned = sse && s.isProgress === undefined;
    const guarded = guard(response.body, { firstChunkMs, stallMs: s.stallMs ?? Number.MAX_SAFE_INTEGER, deadline, controller: node, isProgress: scanned ? scanAhead : s.isProgress, contentType: type, otel: s.otel, firstByteMs: s.firstByteMs, attempt: attempts }, s.firstByteMs === undefined && !s.fromHeaders ? t0 : undefined);
    cur = { node, reader: guarded.stream.getReader(), sse, scanned };
    if (head === undefined) eventStream = cur.sse;
    head ??= response;
    return undefined;
  }

  /**
   * The next chunk for the reader: `{ done, value }`; rejects with the
   * failure that ended the read. The common case (an attempt being read, a
   * chunk that gives a piece) is one `then` on the attempt's read; the rest
   * is `loop`'s.
   */
  function read() {
    const c = cur;
    if (queue.length > 0 || ended || tooLarge !== undefined || c === undefined || c.reader === undefined) return loop();
    reading = c;
    return c.reader.read().then(onNext, onError);
  }

  // `read`'s callbacks, made once: one read is in flight at a time (`reading`'s).
  let reading;
  const onNext = (next) => {
    const c = reading;
    if (next.done || cur !== c) return loop(next, c);
    const piece = take(next.value);
    return piece === undefined || cutter.replayed ? loop(undefined, c) : { done: false, value: piece };
  };
  const onError = (error) => loop(undefined, reading, error, true);

  /**
   * `read` for everything but the common case; `next`, or `error` when it
   * `threw`, is what the attempt `from` gave before it was called.
   */
  async function loop(next, from, error, threw = false) {
    if (from !== undefined && from === cur) {
      if (threw) await failed(from.node.aborted ? from.node.reason : error);
      else if (cutter.replayed) await failed(lastError);
      else if (next?.done) finish();
    }
    return slowRead();
  }

  /**
   * The reader's error for a read that ends with `error` (invariant 6);
   * `stop`: the retry loop's, when it stopped. Before the body (`head`),
   * the error as it is: the caller of fetchWithDeadline, or relay's
   * fallback, gets it.
   */
  function ending(error, stop) {
    if (head === undefined || isDeadlineExceeded(error) || error === outer.reason || error?.deliveredBytes !== undefined) return error;
    if (!isStreamStalled(error) && error !== tooLarge) {
      const s = stop ?? { reason: "not-resumable", message: core.resumeEndMessage(bytes) };
      error = new RetryFailed(s.reason, s.message, run.records(), { cause: error });
    }
    error.deliveredBytes = bytes;
    return error;
  }

  /** The cutter refused the stream past a cap: the read ends with it at once (never retried), its attempt aborted. */
  function refused() {
    const error = tooLarge;
    if (!ended) {
      ended = true;
      drop(error);
      try {
        run.aborted(now(), false);
      } catch {
        // Already stopped.
      }
    } else if (error === thrown) return;
    thrown = error;
    throw ending(error);
  }

  /** The attempt being read ended: what an unfinished event or a held stream had goes too, as it came. */
  function finish() {
    if (ahead.length > 0) queue.push(...ahead.splice(0));
    for (const p of held) queue.push(deliver(p));
    for (const p of cutter.pending) queue.push(deliver(p));
    held = [];
    cutter.pending = [];
    cur.node.dispose();
    cur = undefined;
    ended = true;
    try {
      run.succeeded(now());
    } catch {
      // Already stopped.
    }
  }

  async function slowRead() {
    for (;;) {
      if (tooLarge !== undefined && ahead.length > 0) queue.push(...ahead.splice(0));
      if (queue.length > 0) return { done: false, value: queue.shift() };
      if (tooLarge !== undefined) refused();
      if (ended) return { done: true, value: undefined };
      if (cur === undefined) {
        const answer = await open();
        if (answer !== undefined) return answer;
        continue;
      }
      const c = cur;
      let next;
      try {
        next = await c.reader.read();
      } catch (error) {
        if (cur !== c) continue;
        await failed(c.node.aborted ? c.node.reason : error);
        continue;
      }
      if (next.done) {
        finish();
        continue;
      }
      const piece = take(next.value);
      if (cutter.replayed) {
        await failed(lastError);
        continue;
      }
      if (piece !== undefined) return { done: false, value: piece };
    }
  }

  return {
    /** The first answer: `{ response }` to read, or `{ response, final: true }` to hand back as it is. */
    async head() {
      while (head === undefined) {
        const answer = await open();
        if (answer !== undefined) return answer;
        if (ended) break;
      }
      return { response: head };
    },
    read,
    /**
     * The common case of `read` without its extra promise (js/relay.js's
     * body): `current()` is the attempt to read straight from, or undefined
     * (use `read`); `took(a, next)` turns what its reader gave into the
     * chunk for the reader, or undefined: then `after(a, next, threw,
     * error)` gives the reader's `{ done, value }`.
     */
    current: () => (queue.length > 0 || ended || tooLarge !== undefined || cur === undefined || cur.reader === undefined ? undefined : cur),
    took(a, next) {
      if (next.done || cur !== a) return undefined;
      const piece = take(next.value);
      return cutter.replayed ? undefined : piece;
    },
    after: (a, next, threw, error) => (threw ? loop(undefined, a, error, true) : loop(next, a)),
    /** Whether content reached the reader (relay commits on it). */
    content: () => content || cutter.content,
    /** Attempts made so far. */
    attempts: () => attempts,
    /** Ends the read (a reader's cancel, or done): aborts the attempt, frees the loop. */
    close(reason) {
      if (closed) return;
      closed = true;
      ended = true;
      if (cur !== undefined) {
        try {
          run.aborted(now(), false);
        } catch {
          // Already stopped.
        }
      }
      drop(reason);
      if (sleeping !== undefined) {
        sleeping.node.dispose();
        sleeping.reject(reason);
        sleeping = undefined;
      }
      outer.dispose();
      run.free();
    },
  };
}

function isResponse(x) {
  return x != null && typeof x === "object" && typeof x.status === "number" && typeof x.ok === "boolean" && "body" in x && x.headers != null;
}
