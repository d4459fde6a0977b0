// The main .wasm's memory (Rust's default allocator): freed blocks are reused, and
// what the core computes does not change however its memory was used before.
import { equal, ok } from "../assert.js";
import { glue } from "../../../pkg/main.js";
import { memoryBytes } from "../pipeline-support.js";

const wasmBytes = () => memoryBytes(glue);

/**
 * One round of the main core's allocating calls, with sizes from a few bytes
 * to a few KB (step lists, header values, messages, schedules); returns
 * what they answered, as text.
 */
function round(lib, i) {
  const d = lib.Deadline.in(60_000);
  const steps = Array.from({ length: 1 + (i % 40) }, (_, k) => ({ name: `step-${k}-${"x".repeat((i * 7 + k) % 110)}`, minMs: 1, preferredMs: 10 + k, kind: "optional" }));
  const p = lib.plan(d, [...steps, { name: "respond", minMs: 5, kind: "fallback" }]);
  const info = p.steps.map((name) => name.length).join(",");
  const incoming = lib.Deadline.fromHeaders({ "grpc-timeout": `${1 + (i % 900)}m`, "x-envoy-expected-rq-timeout-ms": String(500 + i) }, { maxMs: 30_000 });
  const platform = lib.Deadline.forPlatform({ platform: "cloudflare-workers", trigger: "wait-until", productMs: 60_000, fallbackReserveMs: 1_000 });
  const schedule = lib.backoffSchedule({ baseMs: 100, maxMs: 2_000, jitter: 1 }, 1 + (i % 12), i);
  let refused = "";
  try {
    lib.plan(d, [{ name: `n${"n".repeat(i % 100)}`, minMs: 20, preferredMs: 10, kind: "optional" }]);
  } catch (e) {
    refused = `${e.code} ${e.param} ${e.message.length}`;
  }
  const out = [info, incoming.remaining() <= 30_000, platform.remaining() <= 59_000, schedule.join(","), refused].join("|");
  for (const x of [d, incoming, platform]) x.dispose();
  return out;
}

const cases = [
  {
    name: "alloc: 10 000 rounds of plans, headers, platform deadlines, schedules and errors leave the main .wasm's memory as after the first 1 000",
    run: (lib) => {
      for (let i = 0; i < 1_000; i++) round(lib, i);
      const warm = wasmBytes();
      for (let i = 1_000; i < 10_000; i++) round(lib, i);
      equal(wasmBytes(), warm, "Wasm memory grew once every size had been freed and reused");
    },
  },
  {
    name: "alloc: an SSE progress predicate holds no Wasm memory: 50 000 predicates, each fed its chunks and dropped, leave the memory as the first 1 000 did",
    run: (lib) => {
      // Where no finalizer runs (Workers without enable_weak_ref), memory a predicate held would never come back.
      const chunks = [new TextEncoder().encode("\ufeff: ping\n\ndata: a"), "\n\n"];
      const feed = () => {
        const isProgress = lib.createSseProgress();
        return chunks.map((c) => isProgress(c)).join();
      };
      for (let i = 0; i < 1_000; i++) equal(feed(), "true,false");
      const warm = wasmBytes();
      for (let i = 0; i < 50_000; i++) feed();
      equal(wasmBytes(), warm, "Wasm memory grew: each predicate kept some");
    },
  },
  {
    name: "alloc: answers do not depend on what the memory held before (the same round, before and after 5 000 others)",
    run: (lib) => {
      const first = Array.from({ length: 50 }, (_, i) => round(lib, i));
      for (let i = 0; i < 5_000; i++) round(lib, (i * 31) % 997);
      const again = Array.from({ length: 50 }, (_, i) => round(lib, i));
      ok(first.every((r) => r.includes("|true|true|") && r.includes("MIN_ABOVE_PREFERRED")), first[0]);
      equal(again.join("\n"), first.join("\n"));
    },
  },
];

export default cases;
