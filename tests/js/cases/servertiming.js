// Server-Timing cases: `p.serverTiming()` turns a plan's trace into a header
// value (one metric per step). Runs in Node, Deno, workerd and Chromium.
import { equal, ok } from "../assert.js";

/** Parses a Server-Timing value into [{ name, dur, desc }] (the subset these cases produce). */
export function parseServerTiming(value) {
  const out = [];
  // Split on commas outside quoted strings.
  const parts = value.match(/(?:[^,"]|"(?:[^"\\]|\\.)*")+/g) ?? [];
  for (const part of parts) {
    const [name, ...params] = part.match(/(?:[^;"]|"(?:[^"\\]|\\.)*")+/g).map((s) => s.trim());
    const m = { name, dur: undefined, desc: undefined };
    for (const p of params) {
      const eq = p.indexOf("=");
      const key = p.slice(0, eq);
      const raw = p.slice(eq + 1);
      const v = raw.startsWith('"') ? raw.slice(1, -1).replace(/\\(.)/g, "$1") : raw;
      if (key === "dur") m.dur = Number(v);
      if (key === "desc") m.desc = v;
    }
    out.push(m);
  }
  return out;
}

export default [
  {
    name: "serverTiming: one metric per step run, with its duration and outcome; skipped steps included",
    run: async (lib) => {
      const d = lib.Deadline.in(400);
      const p = lib.plan(d, [
        { name: "retrieve", kind: "mandatory", minMs: 10, preferredMs: 100 },
        { name: "rerank", kind: "optional", minMs: 10_000 },
        { name: "respond", kind: "fallback", minMs: 20 },
      ]);
      equal(p.serverTiming(), "", "nothing run yet: an empty value");
      await p.run("retrieve", () => new Promise((r) => setTimeout(r, 30)));
      const skipped = await p.run("rerank", () => "never");
      ok(skipped.skipped, "rerank cannot get 10 s");
      await p.run("respond", () => "done");
      const metrics = parseServerTiming(p.serverTiming());
      equal(metrics.map((m) => m.name).join(), "retrieve,rerank,respond");
      const records = p.records;
      for (let i = 0; i < 3; i++) {
        equal(metrics[i].dur, Math.round(records[i].elapsedMs * 10) / 10, `${metrics[i].name}'s duration is the trace's, to 0.1 ms`);
        ok(metrics[i].desc.startsWith(records[i].outcome), `${metrics[i].name}: '${metrics[i].desc}' starts with its outcome`);
      }
      ok(metrics[0].dur >= 29, `retrieve took its 30 ms: ${metrics[0].dur}`);
      equal(metrics[0].desc, `ok, cap ${Math.round(records[0].capMs * 10) / 10} ms`);
      equal(metrics[1].desc, "skipped");
      d.dispose();
    },
  },
  {
    name: "serverTiming: step names that are not HTTP tokens and quotes cannot break the header",
    run: async (lib) => {
      const d = lib.Deadline.in(400);
      const name = 'a "b", c;d\r\n';
      const p = lib.plan(d, [{ name, kind: "mandatory", minMs: 1 }]);
      await p.run(name, () => 1);
      const value = p.serverTiming();
      ok(!/[\r\n]/.test(value), "no line breaks");
      const metrics = parseServerTiming(value);
      equal(metrics.length, 1, `one metric in ${value}`);
      equal(metrics[0].name, "a__b___c_d__");
      // The platform's Headers accepts the value as it is.
      equal(new Headers({ "server-timing": value }).get("server-timing"), value);
      d.dispose();
    },
  },
];
