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
const lib = await import(new URL("./api.js", wasmUrl));
const sketch = new lib.LatencySketch();
sketch.addAll([5, 10, 15]);
const stream = lib.withStallTimeout(new Response("abc").body, { firstChunkMs: 1_000, stallMs: 1_000 });
const text = await new Response(stream).text();
console.log(JSON.stringify({ first, beforeRetry, budget: Deadline.in(1_000).budget(10), median: sketch.quantile(0.5), text }));
sketch.free();`);
      equal(code, 0, `exit code (${error ?? ""})`);
      const r = JSON.parse(stdout.trim().split("\n").pop());
      ok(r.first !== "resolved", "init with a wrong module resolved");
      ok(/edge-deadline/.test(r.first), `the rejection does not name the package: ${r.first}`);
      ok(/before the WebAssembly core was loaded/.test(r.beforeRetry ?? ""), `after the failed init: ${r.beforeRetry}`);
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

export default cases;
