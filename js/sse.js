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
// The rule is the core's (src/core/sse.rs `SseScan`: the line state and a leading byte-order mark):
// each chunk is scanned there, one Wasm call per chunk with its bytes, and the state comes back as
// a number this file keeps for the stream without reading it. A JS twin of the scan was measured
// against that call and was not faster by more than noise at event-sized chunks (bench/sse-scan.mjs,
// BENCHMARKS.md), so there is none: this file checks a chunk's type and hands it over.
//
// # Invariants
// 1. A chunk is progress iff it holds at least one character of a line that
//    is neither a comment (first character `:`), nor blank, nor one whose
//    field name is exactly `retry` (the core's rule, its `sse.progress` rows).
// 2. Chunk boundaries do not change the answer for an event: the state kept
//    between chunks is the core's (where the line is, and how much of a
//    leading byte-order mark was seen).
// 3. Bytes and text give the same answers: text is scanned as its UTF-8 bytes,
//    and in UTF-8, CR, LF and `:` never occur inside a multi-byte character.

import * as core from "./edge_deadline.js";
import { isReady, notReady } from "./load.js";
import { typeError } from "./validate.js";

/**
 * Scans one chunk in the core from the stream's `state` (0: not begun);
 * whether it holds field characters. The state after it: `core.sseScanState()`.
 */
function scan(state, chunk) {
  if (!isReady()) notReady("sseProgress");
  if (typeof chunk === "string") return core.sseScanText(state, chunk);
  let bytes;
  if (chunk instanceof Uint8Array) bytes = chunk;
  else if (ArrayBuffer.isView(chunk)) bytes = new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength);
  else if (chunk instanceof ArrayBuffer) bytes = new Uint8Array(chunk);
  else throw typeError("chunk", "a Uint8Array, an ArrayBuffer or a string", chunk, "sseProgress");
  return core.sseScan(state, bytes);
}

/**
 * A fresh SSE progress predicate with its own line state, for one stream.
 * (`withStallTimeout` makes one for you when given `sseProgress`.)
 */
export function createSseProgress() {
  let state = 0; // the core's, opaque here: a stream not begun
  return (chunk) => {
    const progress = scan(state, chunk);
    state = core.sseScanState();
    return progress;
  };
}

/**
 * The ready predicate for SSE bodies: pass it as `isProgress`, and each
 * wrapped stream gets its own line state (see `createSseProgress`). Called
 * directly, it judges one chunk on its own, as if it started a line.
 * @throws {TypeError} for chunks that are neither bytes nor text
 */
export function sseProgress(chunk) {
  return scan(0, chunk);
}
