// The `openai` client (v6) inside a deadline, against a local OpenAI-compatible
// SSE upstream on 127.0.0.1 that sends two chunks and then goes silent. Proves
// the recipe in docs/api.md (isTimeout): the client ends `for await` normally
// when its signal aborts mid-stream, so the caller checks the signal after the
// loop; a request aborted before its answer rejects with APIUserAbortError,
// which carries no cause, so isTimeout is given the signal.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { after, before, test } from "node:test";
import OpenAI from "openai";
import { Deadline, init, isTimeout } from "../../pkg/node.js";

let server;
let baseURL;
before(async () => {
  await init();
  server = createServer((req, res) => {
    req.resume();
    if (req.url.endsWith("/chat/completions")) {
      res.writeHead(200, { "content-type": "text/event-stream" });
      for (const word of ["Hel", "lo"]) {
        res.write(`data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", created: 0, model: "m", choices: [{ index: 0, delta: { content: word }, finish_reason: null }] })}\n\n`);
      }
      // then silence: the deadline has to end it
    }
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  baseURL = `http://127.0.0.1:${server.address().port}/v1`;
});
after(() => server.closeAllConnections?.() ?? server.close());

test("openai v6: a stream cut by the deadline ends the loop silently; checking the signal after it detects the truncation", async () => {
  const client = new OpenAI({ apiKey: "test", baseURL, maxRetries: 0 });
  const deadline = Deadline.in(300);
  const signal = deadline.signal();
  let text = "";
  let error;
  try {
    const stream = await client.chat.completions.create({ model: "m", stream: true, messages: [{ role: "user", content: "hi" }] }, { signal });
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? "";
    if (signal.aborted) throw signal.reason; // the recipe: the loop ended because the deadline passed
  } catch (e) {
    error = e;
  } finally {
    deadline.dispose();
  }
  assert.equal(text, "Hello", "the chunks before the silence arrived");
  assert.ok(error, "without the check, a truncated answer would look complete");
  assert.ok(isTimeout(error), `${error?.name}: ${error?.message}`);
});

test("openai v6: a request aborted by the deadline rejects with an abort error without cause; isTimeout(e, signal) says it was time", async () => {
  const client = new OpenAI({ apiKey: "test", baseURL: baseURL.replace("/v1", "/silent"), maxRetries: 0 });
  const deadline = Deadline.in(200);
  const signal = deadline.signal();
  const e = await client.chat.completions.create({ model: "m", messages: [{ role: "user", content: "hi" }] }, { signal }).then(() => null, (x) => x);
  deadline.dispose();
  // openai 6.30.1 rejects with a bare AbortError here (its APIUserAbortError on other paths): neither has a cause.
  assert.ok(e instanceof OpenAI.APIUserAbortError || e?.name === "AbortError", `${e?.name}: ${e?.message}`);
  assert.equal(isTimeout(e), false, "the SDK's error drops the cause");
  assert.equal(isTimeout(e, signal), true);
});
