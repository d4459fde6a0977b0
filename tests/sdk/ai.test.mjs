// The Vercel AI SDK (`ai` v6, its built-in gateway provider) inside a
// deadline, against the local upstream (tests/sdk/upstream.mjs). First what
// the SDK does on its own, which the recipe relies on or works around: a
// deadline passing mid-answer makes `textStream` throw an APICallError whose
// cause is our DeadlineExceeded (isTimeout answers true), but a deadline
// passing before the answer began ends `textStream` silently. Then
// docs/recipes.md's recipe, imported exactly as printed: the provider's
// `fetch` carries the budget and the stall guard, and every way time runs out
// comes back as a partial answer, marked; every failure comes back as a status
// with our own words and a code (the upstream's error goes to the log only);
// and its streamed route ends a cut answer with an error of the body, never
// as if the answer were complete.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { APICallError, createGateway, streamText } from "ai";
import { Deadline, init, isDeadlineExceeded, isStreamStalled, isTimeout } from "../../pkg/node.js";
import { cleanup, loadRecipe } from "./recipe.mjs";
import { BUSY_TEXT, startUpstream } from "./upstream.mjs";

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

test("recipe as printed: an upstream that only sends keep-alives before any text (a queueing gateway) → cut at the default first-content wait, half of what is left, not at the deadline", async () => {
  const recipe = await recipeFor("pings");
  const t0 = performance.now();
  const res = await recipe.chat(post("hi"), 10_000);
  const elapsed = performance.now() - t0;
  assert.deepEqual(await res.json(), { text: "", timedOut: true });
  // 10 s left at the headers: half of it, 5 s (also the floor), leaving the other half for a fallback.
  assert.ok(elapsed >= 4_900 && elapsed < 8_000, `cut after ${Math.round(elapsed)} ms: the default first-content wait, not the 10 s deadline`);
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

test("ai v6 (bare): toTextStreamResponse answers an upstream 429 with 200 and an empty body that ends as if complete (why the recipe streams its own body)", async () => {
  const gateway = createGateway({ apiKey: "test", baseURL: `${upstream.url}/busy` });
  const res = streamText({ model: gateway("m"), prompt: "hi", maxRetries: 0, onError: () => {} }).toTextStreamResponse();
  assert.deepEqual(await readBody(res), { status: 200, text: "", ended: true });
});

/** Reads a response's body to its end: `{ status, text, ended }` or `{ status, text, error }`. */
async function readBody(res) {
  const decoder = new TextDecoder();
  let text = "";
  try {
    for await (const chunk of res.body) text += decoder.decode(chunk, { stream: true });
    return { status: res.status, text, ended: true };
  } catch (error) {
    return { status: res.status, text, error: error.message };
  }
}

/** Runs `fn` with console.error collected; `{ value, logged }`. */
async function logged(fn) {
  const lines = [];
  const original = console.error;
  console.error = (...args) => lines.push(args.map((a) => (a instanceof Error ? `${a.message} ${a.cause?.message ?? ""}` : String(a))).join(" "));
  try {
    return { value: await fn(), logged: lines.join("\n") };
  } finally {
    console.error = original;
  }
}

const leaks = (body) => [BUSY_TEXT, "10.0.3.7", "sk-test", "llm-primary", "rate limited"].filter((s) => body.includes(s));

test("recipe as printed: an upstream 429 → 503 MODEL_BUSY in our own words; the upstream's error goes to the log only", async () => {
  const recipe = await recipeFor("busy");
  const { value: res, logged: log } = await logged(() => recipe.chat(post("hi"), 5_000));
  const body = await res.text();
  assert.equal(res.status, 503, body);
  assert.deepEqual(JSON.parse(body), { error: "The model is busy. Try again shortly.", code: "MODEL_BUSY" });
  assert.deepEqual(leaks(body), []);
  assert.ok(log.length > 0, "the upstream's error was logged");
});

test("recipe as printed: a connection dropped mid-answer → 502 MODEL_FAILED, never a complete answer", async () => {
  const recipe = await recipeFor("drop");
  const { value: res } = await logged(() => recipe.chat(post("hi"), 5_000));
  const body = await res.text();
  assert.equal(res.status, 502, body);
  assert.deepEqual(JSON.parse(body), { error: "The model did not answer.", code: "MODEL_FAILED" });
});

test("recipe as printed (streamed): a complete answer streams and ends", async () => {
  const recipe = await recipeFor("full");
  const res = await recipe.chatStream(post("hi"), 5_000);
  assert.equal(res.headers.get("content-type"), "text/plain; charset=utf-8");
  assert.deepEqual(await readBody(res), { status: 200, text: "Hello", ended: true });
});

test("recipe as printed (streamed): a stall mid-answer errors the body after the words that arrived (MODEL_TIMEOUT)", async () => {
  const recipe = await recipeFor("stall");
  const t0 = performance.now();
  const { value: got } = await logged(async () => readBody(await recipe.chatStream(post("hi"), 8_000)));
  const elapsed = performance.now() - t0;
  assert.deepEqual(got, { status: 200, text: "Hello", error: "MODEL_TIMEOUT" });
  assert.ok(elapsed >= 1_990 && elapsed < 4_000, `cut after ${Math.round(elapsed)} ms: the 2 s stall limit`);
  await new Promise((r) => setTimeout(r, 50)); // the close travels over loopback
  assert.equal(upstream.requests.at(-1).closed, true, "the upstream request was aborted");
});

test("recipe as printed (streamed): a connection dropped mid-answer errors the body (MODEL_FAILED)", async () => {
  const recipe = await recipeFor("drop");
  const { value: got } = await logged(async () => readBody(await recipe.chatStream(post("hi"), 5_000)));
  assert.deepEqual(got, { status: 200, text: "Hello", error: "MODEL_FAILED" });
});

test("recipe as printed (streamed): an upstream 429 before the first words → 503 MODEL_BUSY, nothing of the upstream's error", async () => {
  const recipe = await recipeFor("busy");
  const { value: res } = await logged(() => recipe.chatStream(post("hi"), 5_000));
  const body = await res.text();
  assert.equal(res.status, 503, body);
  assert.deepEqual(JSON.parse(body), { error: "The model is busy. Try again shortly.", code: "MODEL_BUSY" });
  assert.deepEqual(leaks(body), []);
});

test("recipe as printed (streamed): the deadline passing before the first words → 504 MODEL_TIMEOUT", async () => {
  const recipe = await recipeFor("silent");
  const res = await recipe.chatStream(post("hi"), 300);
  assert.equal(res.status, 504);
  assert.deepEqual(await res.json(), { error: "The model did not answer in time.", code: "MODEL_TIMEOUT" });
});

test("recipe as printed (streamed): a client that stops reading mid-answer closes the upstream request", async () => {
  const recipe = await recipeFor("stall");
  const res = await recipe.chatStream(post("hi"), 8_000);
  const reader = res.body.getReader();
  assert.equal(new TextDecoder().decode((await reader.read()).value), "Hel");
  await reader.cancel();
  await new Promise((r) => setTimeout(r, 100)); // the close travels over loopback
  assert.equal(upstream.requests.at(-1).closed, true, "the upstream request was aborted, not left to the stall limit");
});
