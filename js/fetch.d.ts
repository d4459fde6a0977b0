// Types for js/fetch.js: `fetchWithDeadline`, above the stall guard and the resumable read. Its options
// are declared beside the stall guard's (./stall.d.ts), which they extend.
import type { FetchDeadlineOptions } from "./stall.js";

/**
 * `fetch` that tells the upstream the remaining budget (`propagate`), whose signal is linked to the deadline (and its parents), `init.signal` and a
 * `Request` input's signal, with `firstByteMs` on the headers and a wrapped body
 * (see `withStallTimeout`).
 * The body errors with the abort reason itself (never a runtime's unbranded copy).
 * With `retry`, a failure before content is retried invisibly (the promise resolves with the first answer that is
 * read, or a non-ok one that is not retried); after content the body resumes (`Last-Event-ID` on an event stream,
 * else `resume`) or errors.
 * @throws {TypeError} (as a rejection) bad options; {RangeError} limits that are negative, NaN, infinite, or `stallMs` 0;
 *   rejects with `DeadlineExceeded`, `StreamStalled` ("first-byte"), the caller's or a deadline parent's abort reason or a network error
 */
export function fetchWithDeadline(input: RequestInfo | URL, init: RequestInit | undefined, options: FetchDeadlineOptions): Promise<Response>;
