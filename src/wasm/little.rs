//! Bindings for [`crate::core::little`] (`js/little.js`: `concurrencyBound`,
//! `maxTimeoutFor`). The options objects cross through
//! serde (types generated from the Rust structs); the answers are numbers.

use wasm_bindgen::prelude::*;

use super::{from_js, to_js};
use crate::core::little::{self, ConcurrencyBoundOptions, MaxTimeoutOptions};

#[wasm_bindgen(js_name = concurrencyBound)]
pub fn concurrency_bound(
    #[wasm_bindgen(unchecked_param_type = "ConcurrencyBoundOptions")] options: JsValue,
) -> Result<f64, JsValue> {
    let options: ConcurrencyBoundOptions = from_js(options, "options")?;
    little::concurrency_bound(options.rate_per_sec, options.timeout_ms).map_err(to_js)
}

#[wasm_bindgen(js_name = maxTimeoutFor)]
pub fn max_timeout_for(
    #[wasm_bindgen(unchecked_param_type = "MaxTimeoutOptions")] options: JsValue,
) -> Result<f64, JsValue> {
    let options: MaxTimeoutOptions = from_js(options, "options")?;
    little::max_timeout_for(options.rate_per_sec, options.limit).map_err(to_js)
}
