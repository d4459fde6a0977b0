// The conformance table (tests/conformance/cases.json) as a module, for
// tests/js/cases/conformance.js in Node, Deno and Chromium, which load JSON
// with an import attribute. workerd loads tests/js/conformance-table.workerd.js
// under this module's name instead (tests/run.mjs): at some compatibility
// dates (2026-04-01) it refuses the attribute on its own JSON modules.
import table from "../conformance/cases.json" with { type: "json" };

export default table;
