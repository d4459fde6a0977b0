// The public API shared by every entry point (index.js, node.js, workerd.js);
// each entry adds its own `init`.
export { Deadline, generationBudget } from "./deadline.js";
export {
  DeadlineExceeded,
  InsufficientBudget,
  InvalidHeader,
  StepTimeout,
  isDeadlineExceeded,
  isInsufficientBudget,
  isInvalidHeader,
  isStepTimeout,
  isTimeout,
} from "./errors.js";
export { ambientDeadline, currentDeadline, runWithDeadline } from "./context.js";
export { relay } from "./relay.js";
export { createSseProgress, isStreamStalled, sseProgress, StreamStalled, withStallTimeout } from "./stall.js";
export { fetchWithDeadline } from "./fetch.js";
export { plan, Plan, isSkipped } from "./plan.js";
export { retry, RetryFailed, isRetryFailed, AttemptTimeout, backoffSchedule } from "./retry.js";
export { hedge } from "./hedge.js";
export { traceWith } from "./otel.js";
export { RetryBudget } from "./retry_budget.js";
export { toHeaders, encodeHeader, parseHeader, deadlineHeaders } from "./headers.js";
export { platformCaps } from "./caps.js";
export { afterResponse, deadlineFromHeaders, platformDeadline } from "./deadline.js";
