// A small assertion library that runs unchanged in Node, Deno, workerd and
// Chromium (node:assert is not available in all four).

export class AssertionError extends Error {
  name = "AssertionError";
}

function show(v) {
  if (typeof v === "bigint") return `${v}n`;
  if (typeof v === "string") return JSON.stringify(v);
  if (typeof v === "number" && Object.is(v, -0)) return "-0";
  try {
    return typeof v === "object" && v !== null ? JSON.stringify(v) : String(v);
  } catch {
    return String(v);
  }
}

export function ok(value, message = "expected a truthy value") {
  if (!value) throw new AssertionError(`${message}: got ${show(value)}`);
}

export function equal(actual, expected, message = "values differ") {
  if (!Object.is(actual, expected)) throw new AssertionError(`${message}: expected ${show(expected)}, got ${show(actual)}`);
}

export function near(actual, expected, tolerance, message = "value out of tolerance") {
  if (!(Math.abs(actual - expected) <= tolerance)) {
    throw new AssertionError(`${message}: expected ${expected} ± ${tolerance}, got ${actual}`);
  }
}

function check(error, Type, pattern, where) {
  if (Type && !(error instanceof Type)) {
    throw new AssertionError(`${where}: expected a ${Type.name}, got ${error?.name}: ${error?.message}`);
  }
  if (pattern && !pattern.test(String(error?.message))) {
    throw new AssertionError(`${where}: message ${show(error?.message)} does not match ${pattern}`);
  }
  return error;
}

/** Asserts that `fn()` throws synchronously; returns the error. */
export function throws(fn, Type, pattern, where = "expected a throw") {
  let result;
  try {
    result = fn();
  } catch (error) {
    return check(error, Type, pattern, where);
  }
  throw new AssertionError(`${where}: nothing was thrown (returned ${show(result)})`);
}

/** Asserts that `promiseOrFn` rejects; returns the error. */
export async function rejects(promiseOrFn, Type, pattern, where = "expected a rejection") {
  let result;
  try {
    result = await (typeof promiseOrFn === "function" ? promiseOrFn() : promiseOrFn);
  } catch (error) {
    return check(error, Type, pattern, where);
  }
  throw new AssertionError(`${where}: it resolved (with ${show(result)})`);
}

/** Resolves on the signal's abort event (or at once if already aborted). */
export function aborted(signal) {
  return new Promise((resolve) => {
    if (signal.aborted) resolve(performance.now());
    else signal.addEventListener("abort", () => resolve(performance.now()), { once: true });
  });
}

/**
 * Asserts that `fn()` throws a `Type` whose `.param` and `.code` are the given
 * ones (and whose message matches `pattern`, when given); returns the error.
 */
export function throwsArg(fn, Type, param, code, pattern) {
  const error = throws(fn, Type, pattern);
  if (error.param !== param || error.code !== code) {
    throw new AssertionError(`expected .param ${show(param)} and .code ${show(code)}, got ${show(error.param)} and ${show(error.code)}: ${error.message}`);
  }
  return error;
}
