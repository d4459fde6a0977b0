// A stream's memory with and without `retry` when the upstream sends an event
// that never ends (figures in BENCHMARKS.md, "Streams that recover"):
//   node bench/stream-memory.mjs [MB]        (default 600)
//
// A local upstream (a child process, so its memory is not counted) answers
// `text/event-stream` with one event, then `data: ` and MB megabytes of `x`
// without a line end, then closes. Each row runs in a fresh Node process
// that reads the body of `fetchWithDeadline` to its end (or its error) and
// reports its peak resident set (VmHWM), its heap, how many bytes reached
// the reader and how the body ended. Rows: without `retry` (the bytes pass
// through as they come), with `retry` (events are held whole until their
// blank line, up to the caps: here the line cap ends it first), and with
// `retry` and both caps past the event (what holding it whole costs).
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";

const MB = Number(process.argv[2] ?? 600);
const self = new URL(import.meta.url).pathname;

if (process.argv[2] === "--serve") {
  const { createServer } = await import("node:http");
  const total = Number(process.argv[3]) * 1e6;
  const piece = Buffer.alloc(64 * 1024, "x");
  const server = createServer((req, res) => {
    res.writeHead(200, { "content-type": "text/event-stream", connection: "close" });
    res.write("id: 1\ndata: first\n\ndata: ");
    let sent = 0;
    const more = () => {
      while (!res.destroyed && sent < total) {
        sent += piece.length;
        if (!res.write(piece)) return void res.once("drain", more);
      }
      if (!res.destroyed) res.end();
    };
    more();
  });
  server.listen(0, "127.0.0.1", () => console.log(`http://127.0.0.1:${server.address().port}/`));
} else if (process.argv[2] === "--read") {
  const url = process.argv[3];
  const options = JSON.parse(process.argv[4]);
  const lib = await import("../pkg/node.js");
  await lib.init();
  let bytes = 0;
  let ended = "done";
  let heapPeak = 0;
  const res = await lib.fetchWithDeadline(url, undefined, { deadline: lib.Deadline.in(120_000), stallMs: 30_000, ...options });
  const reader = res.body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      bytes += value.byteLength;
      heapPeak = Math.max(heapPeak, process.memoryUsage().heapUsed + process.memoryUsage().arrayBuffers);
    }
  } catch (e) {
    ended = `${e.name} ${e.code ?? ""}`.trim();
  }
  const hwm = Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync("/proc/self/status", "utf8"))[1]) * 1024;
  console.log(JSON.stringify({ peakRssMiB: Math.round(hwm / 2 ** 20), heapAndBuffersPeakMiB: Math.round(heapPeak / 2 ** 20), delivered: bytes, ended }));
  process.exit(0);
} else {
  const server = spawn(process.execPath, [self, "--serve", String(MB)], { stdio: ["ignore", "pipe", "inherit"] });
  const url = await new Promise((resolve) => server.stdout.once("data", (d) => resolve(String(d).trim())));
  const run = (options) =>
    new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [self, "--read", url, JSON.stringify(options)], { stdio: ["ignore", "pipe", "inherit"] });
      let out = "";
      child.stdout.on("data", (d) => (out += d));
      child.on("error", reject);
      child.on("close", () => resolve(JSON.parse(out)));
    });
  const rows = {};
  try {
    rows["without retry"] = await run({});
    rows["retry (default maxEventBytes)"] = await run({ retry: true });
    rows[`retry, both caps ${MB + 1} MB (held whole)`] = await run({ retry: true, maxEventBytes: (MB + 1) * 1e6, maxLineBytes: (MB + 1) * 1e6 });
  } finally {
    server.kill();
  }
  console.log(JSON.stringify({ runtime: `node ${process.version}`, eventMB: MB, rows }, null, 1));
}
