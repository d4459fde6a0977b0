// Interop with @connectrpc/connect-node: our parser reads the deadline its
// client sends in the Connect protocol (connect-timeout-ms, HTTP/1.1) and in
// the gRPC protocol (grpc-timeout, HTTP/2). Node only.
import assert from "node:assert/strict";
import { test } from "node:test";
import { create, createFileRegistry } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema, file_google_protobuf_wrappers } from "@bufbuild/protobuf/wkt";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { captureHttp1, captureHttp2, lib } from "./helpers.mjs";

// edge.Echo/Echo(StringValue) → StringValue, described at run time (no codegen).
const registry = createFileRegistry(
  create(FileDescriptorProtoSchema, {
    name: "edge/echo.proto",
    package: "edge",
    syntax: "proto3",
    dependency: ["google/protobuf/wrappers.proto"],
    service: [{ name: "Echo", method: [{ name: "Echo", inputType: ".google.protobuf.StringValue", outputType: ".google.protobuf.StringValue" }] }],
  }),
  (name) => (name === "google/protobuf/wrappers.proto" ? file_google_protobuf_wrappers : undefined),
);
const Echo = registry.getService("edge.Echo");

async function callAndCapture(capture, transport, timeoutMs) {
  const client = createClient(Echo, transport);
  const sentAt = performance.now();
  await client.echo({ value: "hi" }, { timeoutMs }).catch(() => {}); // the capture server answers with an error
  return { ...capture.seen.at(-1), sentAt };
}

test("our parser reads connect-timeout-ms from a @connectrpc/connect-node client (Connect protocol)", async () => {
  const capture = await captureHttp1();
  try {
    const transport = createConnectTransport({ baseUrl: capture.url, httpVersion: "1.1" });
    for (const ms of [1_500, 250, 86_400_000]) {
      const { headers, at, sentAt } = await callAndCapture(capture, transport, ms);
      assert.equal(headers["connect-protocol-version"], "1");
      const raw = headers["connect-timeout-ms"];
      assert.match(raw ?? "", /^\d+$/, "no connect-timeout-ms sent");
      assert.equal(lib.parseHeader("connect-timeout-ms", raw), ms, "connect sends the timeout as given");
      const incoming = lib.deadlineFromHeaders(headers, { maxMs: 60_000, transitMs: at - sentAt });
      assert.equal(incoming.source, ms <= 60_000 ? "connect-timeout-ms" : null);
      assert.ok(incoming.deadline.remaining() <= Math.min(ms, 60_000));
    }
  } finally {
    await capture.close();
  }
});

test("our parser reads grpc-timeout from a @connectrpc/connect-node client (gRPC protocol)", async () => {
  const capture = await captureHttp2();
  try {
    const transport = createGrpcTransport({ baseUrl: capture.url });
    for (const ms of [1_500, 99, 3_600_000]) {
      const { headers, at, sentAt } = await callAndCapture(capture, transport, ms);
      assert.equal(headers["content-type"], "application/grpc+proto");
      const raw = headers["grpc-timeout"];
      assert.ok(raw, "no grpc-timeout sent");
      const parsed = lib.parseHeader("grpc-timeout", raw);
      assert.ok(parsed <= ms && parsed >= ms - 1 - (at - sentAt), `${raw} → ${parsed} ms for ${ms} ms`);
      const incoming = lib.deadlineFromHeaders(headers, { maxMs: 60_000 });
      assert.ok(incoming.deadline.remaining() <= Math.min(ms, 60_000));
    }
  } finally {
    await capture.close();
  }
});

test("what we send, a Connect handler's parser accepts: our headers parse back to at most what we had", () => {
  const d = lib.Deadline.in(12_345.678);
  const h = lib.toHeaders(d, { format: ["connect-timeout-ms", "grpc-timeout"] });
  assert.match(h["connect-timeout-ms"], /^\d{1,10}$/, "Connect requires at most 10 digits");
  assert.ok(Number(h["connect-timeout-ms"]) <= 12_345);
  assert.match(h["grpc-timeout"], /^\d{1,8}[HMSmun]$/);
  d.dispose();
});
