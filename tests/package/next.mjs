// The package in Vercel's Edge Runtime, as users meet it: a Next.js app (the real `next`, built and
// started) whose route handler runs on the edge runtime and imports the package with no init() and no
// bundler option (the `edge-light` condition and the .wasm imported with `?module`), and the `edge-runtime`
// package's own sandbox running an IIFE bundle, where `init()` with no argument has no module URL to look
// beside and must say what to pass instead of a bare "Invalid URL".
import assert from "node:assert/strict";
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { bin, freePort, isolatedEnv, project, root, runOk, start } from "./lib.mjs";

export async function checkNext(g, packed) {
  const dir = await project("next", packed.tarball);
  // As if `npm install next react react-dom`: the dev toolchain's copies, linked in.
  for (const name of ["next", "react", "react-dom"]) symlinkSync(join(root, "node_modules", name), join(dir, "node_modules", name), "dir");
  const env = { ...isolatedEnv(dir), NEXT_TELEMETRY_DISABLED: "1" };
  // The linked toolchain lives outside the project: Turbopack compiles only files under its root.
  writeFileSync(join(dir, "next.config.mjs"), `export default { turbopack: { root: "/" } };\n`);
  mkdirSync(join(dir, "app/api/deadline"), { recursive: true });
  writeFileSync(join(dir, "app/layout.js"), "export default function RootLayout({ children }) {\n  return children;\n}\n");
  writeFileSync(
    join(dir, "app/api/deadline/route.js"),
    `import { Deadline, ambientDeadline, currentDeadline, runWithDeadline, withStallTimeout } from "edge-deadline";
import { LatencySketch } from "edge-deadline/derive";

export const runtime = "edge";

export async function GET(request) {
  const deadline = Deadline.forRequest(request, undefined, { budgetMs: 2_000, fallbackReserveMs: 100 });
  const body = withStallTimeout(new Response("hello").body, { firstChunkMs: 500, stallMs: 500, deadline });
  const text = await new Response(body).text();
  const sketch = new LatencySketch();
  for (let ms = 1; ms <= 100; ms++) sketch.add(ms);
  // The ambient deadline across an await (the runtime's AsyncLocalStorage global).
  const ambient = await runWithDeadline(deadline, async () => {
    await new Promise((resolve) => setTimeout(resolve, 5));
    return currentDeadline() === deadline;
  });
  const answer = { edge: typeof EdgeRuntime, text, left: deadline.remaining(), limit: deadline.limit, p99: Math.round(sketch.quantile(0.99)), ambientDeadline, ambient };
  deadline.dispose();
  return Response.json(answer);
}
`,
  );

  await g.check("next build + next start: an edge route handler uses the package with no init() and no bundler option (edge-light, ?module); the ambient deadline crosses awaits", async () => {
    await runOk(bin.node, [join(dir, "node_modules/next/dist/bin/next"), "build"], { cwd: dir, env, timeoutMs: 110_000 });
    const manifest = JSON.parse(readFileSync(join(dir, ".next/server/middleware-manifest.json"), "utf8"));
    const route = manifest.functions["/api/deadline/route"];
    assert.equal(route?.wasm?.length, 2, "the main and the derive .wasm are the route's Wasm bindings");
    const port = await freePort();
    const server = start(bin.node, [join(dir, "node_modules/next/dist/bin/next"), "start", "-H", "127.0.0.1", "-p", String(port)], { cwd: dir, env });
    try {
      await server.waitFor(/Ready/, 60_000);
      const res = await fetch(`http://127.0.0.1:${port}/api/deadline`, { headers: { "edge-deadline-remaining-ms": "800" } });
      const got = await res.json();
      assert.equal(res.status, 200, JSON.stringify(got));
      assert.equal(got.edge, "string", "it ran in the edge runtime (EdgeRuntime is defined there)");
      assert.equal(got.text, "hello");
      assert.equal(got.limit, "caller");
      assert.ok(got.left > 0 && got.left <= 700, `${got.left}`);
      assert.ok(Math.abs(got.p99 - 99) <= 1, `${got.p99}`);
      assert.equal(got.ambientDeadline, "async");
      assert.equal(got.ambient, true, "currentDeadline() after an await inside runWithDeadline");
      assert.doesNotMatch(server.stderr, /init\(\)/);
    } finally {
      await server.kill();
    }
  });

  await g.check("edge-runtime: init() with no argument in a bundle without a module URL says what to pass; init(bytes) then works", async () => {
    const esbuild = await import(join(root, "node_modules/esbuild/lib/main.js"));
    // What a bundler that does not know the edge-light condition makes: the browser entry, in a script.
    const { outputFiles } = await esbuild.build({
      absWorkingDir: dir,
      stdin: {
        contents: `import { init, Deadline } from "edge-deadline";
globalThis.result = (async () => {
  const first = await init().then(() => "loaded", (e) => ({ name: e.name, code: e.code, param: e.param, message: e.message }));
  await init(globalThis.wasmBytes);
  return { first, left: Deadline.in(1_000).remaining() };
})();`,
        resolveDir: dir,
      },
      bundle: true,
      format: "iife",
      conditions: ["browser"],
      target: "es2022",
      write: false,
      logLevel: "silent",
    });
    const { EdgeRuntime } = await import(join(root, "node_modules/edge-runtime/dist/index.js"));
    const wasmBytes = new Uint8Array(readFileSync(join(dir, "node_modules/edge-deadline/edge_deadline_bg.wasm")));
    const runtime = new EdgeRuntime({ extend: (context) => Object.assign(context, { wasmBytes }) });
    runtime.evaluate(outputFiles[0].text);
    const { first, left } = await runtime.evaluate("globalThis.result");
    assert.equal(first.name, "TypeError");
    assert.equal(first.code, "NO_WASM_URL");
    assert.equal(first.param, "source");
    assert.match(first.message, /init\(bytes\).*init\(module\).*init\(url\)/);
    assert.ok(left > 900 && left <= 1_000, `${left}`);
  });
}
