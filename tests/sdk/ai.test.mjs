// The Vercel AI SDK (`ai` v6, its built-in gateway provider) inside a
// deadline, against the local upstream (tests/sdk/upstream.mjs). First what
// the SDK does on its own, which the recipe relies on or works around: a
// deadline passing mid-answer makes `textStream` throw an APICallError whose
// cause is our DeadlineExceeded (isTimeout answers true), but a deadline
// passing before the answer began ends `textStream` silently. Then
// docs/recipes.md's recipe, imported exactly as printed: the provider's
// `fetch` carries the budget and the stall guard, and every way time runs out
// comes back as a partial answer, marked.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { APICallError, createGateway, streamText } from "ai";
import { Deadline, init, isDeadlineExceeded, isStreamStalled, isTimeout } from "../../pkg/node.js";
import { cleanup, loadRecipe } from "./recipe.mjs";
import { startUpstream } from "./upstream.mjs";

let upstream;
before(async () => {
  await init();
  upstream = await startUpstream();
});
after(async () => {
  await upstream.close();
  cleanup();
});

/** Reads `textStream` to its end; `{ text, error, aborted }`. */
async function readAll(mode, ms) {
  const gateway = createGateway({ apiKey: "test", baseURL: `${upstream.url}/${mode}` });
  const deadline = Deadline.in(ms);
  const signal = deadline.signal();
  let text = "";
  let error;
  let onAbort = false;
  try {
    const result = streamText({ model: gateway("openai/gpt-5-mini"), prompt: "hi", abortSignal: signal, maxRetries: 0, onAbort: () => (onAbort = true) });
    for await (const delta of result.textStream) text += delta;
  } catch (e) {
    error = e;
  } finally {
    deadline.dispose();
  }
  return { text, error, onAbort, signal };
}

test("ai v6 (bare): the deadline passing mid-answer → textStream throws APICallError caused by DeadlineExceeded; isTimeout(e) is true", async () => {
  const { text, error } = await readAll("stall", 300);
  assert.equal(text, "Hello");
  assert.ok(APICallError.isInstance(error), `${error?.name}: ${error?.message}`);
  assert.ok(isDeadlineExceeded(error.cause), `cause ${error.cause?.name}`);
  assert.equal(isTimeout(error), true, "through the .cause chain, without the signal");
});

test("ai v6 (bare): the deadline passing before the answer began → textStream ends silently (onAbort only)", async () => {
  const { text, error, onAbort, signal } = await readAll("silent", 200);
  assert.equal(text, "");
  assert.equal(error, undefined, "no error: without a check, an empty answer looks complete");
  assert.equal(onAbort, true);
  assert.equal(signal.aborted, true, "the signal is what tells");
});

test("ai v6 (bare): a complete answer", async () => {
  const { text, error } = await readAll("full", 5_000);
  assert.deepEqual({ text, error }, { text: "Hello", error: undefined });
});

test("ai v6 (bare): a provider whose fetch is fetchWithDeadline → a silent answer throws APICallError caused by StreamStalled", async () => {
  const { fetchWithDeadline } = await import("../../pkg/node.js");
  const deadline = Deadline.in(5_000);
  const gateway = createGateway({ apiKey: "test", baseURL: `${upstream.url}/stall`, fetch: (input, init) => fetchWithDeadline(input, init, { deadline, stallMs: 150 }) });
  let text = "";
  let error;
  try {
    for await (const delta of streamText({ model: gateway("m"), prompt: "hi", maxRetries: 0 }).textStream) text += delta;
  } catch (e) {
    error = e;
  } finally {
    deadline.dispose();
  }
  assert.equal(text, "Hello");
  assert.ok(APICallError.isInstance(error) && isStreamStalled(error.cause), `${error?.name}, cause ${error?.cause?.name}`);
  assert.equal(isTimeout(error), true);
});

const post = (prompt, signal) => new Request("http://app.test/chat", { method: "POST", body: JSON.stringify({ prompt }), signal });

async function recipeFor(mode) {
  return loadRecipe("The Vercel AI SDK", { AI_GATEWAY_API_KEY: "test", AI_GATEWAY_BASE_URL: `${upstream.url}/${mode}` });
}

test("recipe as printed: a complete answer, and the upstream was told the budget left (fetch option)", async () => {
  const recipe = await recipeFor("full");
  const res = await recipe.chat(post("hi"), 5_000);
  assert.deepEqual(await res.json(), { text: "Hello" });
  const sent = Number(upstream.requests.at(-1).headers["edge-deadline-remaining-ms"]);
  assert.ok(sent > 0 && sent <= 5_000, `edge-deadline-remaining-ms: ${sent}`);
});

test("recipe as printed: the deadline passing mid-answer → partial answer, marked", async () => {
  const recipe = await recipeFor("stall");
  const t0 = performance.now();
  const res = await recipe.chat(post("hi"), 300);
  const elapsed = performance.now() - t0;
  assert.deepEqual(await res.json(), { text: "Hello", timedOut: true });
  assert.ok(elapsed >= 290 && elapsed < 1_900, `answered after ${Math.round(elapsed)} ms, before the 2 s stall limit`);
  await new Promise((r) => setTimeout(r, 50)); // the close travels over loopback
  assert.equal(upstream.requests.at(-1).closed, true, "the upstream request was aborted");
});

test("recipe as printed: the deadline passing before the answer began (the SDK ends silently) → detected, marked", async () => {
  const recipe = await recipeFor("silent");
  const res = await recipe.chat(post("hi"), 300);
  assert.deepEqual(await res.json(), { text: "", timedOut: true });
});

test("recipe as printed: an answer that goes silent for stallMs while the deadline has time → StreamStalled, partial answer", async () => {
  const recipe = await recipeFor("stall");
  const t0 = performance.now();
  const res = await recipe.chat(post("hi"), 8_000);
  const elapsed = performance.now() - t0;
  assert.deepEqual(await res.json(), { text: "Hello", timedOut: true });
  assert.ok(elapsed >= 1_990 && elapsed < 4_000, `cut after ${Math.round(elapsed)} ms: the 2 s stall limit, not the 8 s deadline`);
});

test("recipe as printed: an answer that only sends keep-alive comments after its text → StreamStalled at stallMs, not the deadline", async () => {
  const recipe = await recipeFor("ping");
  const t0 = performance.now();
  const res = await recipe.chat(post("hi"), 8_000);
  const elapsed = performance.now() - t0;
  assert.deepEqual(await res.json(), { text: "Hello", timedOut: true });
  assert.ok(elapsed >= 1_990 && elapsed < 4_000, `cut after ${Math.round(elapsed)} ms: the 2 s stall limit, not the 8 s deadline (the pings are not progress)`);
  await new Promise((r) => setTimeout(r, 50)); // the close travels over loopback
  assert.equal(upstream.requests.at(-1).closed, true, "the upstream request was aborted");
});

test("recipe as printed: a client that leaves is not a timeout: rethrown", async () => {
  const recipe = await recipeFor("stall");
  const gone = new AbortController();
  setTimeout(() => gone.abort(new Error("client left")), 100);
  const e = await recipe.chat(post("hi", gone.signal), 5_000).then(() => null, (x) => x);
  assert.ok(e, "the recipe rethrew");
  assert.equal(isTimeout(e), false);
  assert.equal(isStreamStalled(e), false);
});
