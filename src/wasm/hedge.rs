//! Bindings for [`crate::core::hedge`] (`js/hedge.js`): one cold call per
//! `hedge()`, the options in as [`HedgeOptions`] and the validated policy
//! (the default number of attempts filled in by the core) out as
//! [`HedgePolicy`](crate::core::hedge::HedgePolicy). Nothing is hot here. Timers and racing are the host's.

use wasm_bindgen::prelude::*;

use super::{from_js, into_js, within_js};
use crate::core::hedge::HedgeOptions;

/// [`HedgeOptions::policy`]; errors name the option (`options.delayMs`).
#[wasm_bindgen(js_name = hedgePolicy, unchecked_return_type = "HedgePolicy")]
pub fn hedge_policy(
    #[wasm_bindgen(unchecked_param_type = "HedgeOptions")] options: JsValue,
) -> Result<JsValue, JsValue> {
    let options: HedgeOptions = from_js(options, "options")?;
    into_js(&options.policy().map_err(|e| within_js("options", &e))?)
}
