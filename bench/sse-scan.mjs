// Per chunk, the SSE progress scan: one Wasm call per chunk with its bytes (the core's `SseLine`, what
// js/sse.js does: `createSseProgress`) against a JS twin of the same scan (below, as js/sse.js had it
// before: the candidate for the hot path). Chunks of 16, 128 and 1 024 bytes shaped like SSE events,
// rounds interleaved, each row its median round. Prints one JSON line.
//   node bench/sse-scan.mjs     deno run -A bench/sse-scan.mjs     bun bench/sse-scan.mjs
import { loadPackage, nsPerItemInterleaved, runtimeName } from "./harness.mjs";

const lib = await loadPackage();
if (typeof lib.init === "function") await lib.init();
const N = 200_000;
const ROUNDS = 7;
const encoder = new TextEncoder();
const chunkOf = (size) => encoder.encode(`data: ${"x".repeat(Math.max(1, size - 8))}\n\n`).subarray(0, size);

// ---- the JS twin (the candidate) ----
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
    else throw new TypeError("chunk");
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

function twin() {
  const state = { line: LINE_START, bom: 0, started: false };
  return (chunk) => scan(chunk, state);
}

const variants = [];
for (const size of [16, 128, 1024]) {
  const chunk = chunkOf(size);
  for (const [label, make] of [[`JS twin, ${size} B`, twin], [`core per chunk (js/sse.js), ${size} B`, lib.createSseProgress]]) {
    variants.push([label, () => {
      const progress = make();
      let n = 0;
      for (let i = 0; i < N; i++) if (progress(chunk)) n++;
      return n;
    }]);
  }
}
console.log(JSON.stringify({ runtime: runtimeName(), rows: nsPerItemInterleaved(variants, { n: N, rounds: ROUNDS, what: "chunks were progress" }) }));
