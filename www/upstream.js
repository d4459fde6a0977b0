// The simulated upstream of section 4: a server with `servers` workers in
// front of one FIFO queue (the M/M/c picture, with less spread in the
// service time), so its latency rises with the calls it holds: past
// `servers` calls in flight, each new one waits for a worker. It behaves
// like a real request: a call whose AbortSignal aborts leaves the queue, or
// frees its worker, and rejects with the signal's reason.
//
// Modes: "healthy"; "slow", every service time × 10 (a slow disk, a cold
// cache); "failing", every call answers 503 after a few ms, without queueing.

/** A service time around `ms`: lognormal, sigma 0.25 (about ±50% at the extremes). */
function serviceTime(ms) {
  const u = 1 - Math.random();
  const v = Math.random();
  const z = Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  return ms * Math.exp(0.25 * z);
}

export class UpstreamError extends Error {
  constructor(status) {
    super(`the upstream answered ${status}`);
    this.name = "UpstreamError";
    this.status = status;
  }
}

export class Upstream {
  /** @param {{ servers: number, serviceMs: number }} config read at every call */
  constructor(config) {
    this.config = config;
    this.mode = "healthy";
    this.busy = 0;
    /** Calls waiting for a worker, in order. */
    this.queue = [];
    /** Every call not yet settled (queued, in service, or failing). */
    this.live = new Set();
  }

  /** Calls the upstream holds now: in service and queued. */
  get inside() {
    return this.busy + this.queue.length;
  }

  /**
   * One request. Resolves with `{ serviceMs }`; rejects with an
   * `UpstreamError` (mode "failing") or the signal's reason.
   * @param {AbortSignal} signal
   */
  call(signal) {
    if (signal.aborted) return Promise.reject(signal.reason);
    return new Promise((resolve, reject) => {
      const job = { resolve, reject, signal, timer: undefined, serving: false, onAbort: undefined };
      job.onAbort = () => this.#abort(job);
      signal.addEventListener("abort", job.onAbort, { once: true });
      this.live.add(job);
      if (this.mode === "failing") {
        job.timer = setTimeout(() => this.#settle(job, undefined, new UpstreamError(503)), 2 + 6 * Math.random());
      } else if (this.busy < this.config.servers) {
        this.#serve(job);
      } else {
        this.queue.push(job);
      }
    });
  }

  #serve(job) {
    this.busy++;
    job.serving = true;
    const ms = serviceTime(this.config.serviceMs * (this.mode === "slow" ? 10 : 1));
    job.timer = setTimeout(() => this.#settle(job, { serviceMs: ms }), ms);
  }

  #settle(job, value, error) {
    if (!this.live.delete(job)) return;
    job.signal.removeEventListener("abort", job.onAbort);
    clearTimeout(job.timer);
    if (job.serving) {
      this.busy--;
      this.#next();
    }
    if (error === undefined) job.resolve(value);
    else job.reject(error);
  }

  #abort(job) {
    const i = this.queue.indexOf(job);
    if (i >= 0) this.queue.splice(i, 1);
    this.#settle(job, undefined, job.signal.reason);
  }

  /** Starts queued calls while workers are free (also after `servers` grew). */
  #next() {
    while (this.queue.length > 0 && this.busy < this.config.servers) this.#serve(this.queue.shift());
  }

  /** Sets the mode; a call already in service keeps the time it was given. */
  setMode(mode) {
    this.mode = mode;
    this.#next();
  }

  /** Puts workers added to `config.servers` to work on the queue. */
  refresh() {
    this.#next();
  }
}
