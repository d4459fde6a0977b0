// Interop with @grpc/grpc-js: its server reads our grpc-timeout as the call's
// deadline, and our parser reads what its client sends. Node only.
import assert from "node:assert/strict";
import { connect } from "node:http2";
import { after, before, test } from "node:test";
import * as grpc from "@grpc/grpc-js";
import { captureHttp2, lib, wallAt } from "./helpers.mjs";

// A unary method without protobuf: bytes in, bytes out.
const identity = (b) => b;
const ECHO = {
  echo: {
    path: "/edge.Echo/Echo",
    requestStream: false,
    responseStream: false,
    requestSerialize: identity,
    requestDeserialize: identity,
    responseSerialize: identity,
    responseDeserialize: identity,
  },
};

let server;
let port;
const calls = [];

before(async () => {
  server = new grpc.Server();
  server.addService(ECHO, {
    echo(call, callback) {
      calls.push({ deadline: call.getDeadline(), receivedAt: Date.now() });
      callback(null, Buffer.from("ok"));
    },
  });
  port = await new Promise((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))),
  );
});

after(() => new Promise((resolve) => server.tryShutdown(resolve)));

/** One unary gRPC call over node:http2 carrying `headers`; resolves the grpc-status. */
function rawCall(headers) {
  return new Promise((resolve, reject) => {
    const session = connect(`http://127.0.0.1:${port}`);
    session.on("error", reject);
    const stream = session.request({
      ":method": "POST",
      ":path": "/edge.Echo/Echo",
      "content-type": "application/grpc",
      te: "trailers",
      ...headers,
    });
    let status;
    stream.on("response", (h) => (status ??= h["grpc-status"]));
    stream.on("trailers", (t) => (status = t["grpc-status"]));
    stream.on("error", reject);
    stream.on("close", () => {
      session.close();
      resolve(status);
    });
    stream.resume();
    // One gRPC message: flag 0, 4-byte big-endian length, "hi".
    stream.end(Buffer.from([0, 0, 0, 0, 2, 0x68, 0x69]));
  });
}

for (const ms of [1_500, 250, 45_000]) {
  test(`a @grpc/grpc-js server sees our grpc-timeout for ${ms} ms as its call deadline`, async () => {
    const d = lib.Deadline.in(ms);
    const expected = wallAt(d); // our deadline on the wall clock grpc-js uses
    const sentAt = Date.now(); // no later than the moment the header is encoded
    const headers = lib.toHeaders(d, { format: "grpc-timeout" });
    assert.match(headers["grpc-timeout"], /^\d{1,8}[HMSmun]$/);
    assert.equal(await rawCall(headers), "0");
    const { deadline, receivedAt } = calls.at(-1);
    assert.equal(typeof deadline, "number", `getDeadline() is ${deadline}`);
    // grpc-js: deadline = Date.now() at receipt + the parsed timeout (whole ms).
    // We round down, so the server's deadline is ours, at most late by the trip
    // (from encoding to receipt) and early by rounding (and the wall clock's 1 ms steps).
    const trip = receivedAt - sentAt;
    assert.ok(deadline <= expected + trip + 1, `server deadline ${deadline - expected} ms after ours (trip ${trip} ms)`);
    assert.ok(deadline >= expected - 3, `server deadline ${expected - deadline} ms before ours`);
    d.dispose();
  });
}

test("a @grpc/grpc-js server given no time left sees a deadline that has already arrived", async () => {
  const d = lib.Deadline.in(0);
  const headers = lib.toHeaders(d, { format: "grpc-timeout" });
  assert.equal(headers["grpc-timeout"], "0n");
  await rawCall(headers);
  const { deadline, receivedAt } = calls.at(-1);
  assert.ok(deadline <= receivedAt, `the server gave a spent call ${deadline - receivedAt} ms`);
});

test("our parser reads the grpc-timeout a @grpc/grpc-js client sends for its deadline", async () => {
  const capture = await captureHttp2();
  const client = new grpc.Client(`127.0.0.1:${capture.port}`, grpc.credentials.createInsecure());
  try {
    for (const ms of [1_500, 90_000, 3]) {
      const sentAt = performance.now();
      await new Promise((resolve) =>
        client.makeUnaryRequest("/edge.Echo/Echo", identity, identity, Buffer.from("hi"), new grpc.Metadata(), { deadline: Date.now() + ms }, () => resolve()),
      );
      const { headers, at } = capture.seen.at(-1);
      const raw = headers["grpc-timeout"];
      assert.ok(raw, "no grpc-timeout sent");
      const parsed = lib.parseHeader("grpc-timeout", raw);
      // grpc-js rounds up to its unit (m, S, M, H), so ±1 ms and the time it took to send.
      assert.ok(parsed <= ms + 1 && parsed >= ms - 1 - (at - sentAt), `${raw} → ${parsed} ms for a ${ms} ms deadline`);
      const incoming = lib.deadlineFromHeaders(headers, { maxMs: 60_000, transitMs: 0 });
      assert.equal(incoming.source, ms <= 60_000 ? "grpc-timeout" : null, "the local cap must win over a longer caller deadline");
      assert.ok(incoming.deadline.remaining() <= Math.min(ms, 60_000) + 1);
      incoming.deadline.dispose();
    }
  } finally {
    client.close();
    await capture.close();
  }
});
