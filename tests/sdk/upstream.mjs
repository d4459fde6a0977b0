// A local model upstream on 127.0.0.1 for the SDK recipes. It speaks the two
// streaming protocols the recipes' clients use: OpenAI's chat completions
// (`…/chat/completions`, what the `openai` client and every OpenAI-compatible
// server speak) and the AI SDK's gateway protocol (`…/language-model`, what
// the `ai` package's built-in provider speaks). The first path segment picks
// the behaviour:
//   /full/…    two text chunks, then the end of the answer
//   /stall/…   two text chunks, then silence (the connection stays open)
//   /silent/…  nothing at all, not even the response headers
//   /ping/…    two text chunks, then only `: ping` keep-alive comments every 50 ms
//   /pings/…   no text at all: only `: ping` keep-alive comments every 50 ms (a gateway that queues)
//   /pings-once/…  the first request as /pings/, every later one as /full/
//   /busy/…    429 with `Retry-After: 30`, a JSON error whose text names an internal host and a key
//   /drop/…    two text chunks, then the connection is destroyed (no end of the answer)
//   /resume-KEY/…  chat completions that stall mid-answer on the first call and
//              continue after the partial answer a "continue" call carries
//              (tests/fixtures/resume.mjs `chat`, scenario KEY)
// Each request is recorded ({ url, headers, closed }) so a test can check what
// the client sent and that the connection was closed when the client gave up.
import { createServer } from "node:http";
import { chat } from "../fixtures/resume.mjs";

export const WORDS = ["Hel", "lo"];
/** The upstream's error text of a 429: what must never reach a public client. */
export const BUSY_TEXT = "rate limited at http://10.0.3.7:8443 (llm-primary) for key sk-test-4f9a";

const sse = (data) => `data: ${JSON.stringify(data)}\n\n`;

function openaiChunks(done) {
  const chunk = (delta, finish = null) => ({ id: "c1", object: "chat.completion.chunk", created: 0, model: "m", choices: [{ index: 0, delta, finish_reason: finish }] });
  const out = WORDS.map((w) => sse(chunk({ content: w })));
  if (done) out.push(sse(chunk({}, "stop")), "data: [DONE]\n\n");
  return out;
}

function gatewayParts(done) {
  const parts = [{ type: "stream-start", warnings: [] }, { type: "text-start", id: "t" }, ...WORDS.map((delta) => ({ type: "text-delta", id: "t", delta }))];
  if (done) parts.push({ type: "text-end", id: "t" }, { type: "finish", finishReason: "stop", usage: { inputTokens: 1, outputTokens: 2, totalTokens: 3 } });
  return parts.map(sse);
}

/** Starts the upstream; resolves `{ url, requests, close() }`. */
export async function startUpstream() {
  const requests = [];
  const server = createServer((req, res) => {
    const record = { url: req.url, headers: req.headers, closed: false };
    requests.push(record);
    res.on("close", () => (record.closed = true));
    const mode = req.url.split("/")[1];
    if (mode.startsWith("resume-")) return chat(req, res, mode, 4);
    req.resume();
    if (mode === "silent") return;
    if (mode === "pings" || (mode === "pings-once" && requests.filter((r) => r.url.startsWith("/pings-once/")).length === 1)) {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write(": ping\n\n");
      const ping = setInterval(() => res.write(": ping\n\n"), 50);
      res.on("close", () => clearInterval(ping));
      return;
    }
    if (mode === "busy") {
      res.writeHead(429, { "content-type": "application/json", "retry-after": "30" });
      return res.end(JSON.stringify({ error: { message: BUSY_TEXT, type: "rate_limit_exceeded" } }));
    }
    const full = mode === "full" || mode === "pings-once";
    const events = req.url.endsWith("/language-model") ? gatewayParts(full) : openaiChunks(full);
    res.writeHead(200, { "content-type": "text/event-stream" });
    for (const e of events) res.write(e);
    if (full) res.end();
    if (mode === "drop") setTimeout(() => res.socket.destroy(), 50);
    if (mode === "ping") {
      const ping = setInterval(() => res.write(": ping\n\n"), 50);
      res.on("close", () => clearInterval(ping));
    }
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    requests,
    close() {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}
