// Types for js/hedge.js. The policy's data (`delayMs`, `maxAttempts`, the
// core's default 2) is generated from the Rust core (src/core/hedge.rs) into
// edge_deadline.d.ts.
import type { HedgeOptions as HedgePolicyOptions } from "./edge_deadline.js";
import type { Deadline } from "./index.js";
import type { OtelOption } from "./otel.js";

/** `hedge`'s options: the core's policy and what the host owns. */
export interface HedgeOptions extends HedgePolicyOptions, OtelOption {
  deadline: Deadline;
  signal?: AbortSignal;
}

/**
 * Starts `fn`, and another attempt every `delayMs` while none has answered; the first to resolve
 * wins and the others are aborted (`AbortError`). A parent signal that aborts stops new attempts and aborts
 * those in flight with its reason. Awaiting it keeps a Node or Deno process alive until it settles.
 * @throws {RetryFailed} (as a rejection) when every attempt failed ("exhausted") or the deadline/signal ended it
 */
export function hedge<T>(fn: (signal: AbortSignal, info: { attempt: number }) => T | PromiseLike<T>, options: HedgeOptions): Promise<Awaited<T>>;
