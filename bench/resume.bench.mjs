// Streams that recover: what `retry` costs a relay per chunk when nothing
// fails, and how soon a stream that stalls mid-answer is resumed.
// Prints one JSON line: { runtime, rows: { label: nsPerChunk }, ratios, resume? }.
//   node bench/resume.bench.mjs        deno run -A bench/resume.bench.mjs
//   workerd: `node bench/run.mjs resume` runs `run(lib)` inside a fetch handler
//   (the per-chunk rows; the resume timing needs a local server: Node and Deno).
//
// Per chunk: every row drains a relayed body of N chunks from the same kind
// of in-memory source, so the rows differ only in the relay's options. The
// bodies: SSE events without ids (16 bytes, as the stream bench's), SSE
// events with ids (the case that tracks `Last-Event-ID`), and plain bytes.
// Rounds are interleaved across rows; each row reports its median round.
//
// Resume: a local HTTP upstream sends 20 events with ids, then stalls in the
// middle of the 21st; the relay (stallMs STALL_MS) resumes with
// `Last-Event-ID`. Measured from the reader's 20th event to its 21st, against
// the stall limit plus the resumed request's own time to headers.
import { loadPackage, runtimeName } from "./harness.mjs";

const isWorkerd = globalThis.navigator?.userAgent === "Cloudflare-Workers";

const N = 30_000;
const ROUNDS = 15;
const LIMIT = 60_000; // limits no chunk comes near: the healthy path
const enc = new TextEncoder();
const BODIES = {
  "SSE, no ids": { type: "text/event-stream", chunk: () => enc.encode("data: 01234567\n\n") },
  "SSE with ids": { type: "text/event-stream", chunk: (i) => enc.encode(`id: ${i}\ndata: 0123\n\n`) },
  "plain bytes": { type: "application/octet-stream", chunk: () => enc.encode("0123456789abcdef") },
};

function body({ type, chunk }) {
  // Chunks made before the clock starts: the rows time the relay, not the encoder.
  const chunks = Array.from({ length: N }, (_, i) => chunk(i + 1));
  let i = 0;
  return () => {
    i = 0;
    const stream = new ReadableStream({
      pull(c) {
        if (i === N) return c.close();
        c.enqueue(chunks[i++]);
      },
    });
    return new Response(stream, { headers: { "content-type": type } });
  };
}

async function drain(res) {
  const reader = res.body.getReader();
  let n = 0;
  for (;;) {
    const { done } = await reader.read();
    if (done) return n;
    n++;
  }
}

export async function run(lib, { resume: withResume = false } = {}) {
  const limits = { firstChunkMs: LIMIT, stallMs: LIMIT };
  const cases = {};
  for (const [name, spec] of Object.entries(BODIES)) {
    const make = body(spec);
    cases[`relay, ${name}`] = () => lib.relay(make(), { deadline: lib.Deadline.in(LIMIT), ...limits });
    cases[`relay + retry, ${name}`] = () => lib.relay(() => make(), { deadline: lib.Deadline.in(LIMIT), ...limits, retry: true });
  }
  const times = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));
  for (let round = -1; round < ROUNDS; round++) {
    for (const [label, relayed] of Object.entries(cases)) {
      const t0 = performance.now();
      const n = await drain(await relayed());
      const dt = performance.now() - t0;
      // A relay may pass on several events in one chunk, never fewer bytes: count chunks the reader got.
      if (n === 0 || n > N) throw new Error(`${label}: drained ${n} chunks`);
      if (round >= 0) times[label].push((dt * 1e6) / N);
    }
  }
  const rows = {};
  for (const [label, xs] of Object.entries(times)) rows[label] = +xs.sort((a, b) => a - b)[xs.length >> 1].toFixed(1);
  const ratios = {};
  for (const name of Object.keys(BODIES)) ratios[`relay + retry / relay, ${name} (target ≤ 1.1)`] = +(rows[`relay + retry, ${name}`] / rows[`relay, ${name}`]).toFixed(3);
  const result = { runtime: isWorkerd ? "workerd" : runtimeName(), chunks: N, rows, ratios };
  if (withResume) result.resume = await resumeTiming(lib);
  return result;
}

const STALL_MS = 100;
const SAMPLES = 15;

/**
 * The reader's gap across a mid-stream stall, split: the stall limit and how
 * late the resumed request left after it, the resumed request's own time to
 * headers (one retry's connect time), and from its headers to the event.
 */
async function resumeTiming(lib) {
  const { createServer } = await import("node:http");
  let stalled = 0;
  const server = createServer((req, res) => {
    const from = Number(req.headers["last-event-id"] ?? 0) + 1;
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-store" });
    const first = from === 1;
    if (first) stalled++;
    for (let i = from; i <= 40; i++) {
      if (first && i === 21) return void res.write(`id: ${i}\ndata: tok`); // the stall, mid-event
      res.write(`id: ${i}\ndata: ${i}\n\n`);
    }
    res.end();
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${server.address().port}`;
  const samples = [];
  try {
    for (let s = 0; s < SAMPLES + 1; s++) {
      const m = {};
      const upstream = async (signal, { headers, attempt }) => {
        m[`call${attempt}`] = performance.now();
        const res = await fetch(`${url}/events`, { signal, headers });
        m[`headers${attempt}`] = performance.now();
        return res;
      };
      const res = await lib.relay(upstream, { deadline: lib.Deadline.in(10_000), stallMs: STALL_MS, retry: { attemptMinMs: 50 } });
      const reader = res.body.getReader();
      let text = "";
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        text += new TextDecoder().decode(value);
        if (m.at20 === undefined && text.includes("id: 20\n")) m.at20 = performance.now();
        if (m.at21 === undefined && text.includes("id: 21\n")) m.at21 = performance.now();
      }
      const ids = [...text.matchAll(/^id: (\d+)$/gm)].map((x) => Number(x[1]));
      if (ids.length !== 40 || ids.some((id, k) => id !== k + 1)) throw new Error(`resume: the reader got ${ids.join(",")}`);
      // The first sample warms up. The half event 21 came with event 20: the stall counts from there.
      if (s > 0) samples.push({ gap: m.at21 - m.at20, late: m.call2 - m.at20 - STALL_MS, connect: m.headers2 - m.call2, event: m.at21 - m.headers2 });
    }
  } finally {
    server.closeAllConnections?.();
    server.close();
  }
  const p50 = (k) => +samples.map((x) => x[k]).sort((a, b) => a - b)[samples.length >> 1].toFixed(1);
  const max = (k) => +Math.max(...samples.map((x) => x[k])).toFixed(1);
  return {
    stallMs: STALL_MS,
    samples: samples.length,
    "event 20 → event 21, p50 / max ms": [p50("gap"), max("gap")],
    "resumed request made after the stall limit, late by p50 / max ms": [p50("late"), max("late")],
    "resumed request to its headers (one connect), p50 / max ms": [p50("connect"), max("connect")],
    "headers to event 21 at the reader, p50 / max ms": [p50("event"), max("event")],
    "gap over stallMs + connect, p50 ms": +(p50("gap") - STALL_MS - p50("connect")).toFixed(1),
    stalledConnections: stalled,
  };
}

async function main() {
  console.log(JSON.stringify(await run(await loadPackage(), { resume: true })));
}
if (!isWorkerd && !globalThis.NO_MAIN) main();
