//! Bindings for [`crate::core::deadline`]. Names are the JS API's.
//!
//! # All scalar, on purpose
//! Every export takes and returns plain `f64`s: `deadlineIn`,
//! `checkInstant`, `reserve`, `budget`, `admit`, `generationBudget`. They run
//! per request and per step (`Deadline.in`, `reserve`, `budget`, `step`), where
//! a number crossing costs no allocation and an object through serde would
//! cost one per call; nothing structured crosses here (the header and
//! platform constructors cross in their own modules).
//!
//! Measured (`node bench/run.mjs deadline`, its "design:" rows, in
//! BENCHMARKS.md): `budget(at, now, pref)` through Wasm costs about what the
//! JS `remaining()` beside it does, so a scalar call is not where a
//! deadline's time goes, and an object per call would be.
//!
//! Errors cross through [`super::to_js`]: `DeadlineExceeded` and
//! `InsufficientBudget` as the branded classes (with the core's message, the
//! same words js/errors.js writes), bad input as a `RangeError` with `.param`
//! and `.code`.
//!
//! # One number back, the error thrown
//! The scalar exports return a bare `f64` and throw their error from inside
//! the call ([`ok_or_throw`]), rather than return a `Result<f64, JsValue>`:
//! wasm-bindgen hands a `Result` back as several Wasm results, which the
//! engine gives JavaScript as an array, and JavaScriptCore (Bun) builds that
//! array on a slow path, on every `Deadline.in` and `reserve` (BENCHMARKS.md,
//! "Where users run it"). The thrown value is the one the `Result` carried:
//! callers see the same error. Nothing the export allocated is alive when it
//! throws (the core's error is plain data and [`super::to_js`] has returned),
//! so the skipped destructors free nothing.

use wasm_bindgen::prelude::*;

use super::to_js;
use crate::core::deadline as core;

/// The core's answer, or its error thrown as [`super::to_js`] makes it (see the module doc).
#[inline]
fn ok_or_throw(answer: Result<f64, core::DeadlineError>) -> f64 {
    match answer {
        Ok(value) => value,
        Err(error) => wasm_bindgen::throw_val(to_js(error)),
    }
}

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
pub fn deadline_in(now_ms: f64, ms: f64) -> f64 {
    ok_or_throw(core::deadline_in(now_ms, ms))
}

#[wasm_bindgen(js_name = checkInstant)]
pub fn check_instant(value: f64) -> f64 {
    ok_or_throw(core::check_ms("instantMs", value))
}

#[wasm_bindgen]
pub fn reserve(at: f64, ms: f64) -> f64 {
    ok_or_throw(core::reserve(at, ms))
}

#[wasm_bindgen]
pub fn budget(at: f64, now_ms: f64, preferred_ms: f64) -> f64 {
    ok_or_throw(core::budget(at, now_ms, preferred_ms))
}

#[wasm_bindgen]
pub fn admit(at: f64, now_ms: f64, min_ms: f64) -> f64 {
    ok_or_throw(core::admit(at, now_ms, min_ms))
}

#[wasm_bindgen(js_name = generationBudget)]
pub fn generation_budget(deadline_ms: f64, now_ms: f64, reserve_ms: f64) -> f64 {
    ok_or_throw(core::generation_budget(deadline_ms, now_ms, reserve_ms))
}
