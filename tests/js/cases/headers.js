// Propagation header cases: encode what is left, read what callers send,
// strictly, and propagate by default: a request made through
// `fetchWithDeadline` tells the upstream what is left of the deadline (the
// fixture server's echo route). The same file runs in Node, Deno, workerd and
// Chromium.
import { equal, near, ok, rejects, throws } from "../assert.js";
import { BRAND, badInputCases } from "../pipeline-support.js";
import { glue } from "../../../pkg/main.js";

const OWN = "edge-deadline-remaining-ms";
const FORMATS = ["grpc-timeout", "connect-timeout-ms", "x-envoy-expected-rq-timeout-ms", OWN];

/**
 * `{ propagate: true }` on a browser page whose fixture server is another
 * origin, where the default header is sent only when asked (it makes the
 * request preflighted; the stall case "…works wherever a plain fetch does…"
 * checks that default); nothing elsewhere.
 */
function askedInBrowser(ctx) {
  const crossOriginPage = typeof document !== "undefined" && new URL(ctx.fixtureUrl).origin !== location.origin;
  return crossOriginPage ? { propagate: true } : {};
}

/** The headers the fixture saw, lowercase names. */
async function echoed(lib, ctx, init, opts, input = `${ctx.fixtureUrl}/pipeline/echo-headers`) {
  const res = await lib.fetchWithDeadline(input, init, opts);
  return res.json();
}

const cases = [
  {
    name: "headers: deadlineHeaders (readable before init) is the core's list of formats, in its order",
    run: (lib) => {
      equal(JSON.stringify(lib.deadlineHeaders), JSON.stringify(glue.headerFormats()));
      ok(Object.isFrozen(lib.deadlineHeaders));
    },
  },

  // ---- propagation ------------------------------------------------------------------
  {
    name: "toHeaders sends the remaining duration (rounded down) in every format; fromHeaders reads it back",
    run: (lib) => {
      const d = lib.Deadline.in(30_000);
      const h = lib.toHeaders(d, { format: lib.deadlineHeaders });
      equal(Object.keys(h).join(), "grpc-timeout,connect-timeout-ms,x-envoy-expected-rq-timeout-ms,edge-deadline-remaining-ms");
      ok(/^\d{1,8}[HMSmun]$/.test(h["grpc-timeout"]), h["grpc-timeout"]);
      for (const name of lib.deadlineHeaders) {
        const ms = lib.parseHeader(name, h[name]);
        ok(ms <= 30_000 && ms > 29_000, `${name}: ${h[name]} → ${ms}`);
      }
      equal(Object.keys(lib.toHeaders(d)).join(), "edge-deadline-remaining-ms", "the default header");
      equal(lib.encodeHeader("grpc-timeout", 1.5), "1500000n");
      equal(lib.encodeHeader("grpc-timeout", 2 ** 40), "2147483S", "clamped below 2^31 ms");
      equal(lib.encodeHeader("connect-timeout-ms", 99.9), "99", "rounded down");
      equal(lib.encodeHeader("GRPC-Timeout", 0), "0n", "names are case-insensitive");
      equal(lib.parseHeader("grpc-timeout", "2S"), 2_000);
      equal(lib.parseHeader("grpc-timeout", " 100m\t"), 100, "optional whitespace around the value");
      // A caller shortens our deadline, never extends it; transit is subtracted.
      const back = lib.deadlineFromHeaders(new Headers({ "grpc-timeout": "500m", "connect-timeout-ms": "800" }), { maxMs: 10_000, transitMs: 20 });
      equal(back.source, "grpc-timeout");
      near(back.deadline.remaining(), 480, 15);
      const capped = lib.Deadline.fromHeaders({ "Grpc-Timeout": "99999999H" }, { maxMs: 1_000 });
      ok(capped.remaining() <= 1_000 && capped.remaining() > 950, `99999999H gives ${capped.remaining()}`);
      const none = lib.deadlineFromHeaders({ "content-type": "text/plain" }, { maxMs: 700 });
      equal(none.source, null);
      ok(none.deadline.remaining() <= 700);
      const arr = lib.deadlineFromHeaders({ "connect-timeout-ms": ["250"] }, { maxMs: 1_000 });
      ok(arr.deadline.remaining() <= 250 && arr.source === "connect-timeout-ms");
      const only = lib.deadlineFromHeaders({ "grpc-timeout": "10m", "connect-timeout-ms": "900" }, { maxMs: 1_000, formats: ["connect-timeout-ms"] });
      equal(only.source, "connect-timeout-ms");
      const parent = new AbortController();
      const linked = lib.Deadline.fromHeaders({}, { maxMs: 1_000, signal: parent.signal });
      parent.abort("gone");
      equal(linked.signal().reason, "gone");
      d.dispose();
    },
  },
  {
    name: "propagation over a real fetch: the callee reads what we sent, less transit",
    needs: ["fixtureUrl"],
    run: async (lib, ctx) => {
      const d = lib.Deadline.in(2_000);
      for (const format of ["grpc-timeout", "connect-timeout-ms", "edge-deadline-remaining-ms"]) {
        const sentAt = performance.now();
        const ours = d.at - sentAt; // at least what the header states
        const res = await fetch(`${ctx.fixtureUrl}/pipeline/echo-headers`, { headers: lib.toHeaders(d, { format }) });
        const received = await res.json();
        const readBefore = performance.now();
        const theirs = lib.deadlineFromHeaders(received, { maxMs: 60_000, transitMs: 5 });
        const readAfter = performance.now();
        equal(theirs.source, format);
        // What the callee has = what we had when sending, rounded down, less transit.
        const most = theirs.deadline.at - readAfter;
        const least = theirs.deadline.at - readBefore;
        ok(most <= ours - 5 + 1e-6, `${format}: the callee got ${most} ms, more than the ${ours} ms we had less 5 ms transit`);
        ok(least >= ours - 5 - 1 - (readBefore - sentAt), `${format}: the callee lost more than rounding and the trip: ${least} of ${ours}`);
      }
      d.dispose();
    },
  },
  {
    name: "reliability: two spellings of one header: the earliest deadline wins, in either order",
    run: (lib) => {
      for (const headers of [{ "grpc-timeout": "50m", "Grpc-Timeout": "2S" }, { "Grpc-Timeout": "2S", "grpc-timeout": "50m" }, { "GRPC-TIMEOUT": "50m", "grpc-timeout": "2S" }]) {
        const r = lib.deadlineFromHeaders(headers, { maxMs: 10_000 });
        equal(r.source, "grpc-timeout");
        ok(r.deadline.remaining() <= 50, `${JSON.stringify(headers)} gave ${r.deadline.remaining()} ms`);
      }
      // A repeated header arrives joined by a comma: each element counts, the earliest wins.
      const h = new Headers();
      h.append("connect-timeout-ms", "2000");
      h.append("connect-timeout-ms", "40");
      ok(lib.Deadline.fromHeaders(h, { maxMs: 10_000 }).remaining() <= 40);
      ok(lib.Deadline.fromHeaders({ "connect-timeout-ms": ["2000", "40"] }, { maxMs: 10_000 }).remaining() <= 40);
    },
  },
  {
    name: "reliability: a bad copy of a repeated header is refused alone: a long copy never hides the valid 50m one",
    run: (lib) => {
      const long = "9".repeat(300);
      const h = new Headers();
      h.append("grpc-timeout", long);
      h.append("grpc-timeout", "50m");
      for (const headers of [h, { "grpc-timeout": `${long}, 50m` }, { "grpc-timeout": [long, "50m"] }, { "grpc-timeout": long, "Grpc-Timeout": "50m" }]) {
        const r = lib.deadlineFromHeaders(headers, { maxMs: 10_000 });
        equal(r.source, "grpc-timeout");
        ok(r.deadline.remaining() <= 50, `the valid copy lost: ${r.deadline.remaining()} ms left`);
        equal(r.rejected.length, 1);
        equal(r.rejected[0].error.code, "HEADER_TOO_LONG");
        ok(r.rejected[0].error.message.length < 200, "the refusal does not echo the copy");
        r.deadline.dispose();
      }
      // Empty list elements are no copies; a million bad ones cost one pass and eight reports.
      const many = lib.deadlineFromHeaders({ "connect-timeout-ms": `${",".repeat(100_000)}${"x,".repeat(100_000)}40` }, { maxMs: 10_000 });
      ok(many.deadline.remaining() <= 40, `${many.deadline.remaining()}`);
      equal(many.rejected.length, 8);
    },
  },
  {
    name: "reliability: a malformed incoming header is ignored by default (cap applies, rejection reported) or a branded InvalidHeader on request",
    run: (lib) => {
      const r = lib.deadlineFromHeaders({ "grpc-timeout": "1e3S", "connect-timeout-ms": "800" }, { maxMs: 1_000 });
      equal(r.source, "connect-timeout-ms", "the valid header still counts");
      equal(r.rejected.length, 1);
      const rej = r.rejected[0].error;
      ok(lib.isInvalidHeader(rej) && !(rej instanceof RangeError), `${rej?.name}`);
      equal(rej.header, "grpc-timeout");
      ok(/'grpc-timeout' must contain only ASCII digits/.test(rej.message), rej.message);
      const capped = lib.Deadline.fromHeaders({ "grpc-timeout": "-5m" }, { maxMs: 700 });
      ok(capped.remaining() <= 700 && capped.remaining() > 600, "the local cap applies");
      const e = throws(() => lib.Deadline.fromHeaders({ "grpc-timeout": "-5m" }, { maxMs: 700, invalid: "throw" }), lib.InvalidHeader);
      equal(e.name, "InvalidHeader");
      equal(e[BRAND], "InvalidHeader");
      equal(e.header, "grpc-timeout");
      ok(!(e instanceof RangeError), "indistinguishable from the server's own bad maxMs");
      throws(() => lib.Deadline.fromHeaders({}, { maxMs: NaN }), RangeError, /'maxMs'/);
    },
  },
  {
    name: "propagation: fetchWithDeadline sends the remaining budget in the package's header, less nothing it did not spend",
    needs: ["fixtureUrl"],
    run: async (lib, ctx) => {
      const d = lib.Deadline.in(5_000);
      const before = d.remaining();
      const headers = await echoed(lib, ctx, undefined, { deadline: d, ...askedInBrowser(ctx) });
      const after = d.remaining(); // the round trip is the only time spent
      ok(/^\d+$/.test(headers[OWN] ?? ""), `a whole number of ms: ${headers[OWN]}`);
      const sent = Number(headers[OWN]);
      ok(sent <= Math.floor(before), `never more than was left at the call: ${sent} > ${before}`);
      ok(sent >= Math.floor(after), `nothing held back: ${sent} < ${after} left after the round trip`);
      for (const other of FORMATS.filter((f) => f !== OWN)) equal(headers[other], undefined, `${other} is not sent by default`);
      d.dispose();
    },
  },
  {
    name: "propagation: another format when told, several at once, none with propagate: false",
    needs: ["fixtureUrl"],
    run: async (lib, ctx) => {
      const d = lib.Deadline.in(5_000);
      let headers = await echoed(lib, ctx, undefined, { deadline: d, propagate: "grpc-timeout" });
      const grpc = headers["grpc-timeout"] ?? "";
      ok(/^\d{1,8}[HMSmun]$/.test(grpc) && lib.parseHeader("grpc-timeout", grpc) > 4_000, `grpc-timeout: ${grpc}`);
      equal(headers[OWN], undefined, "only the format asked for");
      headers = await echoed(lib, ctx, undefined, { deadline: d, propagate: ["connect-timeout-ms", OWN] });
      ok(Number(headers["connect-timeout-ms"]) > 4_000 && Number(headers[OWN]) > 4_000, JSON.stringify(headers));
      headers = await echoed(lib, ctx, undefined, { deadline: d, propagate: false });
      for (const f of FORMATS) equal(headers[f], undefined, `${f} with propagate: false`);
      d.dispose();
    },
  },
  {
    name: "propagation: the caller's own headers are kept, a header they set is not overwritten, a Request's headers too",
    needs: ["fixtureUrl"],
    run: async (lib, ctx) => {
      const d = lib.Deadline.in(5_000);
      let headers = await echoed(lib, ctx, { headers: { "x-trace": "t1", [OWN]: "42" } }, { deadline: d, ...askedInBrowser(ctx) });
      equal(headers["x-trace"], "t1");
      equal(headers[OWN], "42", "an explicit header wins: the caller said what to send");
      headers = await echoed(lib, ctx, { headers: new Headers({ "x-trace": "t2" }) }, { deadline: d, ...askedInBrowser(ctx) });
      equal(headers["x-trace"], "t2");
      ok(Number(headers[OWN]) > 4_000, "added to a Headers object");
      const request = new Request(`${ctx.fixtureUrl}/pipeline/echo-headers`, { headers: { "x-trace": "t3" } });
      headers = await echoed(lib, ctx, undefined, { deadline: d, ...askedInBrowser(ctx) }, request);
      equal(headers["x-trace"], "t3", "a Request input keeps its headers");
      ok(Number(headers[OWN]) > 4_000, "and gets the budget");
      d.dispose();
    },
  },
  {
    name: "propagation: a bad propagate option is a TypeError naming it",
    run: async (lib) => {
      const d = lib.Deadline.in(1_000);
      const type = await rejects(() => lib.fetchWithDeadline("data:,x", undefined, { deadline: d, propagate: 5 }), TypeError, /'propagate'/);
      equal(type.param, "propagate");
      equal(type.code, "INVALID_TYPE");
      const range = await rejects(() => lib.fetchWithDeadline("data:,x", undefined, { deadline: d, propagate: "x-my-header" }), RangeError, /x-my-header/);
      equal(range.param, "propagate");
      equal(range.code, "UNKNOWN_FORMAT");
      d.dispose();
    },
  },
  ...badHeaderCases(),
  ...badInputs(),
];

/** Bad input: the error class, the message, `.param` as the user wrote it and `.code`. */
function badInputs() {
  const D = (lib, ms = 10_000) => lib.Deadline.in(ms);
  return badInputCases([
    ["toHeaders: unknown format", (lib) => lib.toHeaders(D(lib), { format: "x-timeout" }), RangeError, /'format' must be one of grpc-timeout, connect-timeout-ms, x-envoy-expected-rq-timeout-ms, edge-deadline-remaining-ms: current value is 'x-timeout'/, "options.format", "UNKNOWN_FORMAT"],
    ["toHeaders: format 5", (lib) => lib.toHeaders(D(lib), { format: 5 }), TypeError, /'options.format' must be a header name/, "options.format", "INVALID_TYPE"],
    ["encodeHeader: negative remainingMs", (lib) => lib.encodeHeader("grpc-timeout", -1), RangeError, /'remainingMs' must be between 0 and/, "remainingMs", "NEGATIVE"],
    ["fromHeaders: maxMs missing", (lib) => lib.Deadline.fromHeaders({}, {}), TypeError, /'options.maxMs' must be a number of milliseconds/, "options.maxMs", "INVALID_TYPE"],
    ["fromHeaders: maxMs NaN", (lib) => lib.Deadline.fromHeaders({}, { maxMs: NaN }), RangeError, /'maxMs' must be a finite number/, "options.maxMs", "NOT_FINITE"],
    ["fromHeaders: transitMs negative", (lib) => lib.Deadline.fromHeaders({}, { maxMs: 1, transitMs: -5 }), RangeError, /'transitMs' must be between 0 and/, "options.transitMs", "NEGATIVE"],
    ["fromHeaders: headers null", (lib) => lib.Deadline.fromHeaders(null, { maxMs: 1 }), TypeError, /'headers' must be a Headers or a plain object/, "headers", "INVALID_TYPE"],
    ["fromHeaders: a header value that is a number", (lib) => lib.Deadline.fromHeaders({ "grpc-timeout": 5 }, { maxMs: 1 }), TypeError, /'headers\["grpc-timeout"\]' must be a string/, "headers[\"grpc-timeout\"]", "INVALID_TYPE"],
    ["fromHeaders: an unknown name in formats", (lib) => lib.Deadline.fromHeaders({}, { maxMs: 1, formats: ["grpc-timeout", "x-timeout"] }), RangeError, /'format' must be one of .*: current value is 'x-timeout'/, "options.formats", "UNKNOWN_FORMAT"],
    ["fromHeaders: invalid = 'warn'", (lib) => lib.Deadline.fromHeaders({}, { maxMs: 1, invalid: "warn" }), TypeError, /'options.invalid' must be "throw" or "ignore"/, "options.invalid", "INVALID_TYPE"],
  ]);
}

/** Malformed, overflowing, negative, unicode and oversized headers: each refused by name. */
function badHeaderCases() {
  const bad = [
    ["1e3S (an exponent)", "grpc-timeout", "1e3S", /'grpc-timeout' must contain only ASCII digits: current value has 'e' at byte 1/, "HEADER_NOT_DIGIT"],
    ["-5m (a sign)", "grpc-timeout", "-5m", /'grpc-timeout' must be an unsigned number/, "HEADER_SIGNED"],
    ["+5m (a sign)", "grpc-timeout", "+5m", /unsigned/, "HEADER_SIGNED"],
    ["9 digits", "grpc-timeout", "123456789m", /'grpc-timeout' must have between 1 and 8 digits: current value has 9/, "HEADER_TOO_MANY_DIGITS"],
    ["empty", "grpc-timeout", "", /'grpc-timeout' must not be empty/, "HEADER_EMPTY"],
    ["only spaces", "connect-timeout-ms", "   ", /must not be empty/, "HEADER_EMPTY"],
    ["no unit", "grpc-timeout", "100", /must end with one of the units H M S m u n: current value has none/, "HEADER_MISSING_UNIT"],
    ["a bad unit", "grpc-timeout", "100s", /current value ends with 's'/, "HEADER_BAD_UNIT"],
    ["a unit and no digits", "grpc-timeout", "m", /must start with at least one digit/, "HEADER_NO_DIGITS"],
    ["unicode digits", "grpc-timeout", "١٠m", /must contain only ASCII digits: current value has a non-ASCII byte at 0/, "HEADER_NON_ASCII"],
    ["inner whitespace", "connect-timeout-ms", "1 000", /must not contain whitespace/, "HEADER_WHITESPACE"],
    ["a decimal point", "connect-timeout-ms", "1.5", /has '.' at byte 1/, "HEADER_NOT_DIGIT"],
    ["11 digits", "connect-timeout-ms", "12345678901", /between 1 and 10 digits/, "HEADER_TOO_MANY_DIGITS"],
    ["oversized (65 bytes)", "edge-deadline-remaining-ms", "1".repeat(65), /must be at most 64 bytes: current value has 65/, "HEADER_TOO_LONG"],
    ["oversized (1 MB)", "x-envoy-expected-rq-timeout-ms", "9".repeat(1 << 20), /at most 64 bytes/, "HEADER_TOO_LONG"],
  ];
  const out = bad.map(([label, header, value, pattern, code]) => ({
    name: `bad header: ${header} = ${label} → parseHeader's RangeError; fromHeaders ignores it, or throws InvalidHeader when asked`,
    run: (lib) => {
      const direct = throws(() => lib.parseHeader(header, value), RangeError, pattern);
      equal(direct.param, "value");
      equal(direct.code, code);
      const strict = throws(() => lib.Deadline.fromHeaders({ [header]: value }, { maxMs: 1_000, invalid: "throw" }), lib.InvalidHeader, pattern);
      equal(strict.header, header);
      equal(strict.code, code, "an InvalidHeader carries the core's code");
      const lenient = lib.deadlineFromHeaders({ [header]: value }, { maxMs: 1_000 });
      equal(lenient.source, null, "a malformed header set the deadline");
      equal(lenient.rejected.length, 1);
      equal(lenient.rejected[0].header, header);
      ok(lib.isInvalidHeader(lenient.rejected[0].error));
      ok(pattern.test(lenient.rejected[0].error.message), lenient.rejected[0].error.message);
      ok(lenient.deadline.remaining() <= 1_000 && lenient.deadline.remaining() > 900, "ignored: the local cap stands");
    },
  }));
  out.push({
    name: "bad header: 99999999H overflows nothing: it parses exactly and clamps to the local cap",
    run: (lib) => {
      equal(lib.parseHeader("grpc-timeout", "99999999H"), 99_999_999 * 3_600_000);
      ok(lib.Deadline.fromHeaders({ "grpc-timeout": "99999999H" }, { maxMs: 50 }).remaining() <= 50);
    },
  });
  return out;
}


// ---- messages: the core's templates, filled in JS ----------------------------------------------
cases.push({
  name: "headers: a rejection's message and a thrown InvalidHeader read in full; time errors print numbers as JavaScript does",
  run: (lib) => {
    const max = Number.MAX_SAFE_INTEGER;
    const { rejected } = lib.deadlineFromHeaders({ "grpc-timeout": "1.5S", "connect-timeout-ms": "12345678901", "x-envoy-expected-rq-timeout-ms": "" }, { maxMs: 1_000 });
    equal(
      rejected.map((r) => `${r.header}: ${r.error.code}: ${r.error.message}`).join("\n"),
      [
        "grpc-timeout: HEADER_NOT_DIGIT: 'grpc-timeout' must contain only ASCII digits: current value has '.' at byte 1",
        "connect-timeout-ms: HEADER_TOO_MANY_DIGITS: 'connect-timeout-ms' must have between 1 and 10 digits: current value has 11",
        "x-envoy-expected-rq-timeout-ms: HEADER_EMPTY: 'x-envoy-expected-rq-timeout-ms' must not be empty",
      ].join("\n"),
    );
    const e = throws(() => lib.deadlineFromHeaders({ "grpc-timeout": "\u0000S" }, { maxMs: 1_000, invalid: "throw" }), lib.InvalidHeader);
    equal(e.message, "'grpc-timeout' must contain only ASCII digits: current value has '\\u{0}' at byte 0");
    equal(throws(() => lib.parseHeader("grpc-timeout", "5x"), RangeError).message, "'grpc-timeout' must end with one of the units H M S m u n: current value ends with 'x'");
    equal(throws(() => lib.encodeHeader("grpc-timeout", Infinity), RangeError).message, `'remainingMs' must be a finite number of milliseconds between 0 and ${max}: current value is Infinity`);
    equal(throws(() => lib.deadlineFromHeaders({}, { maxMs: 1e300 }), RangeError).message, `'maxMs' must be between 0 and ${max} milliseconds (2^53 - 1): current value is 1e+300`);
    const unknown = throws(() => lib.encodeHeader("x-timeout", 5), RangeError);
    equal(unknown.message, "'format' must be one of grpc-timeout, connect-timeout-ms, x-envoy-expected-rq-timeout-ms, edge-deadline-remaining-ms: current value is 'x-timeout'");
  },
});

export default cases;
