// Deadlines in a real Bun.serve (run by Bun: `bun tests/servers/bun.mjs`; tests/run.mjs `servers`).
// Prints one JSON report line. Bun.serve closes a connection after 10 s without a byte (its default
// idleTimeout): a handler whose deadline is longer would be cut by it, whatever the deadline says.
import assert from "node:assert/strict";
import { Deadline, fetchWithDeadline } from "../../pkg/node.js";
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
  // Bun's fetch gives up after 5 minutes without a byte unless a request's `timeout` says otherwise
  // (oven-sh/bun#16682). Waiting 5 minutes is not a test: this checks both halves of the raise instead,
  // each for real: Bun reads `timeout` from a request's init (a short one cuts a silent upstream; Bun
  // checks idleness in coarse ticks, about 8 s here), and fetchWithDeadline sets it to what is left of a
  // deadline past the cap.
  "fetchWithDeadline raises Bun's fetch cap for a deadline past it: Bun's fetch gets `timeout`, the deadline's remaining time, an option Bun honours": async () => {
    // The upstream answers after 20 s; its own idle cap is off, so only the client's timeout can cut it.
    const silent = Bun.serve({ port: 0, hostname: "127.0.0.1", idleTimeout: 0, fetch: () => sleep(20_000).then(() => new Response("late")) });
    const url = `http://127.0.0.1:${silent.port}/`;
    const real = globalThis.fetch;
    const sent = [];
    try {
      const t0 = performance.now();
      const cut = await real(url, { timeout: 300 }).then(() => "answered", (e) => e);
      const ms = performance.now() - t0;
      assert.ok(cut?.name === "TimeoutError" && ms >= 250 && ms < 19_000, `timeout: 300 on a silent upstream gave ${cut} after ${ms.toFixed(0)} ms`);
      // The other checks run at the same time: only this upstream's requests are looked at.
      globalThis.fetch = (input, init) => {
        if (String(input?.url ?? input) === url) sent.push(init?.timeout);
        return real(input, init);
      };
      const stop = new AbortController();
      const deadline = Deadline.in(630_000);
      const asked = fetchWithDeadline(url, { signal: stop.signal }, { deadline }).then(() => "answered", (e) => e);
      await sleep(50);
      stop.abort(new Error("done looking"));
      const ended = await asked;
      deadline.dispose();
      assert.equal(sent.length, 1, "one request");
      assert.ok(sent[0] > 629_000 && sent[0] <= 630_000, `the request's timeout: ${sent[0]}`);
      assert.equal(ended?.message, "done looking", `the caller's abort ends it: ${ended}`);
      // Within the cap, nothing is raised: Bun's own default stands.
      sent.length = 0;
      const short = Deadline.in(200);
      const cutShort = await fetchWithDeadline(url, undefined, { deadline: short }).then(() => "answered", (e) => e);
      assert.equal(sent[0], undefined, `a deadline within the cap sets no timeout: ${sent[0]}`);
      assert.ok(cutShort?.name === "DeadlineExceeded", `${cutShort}`);
      return { cutByTimeoutMs: Math.round(ms) };
    } finally {
      globalThis.fetch = real;
      silent.stop(true);
    }
  },
};

process.exit((await serverReport(`servers (bun ${Bun.version})`, checks)) ? 0 : 1);
