// Deadlines in a real Deno.serve (run by Deno; tests/run.mjs `servers`). Prints one JSON report line.
import { Deadline } from "../../pkg/deno.js";
import { clientGone } from "./client-gone.js";

const report = { runtime: `servers (deno ${Deno.version.deno})`, passed: 0, failed: 0, skipped: 0, failures: [] };
try {
  const { afterMs } = await clientGone({ Deadline }, (handler) => {
    const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, handler);
    return { url: `http://127.0.0.1:${server.addr.port}/`, close: () => server.shutdown() };
  }, 2_000);
  report.clientGoneMs = afterMs;
  report.passed++;
} catch (error) {
  report.failed++;
  report.failures.push({ name: "a client that leaves mid-stream: the request's deadline aborts with limit client (request.signal)", error: String(error?.stack ?? error) });
}
console.log(JSON.stringify(report));
Deno.exit(report.failed ? 1 : 0);
