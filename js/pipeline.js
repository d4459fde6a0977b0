// Pipelines inside one deadline: plans with tail reserves, retries,
// retry budgets, hedging, propagation headers and platform caps. One module
// per part; this file is the concept's public surface.
export { plan, Plan, isSkipped } from "./plan.js";
export { retry, hedge, RetryBudget, RetryFailed, isRetryFailed, AttemptTimeout, backoffSchedule } from "./retry.js";
export { toHeaders, encodeHeader, parseHeader, deadlineHeaders, platformCaps } from "./propagation.js";
export { deadlineFromHeaders, platformDeadline } from "./deadline.js";
