// Exports of js/*.js that have no .d.ts beside them, checked against what
// index.d.ts declares (`tsc -p jsconfig.json`): a changed arity, parameter or
// return type fails. Modules with their own .d.ts (stall, pipeline, derive,
// context, relay, hono) are what the other modules are checked against when
// they import them. Deadline and the error classes are left out: their
// declarations state what the JS sets at run time (the brand's literal
// `name`, `Symbol.dispose` put on the prototype), which JSDoc cannot say
// without changing the classes.
import type * as Declared from "../../js/index.js";
import * as api from "../../js/api.js";
import * as node from "../../js/node.js";
import * as workerd from "../../js/workerd.js";

export const checked: Pick<typeof Declared, "generationBudget" | "isTimeout" | "ambientDeadline" | "currentDeadline" | "runWithDeadline"> = api;
export const nodeInit: typeof Declared.init = node.init;
export const workerdInit: typeof Declared.init = workerd.init;
