// The core's message templates for edge-deadline/derive, generated from the `templates!`
// declarations in src/core/ by `UPDATE_MESSAGES=1 cargo test --lib message_tables`:
// do not edit. js/errors.js renders them (`{name}`, `{name:ms}`, see src/core/error.rs).

/** @type {Record<string, string>} */
export const MESSAGES = {
};
