//! Bindings for [`crate::core::tail`] (`js/tail.js`: `tailShape`,
//! `falseTimeoutRate`).
//!
//! A [`TailShape`] crosses through serde (its TypeScript is generated from
//! the Rust type): one call per question, nothing to free. Samples cross as
//! a slice of the caller's `Float64Array` (a chunk at a time, see
//! [`super::sketch`]): a typed array is what the caller has.

use wasm_bindgen::prelude::*;

use super::into_js;
use super::sketch::{in_batch, SketchJs};
use crate::core::tail::{self, TailShape};

/// [`tail::tail_shape`] of a sketch's bins; `undefined` when there is no gap.
#[wasm_bindgen(js_name = tailShape, unchecked_return_type = "TailShape | undefined")]
pub fn tail_shape(sketch: &SketchJs) -> Result<JsValue, JsValue> {
    let shape: Option<TailShape> = tail::tail_shape(&sketch.inner.bins());
    shape.map_or(Ok(JsValue::UNDEFINED), |t| into_js(&t))
}

/// How many of a chunk's samples are above `timeout_ms` (the numerator of a
/// false-timeout rate); errors name `samples[base + index]`.
#[wasm_bindgen(js_name = countAbove)]
pub fn count_above(samples: &[f64], timeout_ms: f64, base: f64) -> Result<f64, JsValue> {
    tail::count_above(samples, timeout_ms).map(|n| n as f64).map_err(in_batch("samples", base))
}
