// Node users: ESM import of the installed package (the `node` condition; the
// first call reads the .wasm from disk, no init()), require() of it (proves no
// top-level await), both entries together, TypeScript resolving the `types`
// condition, and the budget-trace example.
import assert from "node:assert/strict";
import { cpSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { bin, project, runOk } from "./lib.mjs";

const IMPORT = `
import assert from "node:assert/strict";
import * as lib from "edge-deadline";
assert.match(import.meta.resolve("edge-deadline"), /\\/node_modules\\/edge-deadline\\/node\\.js$/);
assert.equal(lib.LatencySketch, undefined, "the derive concepts are not in the main entry");
const d = lib.Deadline.in(50); // no init(): the first call loads the .wasm
await lib.init();
await lib.init(); // still valid, twice too
assert.ok(d.remaining() > 0 && d.remaining() <= 50);
const keepAlive = setTimeout(() => {}, 5_000); // a deadline's timer never keeps Node alive by itself
const e = await new Promise((resolve) => d.signal().addEventListener("abort", () => resolve(d.signal().reason)));
clearTimeout(keepAlive);
assert.ok(lib.isDeadlineExceeded(e));
console.log("ok", Object.keys(lib).length, "exports");
`;

// Node 20.19+ loads ESM through require() unless the graph has top-level await.
const REQUIRE = `
const lib = require("edge-deadline");
const derive = require("edge-deadline/derive");
if (typeof lib.init !== "function" || typeof lib.Deadline !== "function") throw new Error("exports missing");
const sketch = new derive.LatencySketch();
sketch.add(lib.Deadline.in(5).remaining());
console.log("ok", sketch.count === 1);
`;

const TS = `
import { Deadline, init, isStreamStalled, withStallTimeout, type StallPhase } from "edge-deadline";
import { LatencySketch, init as initDerive } from "edge-deadline/derive";
await init();
await initDerive();
const d: Deadline = Deadline.in(100);
new LatencySketch().add(d.remaining());
const phase: StallPhase = "stall";
const s: ReadableStream<Uint8Array> = withStallTimeout(new ReadableStream<Uint8Array>(), { firstChunkMs: 1, stallMs: 1, deadline: d });
export const ok: boolean = isStreamStalled(phase) || s.locked;
// @ts-expect-error: a string is not a number of milliseconds
Deadline.in("5");
`;

export async function checkNode(g, packed) {
  const dir = await project("node", packed.tarball, { copy: { "node/budget-trace.mjs": "budget-trace.mjs" } });

  await g.check("ESM import resolves the `node` entry, the first call reads the .wasm (no init()), a deadline fires", async () => {
    writeFileSync(join(dir, "import.mjs"), IMPORT);
    const { stdout } = await runOk(bin.node, ["import.mjs"], { cwd: dir, timeoutMs: 20_000 });
    assert.match(stdout, /^ok \d+ exports/);
  });

  await g.check("a .wasm the first call cannot read: a plain-words error with the cause, then init(bytes) works (nothing half-loaded)", async () => {
    // A copy of the installed package without its .wasm, imported by path.
    const copy = join(dir, "copy");
    cpSync(join(dir, "node_modules/edge-deadline"), copy, { recursive: true });
    rmSync(join(copy, "edge_deadline_bg.wasm"));
    writeFileSync(
      join(dir, "missing.mjs"),
      `import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { Deadline, init } from "./copy/node.js";
const e = (() => { try { Deadline.in(10); } catch (error) { return error; } })();
assert.match(e?.message ?? "", /Deadline.in was used before the WebAssembly core was loaded; call \\\`await init\\(\\)\\\` first/);
assert.equal(e.cause?.code, "ENOENT", "the cause says what failed");
await init(readFileSync("node_modules/edge-deadline/edge_deadline_bg.wasm"));
assert.ok(Deadline.in(10).remaining() > 0);
console.log("ok");
`,
    );
    const { stdout } = await runOk(bin.node, ["missing.mjs"], { cwd: dir, timeoutMs: 20_000 });
    assert.equal(stdout.trim(), "ok");
  });

  await g.check("a Node without process.getBuiltinModule (before 20.16): the first call asks for init(), then init() with no argument loads it", async () => {
    // The entry takes node:fs from process.getBuiltinModule (an import of it costs
    // Node's loader about 1.4 ms); this Node is made to lack it, as 20.0–20.15 do.
    writeFileSync(
      join(dir, "old-node.mjs"),
      `import assert from "node:assert/strict";
const { Deadline, init } = await import("edge-deadline");
const e = (() => { try { Deadline.in(10); } catch (error) { return error; } })();
assert.match(e?.message ?? "", /Deadline.in was used before the WebAssembly core was loaded; call \\\`await init\\(\\)\\\` first/);
await init();
assert.ok(Deadline.in(10).remaining() > 0);
console.log("ok");
`,
    );
    const { stdout } = await runOk(bin.node, ["--import", "data:text/javascript,delete process.getBuiltinModule", "old-node.mjs"], { cwd: dir, timeoutMs: 20_000 });
    assert.equal(stdout.trim(), "ok");
  });

  await g.check("require() loads it too (no top-level await anywhere in the graph)", async () => {
    writeFileSync(join(dir, "require.cjs"), REQUIRE);
    const { stdout } = await runOk(bin.node, ["--no-warnings", "require.cjs"], { cwd: dir, timeoutMs: 20_000 });
    assert.equal(stdout.trim(), "ok true");
  });

  await g.check("TypeScript resolves the types (module nodenext and bundler)", async () => {
    writeFileSync(join(dir, "usage.mts"), TS);
    for (const [module, resolution] of [["nodenext", "nodenext"], ["esnext", "bundler"]]) {
      await runOk(
        bin.node,
        [bin.tsc, "--noEmit", "--strict", "--target", "es2022", "--lib", "es2022,dom,esnext.disposable", "--module", module, "--moduleResolution", resolution, "usage.mts"],
        { cwd: dir, timeoutMs: 60_000 },
      );
    }
  });

  await g.check("examples/node/budget-trace.mjs runs against the installed package", async () => {
    const { stdout } = await runOk(bin.node, ["budget-trace.mjs"], { cwd: dir, timeoutMs: 20_000 });
    const [fast, slowRetrieval, slowGeneration] = stdout.split("\n\n");
    assert.match(fast, /response\s+200 with the answer/);
    assert.match(slowRetrieval, /generation\s+not started: \d+ ms left < 300 ms/);
    assert.match(slowRetrieval, /fallback/);
    assert.match(slowGeneration, /generation\s+aborted at its deadline/);
  });
}
