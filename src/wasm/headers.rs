//! Bindings for [`crate::core::headers`] (`js/headers.js`).
//!
//! A header format crosses as its name (a string enum, [`HeaderFormat`]):
//! the list of names is the core's ([`header_formats`]), never retyped in JS.
//! `encodeHeader`/`parseHeader` stay scalar (a name and a number or a value
//! in, a string or a number out): the name costs a little more per call
//! than a byte code would (measured with both alternating in one process),
//! the price of no mirrored code table. Reading a request's headers is one cold call with the
//! values present as [`HeaderValue`]s and the answer as an
//! [`Incoming`](crate::core::headers::Incoming), each
//! rejection with its code and the core's message (`Deadline.fromHeaders`:
//! BENCHMARKS.md, "Pipelines").

use wasm_bindgen::prelude::*;

use super::{array_js, from_js, into_js, to_js, within_js};
use crate::core::headers::{self, HeaderFormat, HeaderValue, IncomingOptions};

/// Every format, in the order a request's headers are consulted by default.
#[wasm_bindgen(js_name = headerFormats, unchecked_return_type = "HeaderFormat[]")]
pub fn header_formats() -> Result<js_sys::Array, JsValue> {
    array_js(&HeaderFormat::ALL)
}

/// The format called `name` (ASCII case-insensitive). An unknown name is a
/// `RangeError` listing the known ones, its `param` the one given (where
/// the user wrote the name: `options.format`, `propagate`), else `format`.
#[wasm_bindgen(js_name = headerFormat, unchecked_return_type = "HeaderFormat")]
pub fn header_format(name: &str, param: Option<String>) -> Result<JsValue, JsValue> {
    let format = match param {
        Some(param) => HeaderFormat::from_name_as(name, &param),
        None => HeaderFormat::from_name(name),
    };
    into_js(&format.map_err(to_js)?)
}

/// [`headers::encode`]: the header value for `remaining_ms`.
#[wasm_bindgen(js_name = encodeHeader)]
pub fn encode_header(format: &str, remaining_ms: f64) -> Result<String, JsValue> {
    let format = HeaderFormat::from_name(format).map_err(to_js)?;
    headers::encode(format, remaining_ms).map_err(to_js)
}

/// [`headers::parse_str`]: the remaining duration a header value states, in ms.
#[wasm_bindgen(js_name = parseHeader)]
pub fn parse_header(format: &str, value: &str) -> Result<f64, JsValue> {
    let format = HeaderFormat::from_name(format).map_err(to_js)?;
    headers::parse_str(format, value).map_err(to_js)
}

/// [`headers::earliest_incoming_values`] over the values present; errors in
/// `options` name it (`options.maxMs`).
#[wasm_bindgen(js_name = earliestIncoming, unchecked_return_type = "Incoming")]
pub fn earliest_incoming(
    now_ms: f64,
    #[wasm_bindgen(unchecked_param_type = "HeaderValue[]")] values: JsValue,
    #[wasm_bindgen(unchecked_param_type = "IncomingOptions")] options: JsValue,
) -> Result<JsValue, JsValue> {
    let values: Vec<HeaderValue> = from_js(values, "headers")?;
    let options: IncomingOptions = from_js(options, "options")?;
    into_js(&headers::earliest_incoming_values(now_ms, &values, &options).map_err(|e| within_js("options", &e))?)
}
