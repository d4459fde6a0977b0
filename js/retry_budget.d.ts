// Types for js/retry_budget.js. The options and the window's counts are generated
// from the Rust core (src/core/retry_budget.rs) into edge_deadline.d.ts.
import type { BudgetCounts, BudgetOptions } from "./edge_deadline.js";

export type { BudgetCounts };

/** `ratio` (default 0.2), `minPerSecond` (10), `windowMs` (10 000): Finagle's defaults, the core's. */
export type RetryBudgetOptions = BudgetOptions;

/** A retry allowance shared across calls. Holds Wasm memory until `dispose()`. */
export class RetryBudget implements Disposable {
  /** @throws {TypeError} | {RangeError} naming the option (e.g. ratio outside [0, 1]) */
  constructor(options?: RetryBudgetOptions);
  counts(): BudgetCounts;
  dispose(): void;
  [Symbol.dispose](): void;
}
