// The core's message templates for the main entry, generated from the `templates!`
// declarations in src/core/ by `UPDATE_MESSAGES=1 cargo test --lib message_tables`:
// do not edit. js/errors.js renders them (`{name}`, `{name:ms}`, see src/core/error.rs).

/** @type {Record<string, string>} */
export const MESSAGES = {
  "error.TEXT": "{text}",
  "error.SHAPE": "'{param}' does not have the expected shape: {detail}",
  "deadline.NOT_FINITE": "'{param}' must be a finite number of milliseconds between 0 and {max}: current value is {value}",
  "deadline.NEGATIVE": "'{param}' must be between 0 and {max} milliseconds: current value is {value}",
  "deadline.TOO_LARGE": "'{param}' must be between 0 and {max} milliseconds (2^53 - 1): current value is {value}",
  "deadline.EXCEEDED_BY": "deadline exceeded: it passed {lateByMs:ms} ms ago",
  "deadline.EXCEEDED": "deadline exceeded: no time is left",
  "deadline.INSUFFICIENT": "insufficient budget: {remainingMs:ms} ms left, the step needs at least {minMs:ms} ms, so it was not started",
};
