// Types for js/headers.js. All durations are milliseconds. The header names
// and the options the core reads are generated from the Rust core
// (src/core/headers.rs) into edge_deadline.d.ts.
import type { HeaderFormat, IncomingOptions } from "./edge_deadline.js";
import type { Deadline, InvalidHeader } from "./index.js";

/** A propagation header this package reads and writes (the core's `HeaderFormat`). */
export type DeadlineHeader = HeaderFormat;

/** Every header this package reads and writes, in the order `fromHeaders` consults them. */
export const deadlineHeaders: readonly DeadlineHeader[];

/** The remaining duration as a header value, rounded down. @throws {RangeError} */
export function encodeHeader(format: DeadlineHeader, remainingMs: number): string;
/** The duration a header value states; strict. @throws {RangeError} naming the header and the fault */
export function parseHeader(format: DeadlineHeader, value: string): number;

/** What is left of `deadline` as headers (default format `edge-deadline-remaining-ms`). */
export function toHeaders(deadline: Deadline, options?: { format?: DeadlineHeader | readonly DeadlineHeader[] }): Record<string, string>;

export type HeadersLike = Headers | Record<string, string | readonly string[] | undefined>;

/** The local cap (`maxMs`: never later than now + maxMs) and `transitMs` (subtracted, default 0) are the core's. */
export interface FromHeadersOptions extends IncomingOptions {
  /** Which headers to read (default: all four). */
  formats?: DeadlineHeader | readonly DeadlineHeader[];
  /**
   * A malformed header (caller-controlled) is ignored and reported in `rejected` (default "ignore"), or
   * thrown as an `InvalidHeader` ("throw"). Never a `RangeError`: those are this server's own bad options.
   */
  invalid?: "throw" | "ignore";
  signal?: AbortSignal;
}

/**
 * The deadline the headers ask for, with the header that set it and those refused. Every copy of a header
 * counts (two spellings in a plain object, a repeated field): the earliest wins.
 * @throws {InvalidHeader} a malformed header, only with `invalid: "throw"`; {TypeError} | {RangeError} bad options
 */
export function deadlineFromHeaders(
  headers: HeadersLike,
  options: FromHeadersOptions,
): { deadline: Deadline; source: DeadlineHeader | null; rejected: { header: DeadlineHeader; error: InvalidHeader }[] };
