import type { Deadline } from "./index.js";

/**
 * How far `currentDeadline()` reaches on this host: `"async"` (across awaits: Node ≥ 20.16, Deno,
 * workerd with `nodejs_compat` and a compatibility date from 2024-09-23) or `"sync"` (only until `fn`'s first await:
 * browsers and hosts without AsyncLocalStorage; pass the deadline explicitly past an await there).
 */
export const ambientDeadline: "async" | "sync";
/**
 * Runs `fn()` with `deadline` as the ambient deadline (see {@link currentDeadline}); returns what
 * `fn` returns. The deadline is not disposed. Callbacks the package runs later from its timers
 * (hedge attempts, `onStep` at a cap, abort listeners on a deadline's signal) see the deadline of
 * the code that set them up.
 * @throws {TypeError} `deadline` is not a Deadline, `fn` is not a function
 */
export function runWithDeadline<T>(deadline: Deadline, fn: () => T): T;
/** The deadline of the innermost `runWithDeadline` around this code, or `undefined` (see `ambientDeadline`). */
export function currentDeadline(): Deadline | undefined;
