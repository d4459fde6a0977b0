//! Bindings for [`crate::core::deadline`]. Names are the JS API's.
//!
//! # All scalar, on purpose
//! Every export takes and returns plain `f64`s: `deadlineIn`, `checkMs`,
//! `checkInstant`, `reserve`, `budget`, `admit`, `generationBudget`. They run
//! per request and per step (`Deadline.in`, `reserve`, `budget`, `step`), where
//! a number crossing costs no allocation and an object through serde would
//! cost one per call; nothing structured crosses here (the header and
//! platform constructors cross in their own modules).
//!
//! Measured (`node bench/run.mjs deadline`, its "design:" rows):
//! `budget(at, now, pref)` through Wasm 277 ns in Node and 290 ns in Deno,
//! against 178 and 311 ns for the JS `remaining()` beside it, so a scalar
//! call is not where a deadline's time goes, and an object per call would
//! be.
//!
//! Errors cross through [`super::to_js`]: `DeadlineExceeded` and
//! `InsufficientBudget` as the branded classes (with the core's message, the
//! same words js/errors.js writes), bad input as a `RangeError` with `.param`
//! and `.code`.

use wasm_bindgen::prelude::*;

use super::to_js;
use crate::core::deadline as core;

/// The message of a `DeadlineExceeded` made in JavaScript ([`core::exceeded`]):
/// `reserve_ms` and `budget_ms` given for a reserved deadline that had passed
/// before any work started.
#[wasm_bindgen(js_name = exceededText)]
pub fn exceeded_text(late_by_ms: f64, reserve_ms: Option<f64>, budget_ms: f64) -> String {
    core::exceeded(late_by_ms, reserve_ms.map(|r| (budget_ms, r))).to_string()
}

/// The message of an `InsufficientBudget` made in JavaScript.
#[wasm_bindgen(js_name = insufficientText)]
pub fn insufficient_text(remaining_ms: f64, min_ms: f64) -> String {
    crate::core::error::Described::message(&core::DeadlineError::Insufficient { remaining_ms, min_ms }).to_string()
}

#[wasm_bindgen(js_name = deadlineIn)]
pub fn deadline_in(now_ms: f64, ms: f64) -> Result<f64, JsValue> {
    core::deadline_in(now_ms, ms).map_err(to_js)
}

#[wasm_bindgen(js_name = checkMs)]
pub fn check_ms(value: f64) -> Result<f64, JsValue> {
    core::check_ms("ms", value).map_err(to_js)
}

#[wasm_bindgen(js_name = checkInstant)]
pub fn check_instant(value: f64) -> Result<f64, JsValue> {
    core::check_ms("instantMs", value).map_err(to_js)
}

#[wasm_bindgen]
pub fn reserve(at: f64, ms: f64) -> Result<f64, JsValue> {
    core::reserve(at, ms).map_err(to_js)
}

#[wasm_bindgen]
pub fn budget(at: f64, now_ms: f64, preferred_ms: f64) -> Result<f64, JsValue> {
    core::budget(at, now_ms, preferred_ms).map_err(to_js)
}

#[wasm_bindgen]
pub fn admit(at: f64, now_ms: f64, min_ms: f64) -> Result<f64, JsValue> {
    core::admit(at, now_ms, min_ms).map_err(to_js)
}

#[wasm_bindgen(js_name = generationBudget)]
pub fn generation_budget(deadline_ms: f64, now_ms: f64, reserve_ms: f64) -> Result<f64, JsValue> {
    core::generation_budget(deadline_ms, now_ms, reserve_ms).map_err(to_js)
}
