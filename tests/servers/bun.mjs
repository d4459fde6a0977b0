// Deadlines in a real Bun.serve (run by Bun: `bun tests/servers/bun.mjs`; tests/run.mjs `servers`).
// Prints one JSON report line. Bun.serve closes a connection after 10 s without a byte (its default
// idleTimeout): a handler whose deadline is longer would be cut by it, whatever the deadline says.
import assert from "node:assert/strict";
import { Deadline } from "../../pkg/node.js";
import { clientGone, serverReport } from "./client-gone.js";

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** A server whose handler answers after `answerMs`, taking its deadline from `Deadline.forRequest` or not. */
function serve(answerMs, withDeadline) {
  return Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(request, server) {
      const deadline = withDeadline ? Deadline.forRequest(request, server, { budgetMs: 20_000, fallbackReserveMs: 0 }) : undefined;
      await sleep(answerMs);
      deadline?.dispose();
      return new Response("answered");
    },
  });
}

async function ask(server) {
  const t0 = performance.now();
  try {
    const res = await fetch(`http://127.0.0.1:${server.port}/`);
    return { text: await res.text(), ms: performance.now() - t0 };
  } catch (error) {
    return { error: `${error?.name} ${error?.code ?? ""}`.trim(), ms: performance.now() - t0 };
  } finally {
    server.stop(true);
  }
}

const checks = {
  "a client that leaves mid-stream: the request's deadline aborts with limit client (request.signal)": async () => {
    const { afterMs } = await clientGone({ Deadline }, async (handler) => {
      const server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: handler });
      return { url: `http://127.0.0.1:${server.port}/`, close: () => server.stop(true) };
    }, 2_000);
    return { clientGoneMs: afterMs };
  },
  // Both run at once: about 16 s of real time in all.
  "Bun.serve's default idle cap cuts a handler that answers after 16 s (it checks idleness in coarse ticks: between about 8 and 14 s) (the cap the package works around)": async () => {
    const got = await ask(serve(16_000, false));
    assert.ok(got.error && got.ms < 15_900, `expected the connection cut by the idle cap, got ${JSON.stringify(got)}`);
  },
  "Deadline.forRequest(request, server, { budgetMs: 20 000 }) raises it for that request: the answer at 16 s arrives": async () => {
    const got = await ask(serve(16_000, true));
    assert.equal(got.text, "answered", JSON.stringify(got));
  },
};

process.exit((await serverReport(`servers (bun ${Bun.version})`, checks)) ? 0 : 1);
