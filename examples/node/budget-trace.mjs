// A request with an 800 ms edge deadline runs auth → retrieval → generation →
// response, with stub services, and prints the budget trace a server would log.
//   npm install edge-deadline && node budget-trace.mjs
// No `init()` in Node: the first call reads and instantiates the .wasm next to the package.
import { Deadline, isDeadlineExceeded, isInsufficientBudget } from "edge-deadline";

/** A stub service that takes `ms` unless the signal aborts first. */
const service = (ms, value) => (signal) =>
  new Promise((resolve, reject) => {
    const onAbort = () => (clearTimeout(t), reject(signal.reason));
    const t = setTimeout(() => (signal.removeEventListener("abort", onAbort), resolve(value)), ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });

async function request(label, { authMs, retrievalMs, generationMs }) {
  console.log(`\n${label}`);
  const edge = Deadline.in(800);
  const start = performance.now();
  const log = (step, outcome) =>
    console.log(
      `  t=${String(Math.round(performance.now() - start)).padStart(4)} ms  ${step.padEnd(10)} ${outcome.padEnd(44)} remaining=${Math.round(edge.remaining())} ms`,
    );
  // Response handling keeps 50 ms whatever happens before it.
  const work = edge.reserve(50);
  try {
    log("auth", await work.step(20, service(authMs, "ok")));
    log("retrieval", await work.step(50, service(retrievalMs, "3 documents")));
    const answer = await work.step(300, (signal, budgetMs) => {
      log("generation", `starts with a ${Math.round(budgetMs)} ms budget`);
      return service(generationMs, "answer")(signal);
    });
    log("generation", answer);
    log("response", "200 with the answer");
  } catch (e) {
    if (isInsufficientBudget(e)) log("generation", `not started: ${Math.round(e.remainingMs)} ms left < ${e.minMs} ms`);
    else if (isDeadlineExceeded(e)) log("generation", `aborted at its deadline (late by ${e.lateByMs.toFixed(1)} ms)`);
    else throw e;
    log("response", "fallback: links to the retrieved documents");
  } finally {
    work.dispose();
    edge.dispose();
  }
}

await request("all fast", { authMs: 40, retrievalMs: 120, generationMs: 300 });
await request("slow retrieval leaves no generation budget", { authMs: 40, retrievalMs: 500, generationMs: 300 });
await request("slow generation is cut at the reserve", { authMs: 40, retrievalMs: 120, generationMs: 2_000 });
