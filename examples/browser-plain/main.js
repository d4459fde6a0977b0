// Streams a Server-Sent Events URL inside a 3 s deadline, with stall
// detection, and says truthfully how it ended. No bundler: index.html maps
// "edge-deadline" to the package's browser entry with an import map.
import { Deadline, fetchWithDeadline, init, isDeadlineExceeded, isStreamStalled, sseProgress } from "edge-deadline";

// Unbundled, the default works: the .wasm sits next to the entry point.
await init();

const src = new URLSearchParams(location.search).get("src") ?? "./events";
const out = document.querySelector("#out");
const status = document.querySelector("#status");
const deadline = Deadline.in(3_000);
let outcome;
try {
  const response = await fetchWithDeadline(src, undefined, {
    deadline,
    firstByteMs: 1_000, // headers
    firstChunkMs: 1_000, // first event after the headers
    stallMs: 500, // between events (`: ping` comments do not count)
    isProgress: sseProgress,
  });
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  for (let r = await reader.read(); !r.done; r = await reader.read()) out.textContent += r.value;
  outcome = "complete";
  status.textContent = "complete";
} catch (error) {
  outcome = isStreamStalled(error) ? "stalled" : isDeadlineExceeded(error) ? "deadline" : "error";
  status.textContent = `interrupted: ${error.message}`; // what arrived stays on screen, marked as partial
} finally {
  deadline.dispose();
}
document.documentElement.dataset.outcome = outcome;
