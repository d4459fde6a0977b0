// docs/recipes.md's "A model stream that survives a mid-stream failure",
// imported exactly as printed, with the `openai` client against the local
// upstream's resumable chat completions (tests/sdk/upstream.mjs `/resume-KEY`,
// tests/fixtures/resume.mjs `chat`): the first call stalls after four words,
// in the middle of the fifth event; the recipe's hook asks the model to
// continue from what the client got, and the client reads one answer, every
// word once. Then the `openai` client over `fetchWithDeadline` with `retry`
// and no hook against `/drop`: the error it surfaces is ours.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { init } from "../../pkg/node.js";
import { ANSWER, seenFor } from "../fixtures/resume.mjs";
import { cleanup, loadRecipe } from "./recipe.mjs";
import { startUpstream, WORDS } from "./upstream.mjs";

let upstream;
let recipe;
before(async () => {
  await init();
  upstream = await startUpstream();
  recipe = await loadRecipe("A model stream that survives a mid-stream failure", { OPENAI_API_KEY: "test", OPENAI_BASE_URL: `${upstream.url}/resume-sdk/v1` });
});
after(async () => {
  await upstream.close();
  cleanup();
});

const post = (body) => new Request("http://app.test/chat", { method: "POST", body: JSON.stringify(body) });

test("recipe (resume): a stall mid-answer is continued from the partial answer; the client reads the whole answer once", async () => {
  const t0 = performance.now();
  const res = await recipe.chat(post({ messages: [{ role: "user", content: "What is a deadline?" }] }));
  const took = performance.now() - t0;
  const json = await res.json();
  assert.equal(json.timedOut, undefined, `the answer came back marked partial: ${JSON.stringify(json)}`);
  assert.equal(json.text, ANSWER);
  const calls = seenFor("resume-sdk").connections;
  assert.equal(calls.length, 2, "one stalled call and one continuation");
  assert.equal(calls[0].partial, "", "the first call is the question");
  assert.equal(calls[1].partial, ANSWER.split(" ").slice(0, 4).join(" ") + " ", "the continuation carries the four words the client got");
  // Each call tells the upstream what is left of the deadline, the continuation too, and less of it.
  assert.ok(Number(calls[0].budget) > 0 && Number(calls[1].budget) < Number(calls[0].budget), `budgets ${calls.map((c) => c.budget)}`);
  // Resumed after the stall limit (2 s), not left to the 20 s budget.
  assert.ok(took < 10_000, `the answer took ${took} ms`);
});

test("recipe (resume): an upstream that only sends keep-alives before its first token is cut at the default first-content wait and retried inside the deadline", async () => {
  const pinging = await loadRecipe("A model stream that survives a mid-stream failure", { OPENAI_API_KEY: "test", OPENAI_BASE_URL: `${upstream.url}/pings-once/v1` });
  const t0 = performance.now();
  const res = await pinging.chat(post({ messages: [{ role: "user", content: "hi" }] }), 10_000);
  const took = performance.now() - t0;
  const json = await res.json();
  assert.deepEqual(json, { text: WORDS.join("") }, "the retry's whole answer, not a partial one");
  assert.equal(upstream.requests.filter((r) => r.url.startsWith("/pings-once/")).length, 2, "the keep-alive-only attempt, then the retry");
  // Cut at half of the 10 s left at the headers (5 s), retried with the other half.
  assert.ok(took >= 4_900 && took < 9_000, `the answer took ${Math.round(took)} ms`);
});

test("openai with fetchWithDeadline's retry: a stream that breaks after tokens and cannot be resumed ends with our RetryFailed, the upstream's error as its cause, with the bytes delivered", async () => {
  const { default: OpenAI } = await import("openai");
  const { Deadline, fetchWithDeadline, isRetryFailed } = await import("../../pkg/node.js");
  const deadline = Deadline.in(10_000);
  // `/drop`: two words, then the connection is destroyed; chat completions carry no ids and there is no hook.
  const client = new OpenAI({
    apiKey: "test",
    baseURL: `${upstream.url}/drop/v1`,
    maxRetries: 0,
    fetch: (input, init) => fetchWithDeadline(input, init, { deadline, retry: { attemptMinMs: 50 } }),
  });
  let text = "";
  let error;
  try {
    const stream = await client.chat.completions.create({ model: "m", stream: true, messages: [{ role: "user", content: "hi" }] });
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? "";
  } catch (e) {
    error = e;
  } finally {
    deadline.dispose();
  }
  assert.equal(text, "Hello");
  let ours = error;
  for (let i = 0; i < 5 && ours !== undefined && !isRetryFailed(ours); i++) ours = ours.cause;
  assert.ok(isRetryFailed(ours), `the client's error: ${error?.name}: ${error?.message}`);
  assert.equal(ours.reason, "not-resumable");
  assert.ok(ours.cause instanceof Error, `its cause is the upstream's error: ${ours.cause}`);
  assert.ok(ours.deliveredBytes > 0, `deliveredBytes ${ours.deliveredBytes}`);
});
