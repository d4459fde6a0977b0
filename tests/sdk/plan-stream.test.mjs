// docs/recipes.md's "Stream a plan step to the client", imported exactly as
// printed, against the local upstream (tests/sdk/upstream.mjs): a full answer
// streams as token events and ends with the trace; a silent model gets the
// plan's fallback (503) inside the reserve; a model that stops mid-answer ends
// with an error event, then the trace. Each upstream connection is closed.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { init } from "../../pkg/node.js";
import { cleanup, loadRecipe } from "./recipe.mjs";
import { startUpstream } from "./upstream.mjs";

let upstream;
const recipes = {};
before(async () => {
  await init();
  upstream = await startUpstream();
  // The recipe's client reads these when it is made (at import): one copy per upstream behaviour.
  for (const mode of ["full", "silent", "stall"]) {
    recipes[mode] = await loadRecipe("Stream a plan step", { OPENAI_API_KEY: "test", OPENAI_BASE_URL: `${upstream.url}/${mode}/v1` });
  }
});
after(async () => {
  await upstream.close();
  cleanup();
});

const post = () => new Request("http://app.test/chat", { method: "POST", body: JSON.stringify({ messages: [{ role: "user", content: "hi" }] }) });

function events(text) {
  return text
    .split("\n\n")
    .filter((b) => b.trim() !== "")
    .map((b) => {
      const lines = b.split("\n");
      const event = lines.find((l) => l.startsWith("event: "))?.slice(7) ?? "message";
      return { event, data: lines.filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\n") };
    });
}

test("recipe, stream a plan step: a full answer streams as token events and ends with the trace", async () => {
  const res = await recipes.full.chat(post(), 3_000);
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("content-type"), "text/event-stream");
  const got = events(await res.text());
  assert.deepEqual(got.slice(0, 2), [{ event: "token", data: "Hel" }, { event: "token", data: "lo" }]);
  assert.equal(got.at(-1).event, "trace");
  const [record] = JSON.parse(got.at(-1).data);
  assert.equal(record.step, "generate");
  assert.equal(record.outcome, "ok");
  assert.ok(record.firstChunkMs > 0 && record.firstChunkMs <= record.elapsedMs, JSON.stringify(record));
});

test("recipe, stream a plan step: a silent model gets the fallback inside the reserve, with the trace as Server-Timing", async () => {
  const started = performance.now();
  const res = await recipes.silent.chat(post(), 1_500);
  const took = performance.now() - started;
  assert.equal(res.status, 503);
  const body = await res.json();
  assert.equal(body.fallback, true);
  assert.equal(body.why, "StepTimeout", "the step's cap (1500 − 300 reserve − 5 margin) came before firstChunkMs");
  assert.ok(took < 1_500, `answered inside the budget (${took.toFixed(0)} ms)`);
  assert.match(res.headers.get("server-timing"), /^generate;dur=[\d.]+;desc="timeout, cap [\d.]+ ms", fallback;dur=[\d.]+;desc="ok, cap [\d.]+ ms"$/);
  const silent = upstream.requests.filter((r) => r.url.startsWith("/silent/"));
  await new Promise((r) => setTimeout(r, 50));
  assert.ok(silent.at(-1).closed, "the model's connection was closed");
});

test("recipe, stream a plan step: a model that stops mid-answer ends with an error event naming the cut, then the trace", async () => {
  const res = await recipes.stall.chat(post(), 1_500);
  assert.equal(res.status, 200);
  const got = events(await res.text());
  assert.deepEqual(got.slice(0, 2).map((e) => e.data), ["Hel", "lo"]);
  assert.deepEqual(got.slice(-2).map((e) => e.event), ["error", "trace"]);
  assert.equal(JSON.parse(got.at(-2).data).outcome, "timeout");
  assert.equal(JSON.parse(got.at(-1).data)[0].outcome, "timeout");
  await new Promise((r) => setTimeout(r, 50));
  assert.ok(upstream.requests.filter((r) => r.url.startsWith("/stall/")).at(-1).closed, "the model's connection was closed");
});
