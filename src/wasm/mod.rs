//! The `#[wasm_bindgen]` boundary. Every export does three things: convert the
//! arguments, call [`crate::core`], convert the result. Errors leave through
//! [`to_js`], the one place that turns a core error into a JavaScript error.
//!
//! The error classes live in `js/errors.js`; they are imported here with
//! `raw_module`, so the glue and the JS API share one copy of each class and
//! `instanceof` works as well as the brand guards.

use wasm_bindgen::prelude::*;

use crate::core::deadline::DeadlineError;

mod deadline;

#[wasm_bindgen(raw_module = "./errors.js")]
extern "C" {
    #[wasm_bindgen(js_name = rangeError)]
    fn range_error(message: &str) -> JsValue;
    #[wasm_bindgen(js_name = deadlineExceeded)]
    fn deadline_exceeded(at: f64, late_by_ms: f64) -> JsValue;
    #[wasm_bindgen(js_name = insufficientBudget)]
    fn insufficient_budget(remaining_ms: f64, min_ms: f64) -> JsValue;
}

/// The one conversion from core errors to JavaScript errors: bad input is a
/// `RangeError` whose message names the parameter and the range; running out
/// of time is the package's own branded error.
pub(crate) fn to_js(error: DeadlineError) -> JsValue {
    match error {
        DeadlineError::Exhausted { at, late_by_ms } => deadline_exceeded(at, late_by_ms),
        DeadlineError::Insufficient { remaining_ms, min_ms } => insufficient_budget(remaining_ms, min_ms),
        DeadlineError::NotFinite { .. } | DeadlineError::Negative { .. } | DeadlineError::TooLarge { .. } => {
            range_error(&error.to_string())
        }
    }
}

/// Runs once per instantiation (wasm-bindgen's start hook): a bug in the core
/// would then report its file and line instead of a bare `unreachable`.
#[wasm_bindgen(start)]
fn start() {
    console_error_panic_hook::set_once();
}
