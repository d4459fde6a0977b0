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
// The rule is the core's (src/core/sse.rs `SseLine`): each chunk is scanned there, one Wasm call
// per chunk with its bytes. A JS twin of the scan was measured against that call and was not faster
// by more than noise at event-sized chunks (bench/sse-scan.mjs, BENCHMARKS.md), so there is none;
// this file keeps only what a host keeps: the line state between chunks and a leading byte-order mark.
//
// # Invariants
// 1. A chunk is progress iff it holds at least one character of a line that
//    is neither a comment (first character `:`), nor blank, nor one whose
//    field name is exactly `retry` (the core's rule, its `sse.progress` rows).
// 2. Chunk boundaries do not change the answer for an event: the state carried
//    between chunks is the core's line state (one byte) and how much of a
//    leading byte-order mark was seen.
// 3. Bytes and text give the same answers: text is scanned as its UTF-8 bytes,
//    and in UTF-8, CR, LF and `:` never occur inside a multi-byte character.

import * as core from "./edge_deadline.js";
import { isReady, notReady } from "./load.js";
import { typeError } from "./validate.js";

const BOM_BYTES = [0xef, 0xbb, 0xbf];

/** The state one stream carries between chunks. */
function freshState() {
  return { line: 0, bom: 0, started: false }; // the core's line state: at the start of a line
}


/** Scans one chunk in the core, updating `s`; returns whether it holds field characters. */
function scan(chunk, s) {
  if (!isReady()) notReady("sseProgress");
  let r;
  if (typeof chunk === "string") {
    let text = chunk;
    if (!s.started && text.length > 0) {
      s.started = true;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1); // the spec strips one leading BOM
    }
    r = core.sseScanText(s.line, text);
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
    r = core.sseScan(s.line, i === 0 ? bytes : bytes.subarray(i));
  }
  s.line = r >> 1;
  return (r & 1) === 1;
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
