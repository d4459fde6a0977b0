// A root's and a derived deadline's signal() + dispose(), timed inside runWithDeadline (the ambient
// store exists, so each wake-up queued reads it), two builds in alternating rounds, medians of 15.
//   node bench/ambient-ab.mjs BEFORE_DIR AFTER_DIR      deno run -A bench/ambient-ab.mjs BEFORE_DIR AFTER_DIR
// (bench/ab.mjs times the same paths outside any runWithDeadline.)
const isDeno = typeof Deno !== "undefined";
const [a, b] = isDeno ? Deno.args : process.argv.slice(2);
const load = async (d) => { const l = await import(new URL(`${d.replace(/\/$/, "")}/${isDeno ? "index.js" : "node.js"}`, `file://${process.cwd()}/`).href); await l.init(); return l; };
const libs = [await load(a), await load(b)];
const N = 100_000, R = 15;
const res = { root: [[], []], derived: [[], []] };
for (const [k, lib] of libs.entries()) lib.runWithDeadline(lib.Deadline.in(1e9), () => 0);
for (let r = 0; r < R; r++) for (const [k, lib] of libs.entries()) {
  const outer = lib.Deadline.in(1e9);
  await lib.runWithDeadline(outer, async () => {
    let t = performance.now();
    for (let i = 0; i < N; i++) { const d = lib.Deadline.in(10_000); d.signal(); d.dispose(); }
    res.root[k].push((performance.now() - t) * 1e6 / N);
    const root = lib.Deadline.in(1e9); root.signal();
    t = performance.now();
    for (let i = 0; i < N; i++) { const d = root.reserve(100); d.signal(); d.dispose(); }
    res.derived[k].push((performance.now() - t) * 1e6 / N);
    root.dispose();
  });
}
const med = (xs) => xs.sort((x, y) => x - y)[xs.length >> 1].toFixed(1);
for (const k of ["root", "derived"]) console.log(`${isDeno ? "deno" : "node"} ${k} (inside runWithDeadline): before ${med(res[k][0])} ns, after ${med(res[k][1])} ns`);
