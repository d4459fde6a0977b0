// Which chunks of a Server-Sent Events body are progress, for withStallTimeout.
//
// # Why a predicate
// SSE servers send keep-alive comments (`: ping`) while the model is queued or
// thinking, precisely so that proxies do not time the connection out. To stall
// detection those comments are silence: a stream that only says "still here"
// for 60 s has stalled. Only lines that carry a field other than `retry`
// (`data:`, `event:`, `id:`, …) are progress: an event that only sets the
// reconnection time says "still here" too.
//
// The rule is the core's (src/core/sse.rs `SseLine`, which the Rust host
// scans with); this is its twin on the per-chunk hot path, pinned by the
// `sse.progress` rows of tests/conformance that both hosts run.
//
// # Invariants
// 1. A chunk is progress iff it holds at least one character of a line that
//    is neither a comment (first character `:`), nor blank, nor one whose
//    field name is exactly `retry`. A name that is a strict prefix of `retry`
//    counts at the character that shows it (its terminator, for `re\n`).
// 2. Chunk boundaries do not change the answer for an event: the state carried
//    between chunks is only "where in the line are we" (at its start, in a
//    comment, in a field line) and how much of a leading byte-order mark was
//    seen. An event split mid-line still counts: each of its pieces holds
//    field characters; the piece holding only its terminator does not.
// 3. Bytes and text give the same answers: in UTF-8, CR, LF and `:` never
//    occur inside a multi-byte character, so scanning bytes is exact.

import { typeError } from "./validate.js";

const LF = 10;
const CR = 13;
const COLON = 58;
const BOM_BYTES = [0xef, 0xbb, 0xbf];

// Where the scan is in the current line (src/core/sse.rs's states).
const LINE_START = 0;
const COMMENT = 1;
const FIELD = 2;
const RETRY_VALUE = 3;
const NAME = 3; // NAME + k: the line so far is the first k letters of "retry" (1…5)
const RETRY = [114, 101, 116, 114, 121];

/** One character (a byte or a UTF-16 unit) in line state `line`: the next state × 2, plus 1 when it is progress. */
function step(line, c) {
  if (c === LF || c === CR) return line > NAME && line < NAME + 5 ? 1 : 0;
  if (line === FIELD) return FIELD * 2 + 1;
  if (line === LINE_START) return c === COLON ? COMMENT * 2 : c === RETRY[0] ? (NAME + 1) * 2 : FIELD * 2 + 1;
  if (line === COMMENT || line === RETRY_VALUE) return line * 2;
  const k = line - NAME;
  if (k < 5 && c === RETRY[k]) return (line + 1) * 2;
  if (k === 5 && c === COLON) return RETRY_VALUE * 2;
  return FIELD * 2 + 1;
}

/** The state one stream carries between chunks. */
function freshState() {
  return { line: LINE_START, bom: 0, started: false };
}


/** Scans one chunk, updating `s`; returns whether it holds field characters. */
function scan(chunk, s) {
  let progress = false;
  let line = s.line;
  if (typeof chunk === "string") {
    let i = 0;
    if (!s.started && chunk.length > 0) {
      s.started = true;
      if (chunk.charCodeAt(0) === 0xfeff) i = 1; // the spec strips one leading BOM
    }
    for (const n = chunk.length; i < n; i++) {
      const c = chunk.charCodeAt(i);
      if (line === FIELD && c !== LF && c !== CR) {
        progress = true; // the common case, inline
        continue;
      }
      const r = step(line, c);
      line = r >> 1;
      if (r & 1) progress = true;
    }
  } else {
    let bytes;
    if (chunk instanceof Uint8Array) bytes = chunk;
    else if (ArrayBuffer.isView(chunk)) bytes = new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    else if (chunk instanceof ArrayBuffer) bytes = new Uint8Array(chunk);
    else throw typeError("chunk", "a Uint8Array, an ArrayBuffer or a string", chunk, "sseProgress");
    let i = 0;
    const n = bytes.length;
    // A UTF-8 BOM may itself be split across the first chunks.
    while (!s.started && i < n) {
      if (bytes[i] === BOM_BYTES[s.bom]) {
        i++;
        if (++s.bom === 3) s.started = true;
      } else s.started = true;
    }
    for (; i < n; i++) {
      const c = bytes[i];
      if (line === FIELD && c !== LF && c !== CR) {
        progress = true; // the common case, inline
        continue;
      }
      const r = step(line, c);
      line = r >> 1;
      if (r & 1) progress = true;
    }
  }
  s.line = line;
  return progress;
}

/**
 * A fresh SSE progress predicate with its own line state, for one stream.
 * (`withStallTimeout` makes one for you when given `sseProgress`.)
 */
export function createSseProgress() {
  const state = freshState();
  return (chunk) => scan(chunk, state);
}

/**
 * The ready predicate for SSE bodies: pass it as `isProgress`, and each
 * wrapped stream gets its own line state (see `createSseProgress`). Called
 * directly, it judges one chunk on its own, as if it started a line.
 * @throws {TypeError} for chunks that are neither bytes nor text
 */
export function sseProgress(chunk) {
  return scan(chunk, freshState());
}
