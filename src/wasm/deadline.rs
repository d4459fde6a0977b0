//! Bindings for [`crate::core::deadline`]. Names are the JS API's.

use wasm_bindgen::prelude::*;

use super::to_js;
use crate::core::deadline as core;

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
