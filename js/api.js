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
export * from "./stall.js";
export * from "./pipeline.js";
export { LatencySketch } from "./sketch.js";
export * from "./derive.js";
export * from "./prom.js";
export * from "./tail.js";
export * from "./simulate.js";
export * from "./little.js";
