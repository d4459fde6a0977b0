// Loading the Wasm core (js/load.js): what `init()` promises about failures.
// Each case needs a fresh copy of the package (the suite's own is loaded
// already): a child process in Node and Deno, a module Worker in Chromium
// (`ctx.freshPackageScript`). workerd's runner can make neither.
import { equal, ok } from "../assert.js";

/** The smallest valid WebAssembly module: it instantiates, and exports nothing. */
const EMPTY_MODULE = "new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0])";

const cases = [
  ...[
    ["an empty module's bytes", EMPTY_MODULE],
    ["a compiled empty module", `await WebAssembly.compile(${EMPTY_MODULE})`],
    ["bytes that are not WebAssembly", "new Uint8Array([1, 2, 3, 4])"],
  ].map(([kind, expr]) => ({
    name: `init: after rejecting ${kind}, init with the right .wasm works and every API works`,
    needs: ["freshPackageScript"],
    run: async (lib, ctx) => {
      const { code, stdout, error } = await ctx.freshPackageScript(`
let first = "resolved";
try {
  await init(${expr});
} catch (e) {
  first = e.name + ": " + e.message;
}
let beforeRetry;
try {
  Deadline.in(10);
} catch (e) {
  beforeRetry = e.message;
}
await init(await readBytes(wasmUrl));
await init();
const lib = await import(entryUrl);
const derive = await import(deriveUrl);
await derive.init();
const sketch = new derive.LatencySketch();
sketch.addAll([5, 10, 15]);
const stream = lib.withStallTimeout(new Response("abc").body, { firstChunkMs: 1_000, stallMs: 1_000 });
const text = await new Response(stream).text();
console.log(JSON.stringify({ first, beforeRetry, budget: Deadline.in(1_000).budget(10), median: sketch.quantile(0.5), text }));
sketch.free();`);
      equal(code, 0, `exit code (${error ?? ""})`);
      const r = JSON.parse(stdout.trim().split("\n").pop());
      ok(r.first !== "resolved", "init with a wrong module resolved");
      ok(/edge-deadline/.test(r.first), `the rejection does not name the package: ${r.first}`);
      if (ctx.loadedWithoutInit) {
        // This runtime's entry loads its own .wasm at the first call: a failed init() does not stop that.
        equal(r.beforeRetry, undefined, "the first call after the failed init loads the entry's own .wasm");
      } else {
        ok(/before the WebAssembly core was loaded/.test(r.beforeRetry ?? ""), `after the failed init: ${r.beforeRetry}`);
      }
      equal(r.budget, 10);
      ok(Math.abs(r.median - 10) <= 0.1, `median ${r.median}`);
      equal(r.text, "abc");
    },
  })),
  {
    name: "init: a source of another kind → TypeError naming 'source' (.param, .code), and init works after it",
    needs: ["freshPackageScript"],
    run: async (lib, ctx) => {
      const { code, stdout, error } = await ctx.freshPackageScript(`
const seen = [];
for (const bad of [5, true, {}]) {
  try {
    await init(bad);
    seen.push("resolved");
  } catch (e) {
    seen.push({ name: e.name, param: e.param, code: e.code, message: e.message });
  }
}
await init(await readBytes(wasmUrl));
console.log(JSON.stringify({ seen, budget: Deadline.in(1_000).budget(10) }));`);
      equal(code, 0, `exit code (${error ?? ""})`);
      const r = JSON.parse(stdout.trim().split("\n").pop());
      for (const e of r.seen) {
        equal(e.name, "TypeError", JSON.stringify(e));
        equal(e.param, "source");
        equal(e.code, "INVALID_TYPE");
        ok(/init\(source\) accepts a WebAssembly\.Module/.test(e.message), e.message);
      }
      equal(r.budget, 10);
    },
  },
];

cases.push(
  {
    name: "init: a module with this core's number of exports but one name changed is refused (the names' digest, js/digest.js), then the right .wasm loads",
    needs: ["freshPackageScript"],
    run: async (lib, ctx) => {
      const { code, stdout, error } = await ctx.freshPackageScript(`
// A module exporting one empty function under each of \`names\` (WebAssembly's binary format).
const leb = (n) => { const out = []; do { let b = n & 0x7f; n >>>= 7; if (n) b |= 0x80; out.push(b); } while (n); return out; };
const section = (id, payload) => [id, ...leb(payload.length), ...payload];
const utf8 = (s) => [...new TextEncoder().encode(s)];
const moduleExporting = (names) => new Uint8Array([
  0, 97, 115, 109, 1, 0, 0, 0,
  ...section(1, [1, 0x60, 0, 0]),
  ...section(3, [1, 0]),
  ...section(7, [...leb(names.length), ...names.flatMap((n) => [...leb(utf8(n).length), ...utf8(n), 0, 0])]),
  ...section(10, [1, 2, 0, 0x0b]),
]);
const real = await WebAssembly.compile(await readBytes(wasmUrl));
const names = WebAssembly.Module.exports(real).map((e) => e.name);
// Same count, same lengths: only the names' digest tells them apart.
names[0] = names[0].slice(0, -1) + (names[0].endsWith("x") ? "y" : "x");
const impostor = moduleExporting(names);
let first = "resolved";
try {
  await init(impostor);
} catch (e) {
  first = e.message;
}
await init(await readBytes(wasmUrl));
console.log(JSON.stringify({ first, exports: WebAssembly.Module.exports(new WebAssembly.Module(impostor)).length, expected: names.length, budget: Deadline.in(1_000).budget(10) }));`);
      equal(code, 0, `exit code (${error ?? ""})`);
      const r = JSON.parse(stdout.trim().split("\n").pop());
      equal(r.exports, r.expected, "the impostor has as many exports as the core");
      ok(/not this package's core/.test(r.first), `init with the impostor: ${r.first}`);
      equal(r.budget, 10);
    },
  },
  {
    name: "load: where the runtime's entry can load its .wasm itself (workerd, Deno, Node), the first call needs no init()",
    needs: ["loadedWithoutInit", "freshPackageScript"],
    run: async (lib, ctx) => {
      const { code, stdout, error } = await ctx.freshPackageScript(`
const signal = Deadline.in(1_000).signal();
const derive = await import(deriveUrl);
const sketch = new derive.LatencySketch();
sketch.addAll([4, 8]);
console.log(JSON.stringify({ aborted: signal.aborted, count: sketch.count }));
sketch.free();`);
      equal(code, 0, `exit code (${error ?? ""})`);
      const r = JSON.parse(stdout.trim().split("\n").pop());
      equal(r.aborted, false);
      equal(r.count, 2);
    },
  },
  {
    name: "load: a LatencySketch (edge-deadline/derive) takes a plan's trace records (edge-deadline): two cores, plain values between them",
    run: async (lib) => {
      const deadline = lib.Deadline.in(5_000);
      const p = lib.plan(deadline, [
        { name: "a", minMs: 1, preferredMs: 1_000, kind: "mandatory" },
        { name: "b", minMs: 1, preferredMs: 1_000, kind: "mandatory" },
      ]);
      await p.run("a", () => "x");
      await p.run("b", () => "y");
      deadline.dispose();
      const records = p.records;
      ok(records.length === 2 && records.every((r) => typeof r.elapsedMs === "number"), JSON.stringify(records));
      const sketch = new lib.LatencySketch();
      try {
        sketch.addAll(records.map((r) => r.elapsedMs));
        equal(sketch.count, 2);
        ok(sketch.quantile(1) >= 0);
      } finally {
        sketch.free();
      }
    },
  },
);

export default cases;
