// docs/recipes.md's "A model stream that survives a mid-stream failure",
// imported exactly as printed, with the `openai` client against the local
// upstream's resumable chat completions (tests/sdk/upstream.mjs `/resume-KEY`,
// tests/fixtures/resume.mjs `chat`): the first call stalls after four words,
// in the middle of the fifth event; the recipe's hook asks the model to
// continue from what the client got, and the client reads one answer, every
// word once.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { init } from "../../pkg/node.js";
import { ANSWER, seenFor } from "../fixtures/resume.mjs";
import { cleanup, loadRecipe } from "./recipe.mjs";
import { startUpstream } from "./upstream.mjs";

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
