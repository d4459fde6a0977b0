// Opt-in recording into a TimeoutBook (edge-deadline/derive): a plan step's,
// a retry's attempts' or a relay's latencies and outcomes, with
// `record: book` in their options. Duck-typed (anything with
// `record(bucket, ms, outcome)`), so the main entry imports nothing of the
// derive entry; a call without `record` pays one property read. Kept small:
// it is in every Worker that uses plan, retry or relay.

import { typeError } from "./validate.js";

/** A call's outcome as the book counts it: cut by time, a timeout; failed, an error; a client that left, nothing. */
const KINDS = { ok: "ok", timeout: "timeout", deadline: "timeout", error: "error", stalled: "error" };

/**
 * `(outcome, ms) => void` recording into `o.record` under `o.bucket`
 * (default `bucket`), or undefined without `o.record`. What the book
 * throws is reported and never changes the call's result.
 */
export function recorder(o, bucket) {
  const book = o?.record;
  if (book === undefined) return undefined;
  if (typeof book?.record !== "function") throw typeError("options.record", "a TimeoutBook", book);
  const name = o.bucket ?? bucket;
  if (typeof name !== "string" || !name) throw typeError("options.bucket", "a bucket name", name);
  return (outcome, ms) => {
    const kind = KINDS[outcome];
    if (kind === undefined) return;
    try {
      book.record(name, ms > 0 ? ms : 0, kind);
    } catch (error) {
      console.error(error);
    }
  };
}
