// Propagation by default: a request made through `fetchWithDeadline` tells
// the upstream what is left of the deadline, in the package's own header
// unless told another format, or not at all with `propagate: false`. Against
// the fixture server's echo route; runs in Node, Deno, workerd and Chromium.
import { equal, ok, rejects } from "../assert.js";

const OWN = "edge-deadline-remaining-ms";
const FORMATS = ["grpc-timeout", "connect-timeout-ms", "x-envoy-expected-rq-timeout-ms", OWN];

/** The headers the fixture saw, lowercase names. */
async function echoed(lib, ctx, init, opts, input = `${ctx.fixtureUrl}/pipeline/echo-headers`) {
  const res = await lib.fetchWithDeadline(input, init, opts);
  return res.json();
}

export default [
  {
    name: "propagation: fetchWithDeadline sends the remaining budget in the package's header, less nothing it did not spend",
    needs: ["fixtureUrl"],
    run: async (lib, ctx) => {
      const d = lib.Deadline.in(5_000);
      const before = d.remaining();
      const headers = await echoed(lib, ctx, undefined, { deadline: d });
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
      let headers = await echoed(lib, ctx, { headers: { "x-trace": "t1", [OWN]: "42" } }, { deadline: d });
      equal(headers["x-trace"], "t1");
      equal(headers[OWN], "42", "an explicit header wins: the caller said what to send");
      headers = await echoed(lib, ctx, { headers: new Headers({ "x-trace": "t2" }) }, { deadline: d });
      equal(headers["x-trace"], "t2");
      ok(Number(headers[OWN]) > 4_000, "added to a Headers object");
      const request = new Request(`${ctx.fixtureUrl}/pipeline/echo-headers`, { headers: { "x-trace": "t3" } });
      headers = await echoed(lib, ctx, undefined, { deadline: d }, request);
      equal(headers["x-trace"], "t3", "a Request input keeps its headers");
      ok(Number(headers[OWN]) > 4_000, "and gets the budget");
      d.dispose();
    },
  },
  {
    name: "propagation: a bad propagate option is a TypeError naming it",
    run: async (lib) => {
      const d = lib.Deadline.in(1_000);
      await rejects(() => lib.fetchWithDeadline("data:,x", undefined, { deadline: d, propagate: 5 }), TypeError, /'propagate'/);
      await rejects(() => lib.fetchWithDeadline("data:,x", undefined, { deadline: d, propagate: "x-my-header" }), RangeError, /x-my-header/);
      d.dispose();
    },
  },
];
