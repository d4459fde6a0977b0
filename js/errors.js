// Error classes of edge-deadline.
//
// Why a brand and not only `instanceof`: a Worker bundle, a test runner or a
// monorepo can load two copies of this package, and then an error thrown by
// one copy is not an instance of the other copy's class. Worse, workerd hands
// a fetch's abort reason back as a *clone* (measured: a plain Error keeping
// name, message and own enumerable fields; symbols and the prototype are lost).
// So every error carries an own enumerable string property
// `edgeDeadlineError === error.name`, and the `isX` guards check that: they
// work across copies, realms and workerd's clone.
//
// The Wasm core creates errors through the factory functions at the bottom
// (imported by the wasm-bindgen glue as `./errors.js`), so the core and the JS
// API throw instances of the very same classes.

const BRAND = "edgeDeadlineError";

export function brand(error, name) {
  Object.defineProperty(error, "name", { value: name, configurable: true, writable: true });
  error[BRAND] = name;
}

/** Milliseconds for a message: whole, or to 0.1 ms (the exact value stays on the error's fields). */
export function ms(n) {
  return Number.isInteger(n) ? String(n) : n.toFixed(1);
}

/** The deadline passed: the work it bounded is no longer worth finishing. */
export class DeadlineExceeded extends Error {
  /**
   * @param {number} at the deadline instant (ms on the `performance.now()` timeline)
   * @param {number} lateByMs how long after the instant this was observed (≥ 0)
   */
  constructor(at, lateByMs, options) {
    super(
      lateByMs > 0
        ? `deadline exceeded: it passed ${ms(lateByMs)} ms ago`
        : "deadline exceeded: no time is left",
      options,
    );
    brand(this, "DeadlineExceeded");
    this.at = at;
    this.lateByMs = lateByMs;
  }
}

/** A step declared a minimum it needs, and less than that is left: it was not started. */
export class InsufficientBudget extends Error {
  /**
   * @param {number} remainingMs time left when the step asked
   * @param {number} minMs the step's declared minimum
   */
  constructor(remainingMs, minMs, options) {
    super(
      `insufficient budget: ${ms(remainingMs)} ms left, the step needs at least ${ms(minMs)} ms, so it was not started`,
      options,
    );
    brand(this, "InsufficientBudget");
    this.remainingMs = remainingMs;
    this.minMs = minMs;
  }
}

/**
 * A step of a plan reached its own cap while the deadline still had time: the
 * step was cut, the request was not. A handler runs the fallback (or tries
 * something cheaper) instead of answering 504. `DeadlineExceeded` is kept for
 * the deadline itself.
 */
export class StepTimeout extends Error {
  /**
   * @param {string} step the step's name
   * @param {number} capMs the cap it was given
   */
  constructor(step, capMs, options) {
    super(`step '${step}' timed out at its ${ms(capMs)} ms cap; the deadline still has time`, options);
    brand(this, "StepTimeout");
    this.step = step;
    this.capMs = capMs;
  }
}

/**
 * An incoming deadline header is malformed. Its value comes from the caller
 * (possibly hostile), so it is not a `RangeError` (those are the server's own
 * bad arguments): `Deadline.fromHeaders` ignores such a header by default and
 * reports it; with `invalid: "throw"` it throws this, naming the header.
 */
export class InvalidHeader extends Error {
  /**
   * @param {string} header the header's name, lowercase
   * @param {string} message what is wrong with its value
   */
  constructor(header, message, options) {
    super(message, options);
    brand(this, "InvalidHeader");
    this.header = header;
  }
}

/** @returns {e is DeadlineExceeded} */
export function isDeadlineExceeded(e) {
  return e != null && e[BRAND] === "DeadlineExceeded";
}

/** @returns {e is InsufficientBudget} */
export function isInsufficientBudget(e) {
  return e != null && e[BRAND] === "InsufficientBudget";
}

/** @returns {e is StepTimeout} */
export function isStepTimeout(e) {
  return e != null && e[BRAND] === "StepTimeout";
}

/** @returns {e is InvalidHeader} */
export function isInvalidHeader(e) {
  return e != null && e[BRAND] === "InvalidHeader";
}

// Factories for the Wasm core (see src/wasm/mod.rs). Not re-exported by the API.
export function rangeError(message) {
  return new RangeError(message);
}
export function deadlineExceeded(at, lateByMs) {
  return new DeadlineExceeded(at, lateByMs);
}
export function insufficientBudget(remainingMs, minMs) {
  return new InsufficientBudget(remainingMs, minMs);
}
