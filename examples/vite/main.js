// The package in a Vite app, with no Vite configuration: each entry's `init()`
// finds its .wasm both under `vite dev` and in a `vite build`. To try it: copy this
// folder, `npm install edge-deadline vite`, then `npx vite` (or `npx vite build`).
import { Deadline, init } from "edge-deadline";
import { LatencySketch, init as initDerive } from "edge-deadline/derive";

const status = document.querySelector("#status");
try {
  await Promise.all([init(), initDerive()]); // browsers fetch each .wasm once
  const sketch = new LatencySketch();
  for (let ms = 1; ms <= 100; ms++) sketch.add(ms);
  const d = Deadline.in(1_000);
  status.textContent = `p99 ${sketch.quantile(0.99)} ms; ${d.remaining() > 0 ? "deadline running" : "expired"}`;
  document.documentElement.dataset.outcome = "ok";
} catch (error) {
  status.textContent = `${error.name}: ${error.message}`;
  document.documentElement.dataset.outcome = "error";
}
