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
mod derive;
mod pipeline;
mod stall;

#[wasm_bindgen(raw_module = "./errors.js")]
extern "C" {
    #[wasm_bindgen(js_name = rangeError)]
    fn range_error(message: &str) -> JsValue;
    #[wasm_bindgen(js_name = deadlineExceeded)]
    fn deadline_exceeded(at: f64, late_by_ms: f64) -> JsValue;
    #[wasm_bindgen(js_name = insufficientBudget)]
    fn insufficient_budget(remaining_ms: f64, min_ms: f64) -> JsValue;
}

/// What a core error becomes in JavaScript. Each concept's core error type
/// implements `From<ItsError> for JsFailure` (in its binding module), so
/// [`to_js`] stays the one place that builds JS errors.
pub(crate) enum JsFailure {
    /// Bad input: a `RangeError` whose message names the parameter and the range.
    Range(String),
    /// The package's branded `DeadlineExceeded`.
    DeadlineExceeded { at: f64, late_by_ms: f64 },
    /// The package's branded `InsufficientBudget`.
    Insufficient { remaining_ms: f64, min_ms: f64 },
}

impl From<DeadlineError> for JsFailure {
    fn from(error: DeadlineError) -> Self {
        match error {
            DeadlineError::Exhausted { at, late_by_ms } => Self::DeadlineExceeded { at, late_by_ms },
            DeadlineError::Insufficient { remaining_ms, min_ms } => Self::Insufficient { remaining_ms, min_ms },
            DeadlineError::NotFinite { .. } | DeadlineError::Negative { .. } | DeadlineError::TooLarge { .. } => {
                Self::Range(error.to_string())
            }
        }
    }
}

/// The one conversion from core errors to JavaScript errors.
pub(crate) fn to_js(error: impl Into<JsFailure>) -> JsValue {
    match error.into() {
        JsFailure::Range(message) => range_error(&message),
        JsFailure::DeadlineExceeded { at, late_by_ms } => deadline_exceeded(at, late_by_ms),
        JsFailure::Insufficient { remaining_ms, min_ms } => insufficient_budget(remaining_ms, min_ms),
    }
}

/// Runs once per instantiation (wasm-bindgen's start hook): a bug in the core
/// would then report its file and line instead of a bare `unreachable`.
#[wasm_bindgen(start)]
fn start() {
    console_error_panic_hook::set_once();
}
