// The `openai` client (v6) inside a deadline, against the local upstream
// (tests/sdk/upstream.mjs). First the client's own behaviour that the recipe
// works around, shown on the bare client: it ends `for await` normally when
// its signal aborts mid-stream, and a request aborted before its answer
// rejects with an abort error that carries no cause. Then docs/recipes.md's
// recipe, imported exactly as printed, answers within its budget and marks a
// cut answer.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import OpenAI from "openai";
import { Deadline, init, isTimeout } from "../../pkg/node.js";
import { cleanup, loadRecipe } from "./recipe.mjs";
import { startUpstream } from "./upstream.mjs";

let upstream;
let recipe;
before(async () => {
  await init();
  upstream = await startUpstream();
  // The recipe's client reads these when it is made (at import).
  recipe = await loadRecipe("The `openai` client", { OPENAI_API_KEY: "test", OPENAI_BASE_URL: `${upstream.url}/stall/v1` });
});
after(async () => {
  await upstream.close();
  cleanup();
});

const post = (body) => new Request("http://app.test/chat", { method: "POST", body: JSON.stringify(body) });
const messages = [{ role: "user", content: "hi" }];

test("openai v6 (bare): a stream cut by the deadline ends the loop silently; only the signal tells", async () => {
  const client = new OpenAI({ apiKey: "test", baseURL: `${upstream.url}/stall/v1`, maxRetries: 0 });
  const deadline = Deadline.in(300);
  const signal = deadline.signal();
  let text = "";
  let threw;
  try {
    const stream = await client.chat.completions.create({ model: "m", stream: true, messages }, { signal });
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? "";
  } catch (e) {
    threw = e;
  } finally {
    deadline.dispose();
  }
  assert.equal(text, "Hello", "the chunks before the silence arrived");
  assert.equal(threw, undefined, "the client ended the loop normally: a cut answer looks complete");
  assert.equal(signal.aborted, true);
  assert.equal(isTimeout(signal.reason), true);
});

test("openai v6 (bare): a request aborted before its answer rejects without a cause; isTimeout(e, signal) says it was time", async () => {
  const client = new OpenAI({ apiKey: "test", baseURL: `${upstream.url}/silent/v1`, maxRetries: 0 });
  const deadline = Deadline.in(200);
  const signal = deadline.signal();
  const e = await client.chat.completions.create({ model: "m", messages }, { signal }).then(() => null, (x) => x);
  deadline.dispose();
  // openai 6.30.1 rejects with a bare AbortError here (its APIUserAbortError on other paths): neither has a cause.
  assert.ok(e instanceof OpenAI.APIUserAbortError || e?.name === "AbortError", `${e?.name}: ${e?.message}`);
  assert.equal(isTimeout(e), false, "the client's error drops the cause");
  assert.equal(isTimeout(e, signal), true);
});

test("recipe as printed: a stream that goes silent is cut at the budget and answered as partial", async () => {
  const t0 = performance.now();
  const res = await recipe.chat(post({ messages }), 300);
  const elapsed = performance.now() - t0;
  assert.deepEqual(await res.json(), { text: "Hello", timedOut: true });
  assert.ok(elapsed >= 290 && elapsed < 3_000, `answered after ${Math.round(elapsed)} ms`);
  const req = upstream.requests.at(-1);
  assert.match(req.url, /^\/stall\/v1\/chat\/completions$/);
  await new Promise((r) => setTimeout(r, 50)); // the close travels over loopback
  assert.equal(req.closed, true, "the upstream request was aborted, not left open");
});

test("recipe as printed: a client that leaves aborts the call; that is not a timeout, so it is rethrown", async () => {
  const gone = new AbortController();
  const request = new Request("http://app.test/chat", { method: "POST", body: JSON.stringify({ messages }), signal: gone.signal });
  setTimeout(() => gone.abort(new Error("client left")), 100);
  const e = await recipe.chat(request, 5_000).then(() => null, (x) => x);
  assert.ok(e, "the recipe rethrew");
  assert.equal(isTimeout(e), false);
});

test("recipe as printed: a complete answer comes back whole", async () => {
  const full = await loadRecipe("The `openai` client", { OPENAI_BASE_URL: `${upstream.url}/full/v1` });
  assert.deepEqual(await (await full.chat(post({ messages }), 5_000)).json(), { text: "Hello" });
});
