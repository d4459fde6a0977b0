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
  isStepTimeout,
  plan,
  retry,
} from "edge-deadline";
import type { StepOutcome, TraceRecord } from "edge-deadline";
import { LatencySketch } from "edge-deadline";
import type { LatencySketchJSON } from "edge-deadline";

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
  return [outcome, hookErrors];
}
