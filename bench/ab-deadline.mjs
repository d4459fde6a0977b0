// Before/after of the deadline and stall hot paths, two builds of the package
// in ONE process, rounds alternating between them (on a shared, loaded
// machine two separate runs differ by more than a change does):
//   node bench/ab-deadline.mjs <before-pkg-dir> [after-pkg-dir = pkg]
//   deno run -A bench/ab-deadline.mjs <before-pkg-dir> [after-pkg-dir]
// A package dir is what scripts/build.mjs writes (pkg/): build the base
// commit, copy its pkg/ aside, build the change. Prints a Markdown table of
// medians (ns per call; per chunk for the stream row).
const isDeno = typeof Deno !== "undefined";
const args = isDeno ? Deno.args : process.argv.slice(2);
const root = new URL("../", import.meta.url);
const dirs = { before: new URL(args[0].replace(/\/?$/, "/"), `file://${isDeno ? Deno.cwd() : process.cwd()}/`), after: new URL((args[1] ?? "pkg").replace(/\/?$/, "/"), root) };
const read = isDeno ? (u) => Deno.readFile(u) : async (u) => (await import("node:fs/promises")).readFile(u);
const libs = {};
for (const [k, d] of Object.entries(dirs)) {
  const lib = await import(new URL("index.js", d).href);
  await lib.init(await read(new URL("edge_deadline_bg.wasm", d)));
  libs[k] = { lib, dl: await import(new URL("deadline.js", d).href) };
}
const noop = () => {};
const N = 200_000;
const CHUNKS = 100_000;
const ROUNDS = 15;
const cases = {
  "Deadline.in(10_000).signal() + dispose": ({ lib }) => { for (let i = 0; i < N; i++) { const d = lib.Deadline.in(10_000); d.signal(); d.dispose(); } },
  "root.reserve(100).signal() + dispose": (_, root) => { for (let i = 0; i < N; i++) { const d = root.reserve(100); d.signal(); d.dispose(); } },
  "Deadline.in(10_000, { signal: parent }).signal() + dispose": ({ lib }, root, parent) => { for (let i = 0; i < N; i++) { const d = lib.Deadline.in(10_000, { signal: parent }); d.signal(); d.dispose(); } },
  "plan step's signal: AbortController + .signal + watch + unwatch": ({ dl }, root) => { for (let i = 0; i < N; i++) { const c = new AbortController(); c.signal; dl.unwatch(dl.watch(root, performance.now() + 2_000, noop, noop)); } },
  "remaining()": (_, root) => { let s = 0; for (let i = 0; i < N; i++) s += root.remaining(); return s; },
};
const CHUNK = new TextEncoder().encode("data: 01234567\n\n");
async function stream({ lib }) {
  let i = 0;
  const src = new ReadableStream({ pull(c) { if (i === CHUNKS) return c.close(); c.enqueue(CHUNK.subarray(0)); i++; } });
  const r = lib.withStallTimeout(src, { firstChunkMs: 60_000, stallMs: 60_000 }).getReader();
  for (;;) if ((await r.read()).done) break;
}
const results = {};
const record = (name, k, ns) => ((results[name] ??= { before: [], after: [] })[k]).push(ns);
for (let round = 0; round < ROUNDS; round++) {
  for (const k of round % 2 ? ["before", "after"] : ["after", "before"]) {
    const root = libs[k].lib.Deadline.in(60_000);
    root.signal();
    const parent = new AbortController().signal;
    for (const [name, fn] of Object.entries(cases)) {
      const t = performance.now();
      fn(libs[k], root, parent);
      record(name, k, ((performance.now() - t) * 1e6) / N);
    }
    const t = performance.now();
    await stream(libs[k]);
    record("withStallTimeout, per chunk", k, ((performance.now() - t) * 1e6) / CHUNKS);
    root.dispose();
  }
}
const median = (a) => [...a].sort((x, y) => x - y)[a.length >> 1];
console.log(`| ${isDeno ? `deno ${Deno.version.deno}` : `node ${process.version}`}, ns (median of ${ROUNDS}) | before | after |`);
console.log("|---|---:|---:|");
for (const [name, r] of Object.entries(results)) console.log(`| ${name} | ${median(r.before).toFixed(1)} | ${median(r.after).toFixed(1)} |`);
