//! The `#[wasm_bindgen]` boundary. Every export does three things: convert the
//! arguments, call [`crate::core`], convert the result. Errors leave through
//! [`to_js`], the one place that turns a core error into a JavaScript error.
//!
//! The error classes live in `js/errors.js`; they are imported here with
//! `raw_module`, so the glue and the JS API share one copy of each class and
//! `instanceof` works as well as the brand guards.

use wasm_bindgen::prelude::*;

use crate::core::error::{Described, Kind};

// One feature per .wasm (wasm-pack.toml's outputs): `main` for the
// `edge-deadline` entry, `derive` for `edge-deadline/derive`. Each module of
// the boundary belongs to exactly one; what is below this list is shared.
#[cfg(feature = "main")]
mod deadline;
#[cfg(feature = "derive")]
mod derive;
#[cfg(feature = "main")]
mod pipeline;
#[cfg(feature = "main")]
mod stall;

#[wasm_bindgen(raw_module = "./errors.js")]
extern "C" {
    /// Builds the JS error for a core error: `TypeError`/`RangeError` with
    /// `.param` and `.code`, or the branded `DeadlineExceeded` /
    /// `InsufficientBudget` with their fields.
    #[wasm_bindgen(js_name = coreError)]
    fn core_error(kind: &str, code: &str, param: Option<String>, message: String, fields: &js_sys::Object) -> JsValue;
}

/// The one conversion from core errors to JavaScript errors: every core error
/// type implements [`Described`], so its code, parameter, kind and message
/// cross the same way.
pub(crate) fn to_js<E: Described>(error: E) -> JsValue {
    let kind = match error.kind() {
        Kind::Type => "type",
        Kind::Range => "range",
        Kind::Deadline => "deadline",
        Kind::Insufficient => "insufficient",
    };
    let fields = js_sys::Object::new();
    for (name, value) in error.fields() {
        // Setting a property on a fresh, extensible object cannot throw.
        let _ = js_sys::Reflect::set(&fields, &JsValue::from_str(name), &JsValue::from_f64(value));
    }
    core_error(kind, error.code(), error.param(), error.to_string(), &fields)
}

/// Transitional: what errors not yet [`Described`] become (a `RangeError`
/// with no `.param`/`.code`). Removed once every core error implements
/// [`Described`]; new code uses [`to_js`].
pub(crate) enum JsFailure {
    Range(String),
    Described(crate::core::deadline::DeadlineError),
}

impl From<crate::core::deadline::DeadlineError> for JsFailure {
    fn from(error: crate::core::deadline::DeadlineError) -> Self {
        Self::Described(error)
    }
}

/// Transitional twin of [`to_js`] for errors not yet [`Described`].
pub(crate) fn legacy_to_js(error: impl Into<JsFailure>) -> JsValue {
    match error.into() {
        JsFailure::Range(message) => js_sys::RangeError::new(&message).into(),
        JsFailure::Described(error) => to_js(error),
    }
}

/// Runs once per instantiation (wasm-bindgen's start hook): a bug in the core
/// would then report its file and line instead of a bare `unreachable`.
#[wasm_bindgen(start)]
fn start() {
    console_error_panic_hook::set_once();
}
