// Per chunk, what the host does for a resumable event stream against what the plain stall guard does:
// "machine" is js/resume.js's work per chunk of a read with `retry` (two clock reads, one while the
// stall watcher samples a burst, as here after the first few chunks, and one
// `ReadMachine.chunk` call with the chunk's bytes and the time the reader kept the last piece (a hold
// and its end), which answers its first action and whether more follow: src/core/read.rs
// does the cut, the progress scan, the stall watcher's notes and the delivered ids; a chunk of whole
// events comes back as "deliver it as it came", so no bytes cross back); "guard's scan" is what the
// stall guard (js/stall.js) does per chunk of an event stream without `retry`: its SSE progress
// predicate (`createSseProgress`, one Wasm call with the bytes) and one clock read. Chunks of 16, 128
// and 1 024 bytes, each one whole event with an id; rounds interleaved, each row its median round.
// Prints one JSON line.
//   node bench/read-machine.mjs     deno run -A bench/read-machine.mjs
import { loadPackage, nsPerItemInterleaved, runtimeName } from "./harness.mjs";

const lib = await loadPackage();
if (typeof lib.init === "function") await lib.init();
// The internals the package's own tests and benches reach (js/main.js): the same loaded core.
const { glue } = await import(new URL("../pkg/main.js", import.meta.url).href);
const N = 200_000;
const ROUNDS = 7;
const encoder = new TextEncoder();
const chunkOf = (size) => encoder.encode(`id: 1\ndata: ${"x".repeat(Math.max(1, size - 15))}\n\n`);

function machine() {
  const run = new glue.RetryRun(1e12, undefined, undefined, 10, 10, 0, undefined, 3, true, undefined, false, 7n);
  const m = new glue.ReadMachine(run, 1e12, undefined, 1e9, 1e9, false, false, 1 << 24, 1 << 23);
  m.start(0);
  m.head(0, 200, true, undefined, true, undefined, undefined);
  while (m.poll() !== 0);
  return m;
}

const variants = [];
for (const size of [16, 128, 1024]) {
  const chunk = chunkOf(size);
  variants.push([`guard's scan (js/stall.js, no retry), ${size} B`, () => {
    const isProgress = lib.createSseProgress();
    let n = 0;
    let last = 0;
    for (let i = 0; i < N; i++) {
      if (isProgress(chunk)) {
        last = performance.now();
        n++;
      }
    }
    return last > 0 ? n : 0;
  }]);
  variants.push([`machine (js/resume.js with retry), ${size} B`, () => {
    const m = machine();
    let n = 0;
    let held;
    let sampling = false;
    for (let i = 0; i < N; i++) {
      // The reader kept the last piece from t to its next read (told with the chunk, as js/resume.js does);
      // while the watcher samples (flag 32), the reader's instant stands for the chunk's.
      const back = performance.now();
      const t = sampling ? back : performance.now();
      const answer = m.chunk(t, chunk, undefined, held ?? NaN, back);
      sampling = (answer & 32) !== 0;
      const first = answer & 31;
      held = t;
      if (first === 6) n++; // the chunk as it came, nothing more: the common case
      else for (let kind = first & 15; kind !== 0; kind = m.poll()) if (kind === 6 || (kind === 3 && m.count() > 0)) n++;
    }
    m.free();
    return n;
  }]);
}
console.log(JSON.stringify({ runtime: runtimeName(), rows: nsPerItemInterleaved(variants, { n: N, rounds: ROUNDS, what: "chunks were delivered" }) }));
