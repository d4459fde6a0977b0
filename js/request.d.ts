// Types for js/request.js and the request members of Deadline. All durations are milliseconds. What set a
// deadline (`LimitKind`), the wire form (`Wire`) and the options the core reads (`RequestOptions`) are
// generated from the Rust core (src/core/request.rs) into edge_deadline.d.ts.
import type { LimitKind, RequestOptions, Wire } from "./edge_deadline.js";
import type { Deadline } from "./index.js";

export type { LimitKind, Wire };

/**
 * `Deadline.forRequest`'s options: a bound (`budgetMs`, a `platform` with its `plan`, or `caps`),
 * `fallbackReserveMs` held back from whichever limit wins, `transitMs` taken off a caller's header,
 * `formats` (the propagation headers read; all by default), and `requestSignal: false` to not follow
 * the request's signal.
 */
export interface ForRequestOptions extends RequestOptions {
  formats?: string | string[];
  requestSignal?: boolean;
}

/** The handler's context: Workers' `ctx`, Deno's `info` (its `completed` disposes the deadline), or undefined. */
export type RequestContext = { completed?: PromiseLike<unknown> } | object | undefined | null;

/** `Deadline.fromWire`'s options: the local cap, the estimated transit and a parent signal. */
export interface FromWireOptions {
  /** The local cap: the deadline is never later than `maxMs` from now (a caller shortens, never extends). */
  maxMs: number;
  /** Taken off the wire's `remainingMs` (default 0). */
  transitMs?: number;
  signal?: AbortSignal;
}

/** `afterResponse`'s options. */
export interface AfterResponseOptions {
  /** Whose cap on work after the response applies (default "cloudflare-workers": 30 s), or "custom" with `caps`. */
  platform?: "cloudflare-workers" | "deno-deploy" | "custom";
  plan?: "free" | "paid";
  /** Replaces the built-in cap: `{ wallMs }`. */
  caps?: { wallMs?: number; firstByteMs?: number; cpuMs?: number };
  /** Ended this long before the cap, for the work to record that it was cut (default 1000). */
  marginMs?: number;
  /** A shorter budget of your own for the work (counted from when the response was sent). */
  budgetMs?: number;
}

/**
 * Runs `work(deadline)` inside `ctx.waitUntil` once `response` has been sent (its body read to the end,
 * or cancelled because the client left; at once without a body), under a deadline that ends `marginMs`
 * before the platform's cap on work after the response. Cut work sees the deadline's signal abort with a
 * `DeadlineExceeded` whose `limit` is "background"; the waitUntil promise settles then. Returns the
 * response to answer with (its body watched, not copied).
 * @throws {TypeError} | {RangeError} a ctx without waitUntil, bad options (at once, not after the response)
 */
export function afterResponse(
  ctx: { waitUntil(promise: Promise<unknown>): void },
  response: Response,
  work: (deadline: Deadline) => unknown,
  options?: AfterResponseOptions,
): Response;
