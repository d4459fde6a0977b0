import type { MiddlewareHandler } from "hono";
import type { Deadline } from "./index.js";

/** What the middleware puts on the context, typed for `c.get` / `c.set` on any Hono app (Hono's own way: no generics). */
export interface DeadlineVariables {
  /** The request's deadline (also `currentDeadline()` inside the handlers). */
  deadline: Deadline;
  /** A plan the handler sets (`c.set("plan", p)`) for `serverTiming` to report its steps. */
  plan: { serverTiming(): string };
}

declare module "hono" {
  interface ContextVariableMap extends DeadlineVariables {}
}

export interface DeadlineMiddlewareOptions {
  /**
   * The product's budget for one request, in ms. Without it, the platform's wall-clock or first-byte cap
   * (`caps.wallMs`, `caps.firstByteMs`, or "vercel-edge"'s 25 s) bounds the deadline; where there is none
   * ("cloudflare-workers" and "deno-deploy" document no wall-clock limit, and `cpuMs` is not one), only the
   * caller's headers and the client (the request's signal) do.
   */
  budgetMs?: number;
  /** The platform whose documented caps bound the request (see `Deadline.forPlatform`); default `"custom"` (only `caps`). */
  platform?: "cloudflare-workers" | "deno-deploy" | "vercel-edge" | "custom";
  /** The platform's plan, where its caps depend on it (`"free"`, `"paid"`). */
  plan?: string;
  /** Caps of your own deployment: `{ wallMs, firstByteMs, cpuMs }`. */
  caps?: { wallMs?: number; firstByteMs?: number; cpuMs?: number };
  /** Held back from whichever bound wins, for the fallback response. Default 0. */
  fallbackReserveMs?: number;
  /** Subtracted from an incoming header's duration (the time it took to reach us). Default 0. */
  transitMs?: number;
  /** Incoming header formats to read; default every format of `deadlineHeaders`. */
  formats?: string | string[];
  /**
   * Append a `Server-Timing` header: an `edge-deadline` metric (handler time; the budget, what set it
   * and what was left as the description) and, when the handler did `c.set("plan", p)`, the plan's steps.
   * Default false.
   */
  serverTiming?: boolean;
  /**
   * Link the request's abort signal (the client leaving aborts the deadline's signal). Default true.
   * Deno.serve prints a notice the first time a request's signal is read (it also aborts it after
   * successful responses); pass false, or run Deno with `--unstable-no-legacy-abort`, to avoid it.
   */
  requestSignal?: boolean;
}

/**
 * Hono middleware: a deadline per request from the platform's caps, the incoming propagation
 * headers and `budgetMs` (the smallest wins, less `fallbackReserveMs`), at `c.get("deadline")` and
 * `currentDeadline()`. Its signal aborts when the client leaves; it is disposed when the response
 * body is finished or cancelled (at once for a HEAD request, whose body Hono drops). In Workers, Deno and Node the first request loads the Wasm core; in a
 * browser, call `await init()` from "edge-deadline" before serving.
 * @throws {TypeError | RangeError} bad options, when the middleware is created (`MISSING_OPTION` naming
 *   `options` when there is no `budgetMs`, `platform` or `caps` at all)
 * @example
 * app.use(deadline({ budgetMs: 8_000, platform: "cloudflare-workers", fallbackReserveMs: 300 }));
 * app.get("/", (c) => c.text(`${c.get("deadline").remaining()} ms left`));
 */
export function deadline(options?: DeadlineMiddlewareOptions): MiddlewareHandler<{ Variables: DeadlineVariables }>;
