// Wasm memory bounds, measured (figures in BENCHMARKS.md, "Memory"):
//   node bench/memory.mjs            deno run -A bench/memory.mjs
//
// 1. Forgotten sketches: 100 000 LatencySketches, 300 samples each over
//    1 ms … 5 s (about 5 KB of counters each), created in one synchronous
//    loop and never freed; Wasm memory before and after.
// 2. parsePrometheus on generated exposition text: 150 000 series of one
//    histogram family, two bucket lines each (16 MB, the shape a
//    high-cardinality exporter serves), after a quarter and a half of it:
//    time and Wasm memory growth. `node bench/memory.mjs prom 150000` parses
//    one size in a fresh process (the growth is then that parse's peak).
// Wasm memory never shrinks, so each figure is the growth of one process.
const isDeno = typeof Deno !== "undefined";
// Sketches and parses live in edge-deadline/derive's own .wasm.
const lib = await import(isDeno ? "../pkg/derive-deno.js" : "../pkg/derive-node.js");
const { glue } = await import("../pkg/derive-main.js"); // the derive entry's own copy of the glue
await lib.init();
const wasmBytes = () => Object.values(glue.initSync()).find((v) => v instanceof WebAssembly.Memory).buffer.byteLength;
const MiB = (b) => Math.round((b / 2 ** 20) * 10) / 10;
const [only, sizeArg] = isDeno ? Deno.args : process.argv.slice(2);
const out = { runtime: isDeno ? `deno ${Deno.version.deno}` : `node ${process.version}` };

if (!only || only === "sketches") {
  const N = 100_000;
  const before = wasmBytes();
  const t0 = performance.now();
  for (let i = 0; i < N; i++) {
    const s = new lib.LatencySketch();
    for (let k = 0; k < 300; k++) s.add(1 + ((k * 7919 + i) % 5000));
  }
  out.sketches = { n: N, ms: Math.round(performance.now() - t0), wasmGrowthMiB: MiB(wasmBytes() - before) };
}

if (!only || only === "prom") {
  const text = (series) => {
    const lines = [];
    for (let i = 0; i < series; i++) {
      const id = String((i * 7919) % series).padStart(6, "0"); // not in label order, as exporters write them
      lines.push(`rpc_duration_seconds_bucket{id="${id}",le="0.1"} ${i % 89}`, `rpc_duration_seconds_bucket{id="${id}",le="+Inf"} ${i % 97 + 89}`);
    }
    return lines.join("\n") + "\n";
  };
  out.prom = [];
  for (const series of sizeArg ? [Number(sizeArg)] : [40_000, 80_000, 150_000]) {
    const t = text(series);
    const before = wasmBytes();
    const t0 = performance.now();
    let result;
    try {
      result = lib.parsePrometheus(t).length;
    } catch (e) {
      result = `${e.name}: ${e.message.slice(0, 80)}`;
    }
    const ms = Math.round(performance.now() - t0);
    const growth = wasmBytes() - before;
    out.prom.push({ series, inputMB: Math.round(t.length / 1e5) / 10, result, ms, wasmGrowthMiB: MiB(growth), wasmTotalMiB: MiB(wasmBytes()) });
  }
}
console.log(JSON.stringify(out));
