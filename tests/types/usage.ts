// Compiled with `tsc --noEmit` by tests/run.mjs ("types"): the .d.ts must
// accept real usage and reject misuse (the @ts-expect-error lines fail the
// check if the types ever stop catching them).
import {
  Deadline,
  DeadlineExceeded,
  InsufficientBudget,
  InvalidHeader,
  StepTimeout,
  deadlineFromHeaders,
  generationBudget,
  init,
  isDeadlineExceeded,
  isInsufficientBudget,
  isInvalidHeader,
  isSkipped,
  isStepTimeout,
  isTimeout,
  plan,
  retry,
  platformDeadline,
  RetryBudget,
  toHeaders,
} from "edge-deadline";
import type { AttemptRecord, Skipped, StepOutcome, StepSpec, TraceRecord } from "edge-deadline";
import { LatencySketch } from "edge-deadline/derive";
import type { LatencySketchJSON } from "edge-deadline/derive";
import { ConcurrencyLimiter, concurrencyBound, deriveTimeouts, parsePrometheus, simulate, tailShape } from "edge-deadline/derive";
import type { DerivedTimeout, PrometheusHistogram, Scenario, Simulation, TailShape, WarningCode } from "edge-deadline/derive";

/** The data types generated from the Rust ones reach the public API. */
export function derived(rows: { ms: number; outcome: string; model: string }[], text: string) {
  const out: DerivedTimeout[] = deriveTimeouts(rows, { by: ["model"], q: 0.999 });
  const code: WarningCode = out[0].warnings[0].code;
  const timeout: number | null = out[0].timeoutMs;
  const bucket: string | undefined = out[0].bucket["model"];
  const hists: PrometheusHistogram[] = parsePrometheus(text, { metric: "x" });
  const unit: "seconds" | "milliseconds" | "unknown" = hists[0].unit;
  const again: DerivedTimeout[] = deriveTimeouts(hists, { safety: 1.5 });
  const shape: TailShape | null = tailShape(new Float64Array(0));
  const scenario: Scenario = { body: { medianMs: 40, sigma: 0.3 } };
  const sim: Simulation = simulate(scenario, [{ timeoutMs: 100 }]);
  const rate: number = sim.policies[0].failureRate + sim.policies[0].timeoutMs;
  const slots = new ConcurrencyLimiter({ limit: concurrencyBound({ ratePerSec: 50, timeoutMs: 100 }) });
  // @ts-expect-error: warning codes are a closed set
  const wrong: WarningCode = "unknown-warning";
  // @ts-expect-error: a scenario needs its body's sigma
  simulate({ body: { medianMs: 40 } });
  return [code, timeout, bucket, unit, again, shape, rate, slots, wrong];
}

export function sketches(received: Uint8Array[], logged: string) {
  const merged = new LatencySketch();
  for (const bytes of received) merged.merge(LatencySketch.fromBytes(bytes));
  const again: LatencySketch = LatencySketch.fromBytes((JSON.parse(logged) as LatencySketchJSON).bytes);
  const out: Uint8Array = merged.toBytes();
  const json: LatencySketchJSON = merged.toJSON();
  const p99: number | undefined = json.p99;
  // @ts-expect-error: fromBytes reads bytes or base64 text, not numbers
  LatencySketch.fromBytes([1, 2, 3]);
  return [again, out, p99];
}

export async function usage(parent: AbortSignal, module: WebAssembly.Module, bytes: Uint8Array) {
  await init();
  await init(module);
  await init(bytes);
  await init(new URL("https://example.com/x.wasm"));
  await init(fetch("https://example.com/x.wasm"));

  const edge = Deadline.in(8_000, { signal: parent });
  const at: number = Deadline.at(edge.at).at;
  const left: number = edge.reserve(500).remaining();
  const earliest: Deadline = Deadline.min(edge, Deadline.in(1_000));
  const signal: AbortSignal = earliest.signal();
  const text: string = await edge.step(100, async (s: AbortSignal, budgetMs: number) => {
    const res = await fetch("https://example.com", { signal: s });
    return `${budgetMs}: ${await res.text()}`;
  });
  const b: number = edge.budget(2_000) + generationBudget(8_000, 2_000, 500);
  {
    using scoped = Deadline.in(10);
    scoped.signal();
  }
  try {
    edge.budget(1);
  } catch (e) {
    if (isDeadlineExceeded(e)) console.log(e.at, e.lateByMs);
    if (isInsufficientBudget(e)) console.log(e.remainingMs, e.minMs);
    if (e instanceof DeadlineExceeded || e instanceof InsufficientBudget) console.log(e.name);
  }
  // @ts-expect-error: milliseconds are numbers
  Deadline.in("5");
  // @ts-expect-error: the constructor is private
  new Deadline();
  // @ts-expect-error: min needs at least one deadline
  Deadline.min();
  return [at, left, signal, text, b];
}

/** Plans, step timeouts, hook errors and header rejections as a handler uses them. */
export async function pipeline(headers: Headers) {
  const { deadline, rejected } = deadlineFromHeaders(headers, { maxMs: 8_000 });
  for (const r of rejected) {
    const e: InvalidHeader = r.error;
    console.log(r.header, e.header, isInvalidHeader(e));
  }
  const hookErrors: string[] = [];
  const p = plan(deadline, [
    { name: "generate", minMs: 100, kind: "optional" },
    { name: "respond", minMs: 50, kind: "fallback" },
  ], { onStep: (r: TraceRecord) => console.log(r.outcome), onStepError: (e: unknown, r: TraceRecord) => hookErrors.push(`${r.step}: ${String(e)}`) });
  try {
    await p.run("generate", (signal) => fetch("https://example.com", { signal }));
  } catch (e) {
    if (isStepTimeout(e)) console.log(e.step, e.capMs);
    if (e instanceof StepTimeout) console.log(e.name);
  }
  const outcome: StepOutcome = "timeout";
  await retry(() => 1, { deadline, attemptMinMs: 10, attemptTimeoutMs: 0, backoff: { baseMs: 1, maxMs: 2, jitter: 0 }, idempotent: true, classify: () => "permanent" });
  // @ts-expect-error: classify answers one of three words
  await retry(() => 1, { deadline, attemptMinMs: 10, backoff: { baseMs: 1, maxMs: 2, jitter: 0 }, idempotent: true, classify: () => 5 });
  // @ts-expect-error: the header name is a string
  new InvalidHeader(5, "bad");
  // The data types come from the Rust core (edge_deadline.d.ts): kinds, bounds and stop words are string enums.
  // @ts-expect-error: "required" is not a step kind
  plan(deadline, [{ name: "x", minMs: 1, kind: "required" }]);
  const { bound } = platformDeadline({ platform: "vercel-edge", productMs: 1_000, fallbackReserveMs: 0 });
  // @ts-expect-error: a bound is "product", "wall" or "first-byte"
  const wrongBound: typeof bound = "cpu";
  const counts: { requests: number; retries: number; floor: number } = new RetryBudget().counts();
  toHeaders(deadline, { format: ["grpc-timeout", "connect-timeout-ms"] });
  // @ts-expect-error: not a propagation header
  toHeaders(deadline, { format: "x-timeout" });
  return [outcome, hookErrors, wrongBound, counts];
}

/** The short forms users write first, and what must not compile. */
export async function ergonomics(request: Request, specs: StepSpec[]) {
  const edge = Deadline.in(8_000, request.signal); // the parent signal in the options' place
  Deadline.at(edge.at, request.signal);
  // @ts-expect-error: a number is neither options nor a signal
  Deadline.in(8_000, 5);

  const p = plan(edge, [
    { name: "retrieve", minMs: 50, kind: "optional" },
    { name: "generate", minMs: 200, kind: "mandatory" },
    { name: "respond", minMs: 20, kind: "fallback" },
  ]);
  const docs = await p.run("retrieve", async () => ["a doc"]);
  // @ts-expect-error: an optional step may be skipped, so its result is not a plain string[]
  const notChecked: string[] = docs;
  const found: string[] = isSkipped(docs) ? [] : docs;
  const skipped: Skipped | string[] = docs;
  const text: string = await p.run("generate", async () => "an answer"); // mandatory: never Skipped
  const fallback: number = await p.run("respond", () => 1); // fallback: never Skipped
  // @ts-expect-error: no step of this plan is called "generte"
  await p.run("generte", () => 1);

  // Steps the compiler cannot see: names are strings and any step may be skipped.
  const q = plan(edge, specs);
  const any: number | Skipped = await q.run("whatever", () => 1);
  // @ts-expect-error: a step of unknown kind may have been skipped
  const plain: number = await q.run("whatever", () => 1);

  // retry with only a deadline, and the hook.
  const records: AttemptRecord[] = [];
  const r: string = await retry(async () => "ok", { deadline: edge });
  await retry(async () => "ok", { deadline: edge, onAttempt: (rec) => records.push(rec) });
  // @ts-expect-error: the deadline is required
  await retry(async () => "ok", {});
  // @ts-expect-error: idempotent is a boolean
  await retry(async () => "ok", { deadline: edge, idempotent: "yes" });

  try {
    await fetch("https://example.com", { signal: edge.signal() });
  } catch (e) {
    const timedOut: boolean = isTimeout(e) || isTimeout(e, edge.signal());
    console.log(timedOut);
  }
  return [notChecked, found, skipped, text, fallback, any, plain, r, records];
}
