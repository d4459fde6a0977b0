//! Bindings for [`crate::core::caps`] (`js/caps.js`): cold calls only. The
//! built-in figures cross as [`Cap`](crate::core::caps::Cap) records and a platform deadline's
//! request and answer as [`PlatformRequest`] / [`PlatformAnswer`](crate::core::caps::PlatformAnswer), all
//! through serde ([`super::from_js`]) with TypeScript generated from the Rust types;
//! `bound` and the names are string enums. Nothing here is scalar: a platform
//! deadline is computed once per request (`platformDeadline` measured no
//! slower in Node than with positional arrays).

use wasm_bindgen::prelude::*;

use super::{array_js, from_js, into_js, within_js};
use crate::core::caps::{self, PlatformRequest, BUILTIN};
use crate::core::error::Described;

/// The built-in figures, each with its source and retrieval date.
#[wasm_bindgen(js_name = platformCaps, unchecked_return_type = "Cap[]")]
pub fn platform_caps() -> Result<js_sys::Array, JsValue> {
    array_js(&BUILTIN)
}

/// [`caps::platform_deadline`] at `now_ms`; errors name the option as the
/// user wrote it (`options.caps.wallMs`).
#[wasm_bindgen(js_name = platformDeadline, unchecked_return_type = "PlatformAnswer")]
pub fn platform_deadline(
    now_ms: f64,
    #[wasm_bindgen(unchecked_param_type = "PlatformRequest")] request: JsValue,
) -> Result<JsValue, JsValue> {
    let request: PlatformRequest = from_js(request, "options")?;
    into_js(&caps::platform_deadline(now_ms, &request).map_err(|e| within_js("options", &e))?)
}

/// [`caps::for_lambda`] at `now_ms`: the deadline of one AWS Lambda invocation from what its context
/// says is left; errors name what the user gave (`options.fallbackReserveMs`, `context.getRemainingTimeInMillis()`).
#[wasm_bindgen(js_name = lambdaDeadline, unchecked_return_type = "PlatformAnswer")]
pub fn lambda_deadline(
    now_ms: f64,
    remaining_ms: f64,
    product_ms: Option<f64>,
    fallback_reserve_ms: f64,
) -> Result<JsValue, JsValue> {
    let refused = |e: caps::CapsError| {
        within_js(if e.param().as_deref() == Some(caps::REMAINING) { "context" } else { "options" }, &e)
    };
    into_js(&caps::for_lambda(now_ms, remaining_ms, product_ms, fallback_reserve_ms).map_err(refused)?)
}

/// [`caps::runtime_fetch_idle_ms`]: the built-in fetch cap of `"node"` or `"bun"`, in ms.
#[wasm_bindgen(js_name = runtimeFetchIdleMs)]
pub fn runtime_fetch_idle_ms(platform: &str) -> Option<f64> {
    caps::runtime_fetch_idle_ms(platform)
}

/// [`caps::fetch_idle_plan`]: what a deadline past the runtime's own fetch cap changes for one request.
#[wasm_bindgen(js_name = fetchIdlePlan, unchecked_return_type = "FetchIdlePlan")]
pub fn fetch_idle_plan(
    cap_ms: Option<f64>,
    can_raise: bool,
    remaining_ms: f64,
    first_byte_ms: Option<f64>,
    stall_ms: Option<f64>,
) -> Result<JsValue, JsValue> {
    into_js(&caps::fetch_idle_plan(cap_ms, can_raise, remaining_ms, first_byte_ms, stall_ms))
}

/// [`caps::serve_idle_seconds`]: what `Deadline.forRequest` hands Bun's `server.timeout(request, seconds)`.
#[wasm_bindgen(js_name = serveIdleSeconds)]
pub fn serve_idle_seconds(remaining_ms: f64) -> Option<f64> {
    caps::serve_idle_seconds(remaining_ms)
}
