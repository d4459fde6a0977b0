//! Bindings for [`crate::core::hedge`] (`js/hedge.js`): one [`HedgeRunJs`]
//! per `hedge()` call, freed by `js/hedge.js` when the hedge settles.
//!
//! The options cross once as [`HedgeOptions`] (the default number of
//! attempts and every range check are the core's); each event answers the
//! core's decision, the [`HedgeStep`] itself, through serde (`{ do:
//! "launch", number, wakeAt }`, …). Nothing here is hot: a hedge makes a few calls. The
//! records cross only when the hedge fails.

use wasm_bindgen::prelude::*;

use super::{array_js, from_js, into_js, to_js, within_js};
use crate::core::hedge::{HedgeOptions, HedgeRun, HedgeStep};
use crate::core::retry::RetryError;

/// One `hedge()` call's [`HedgeRun`].
/// The message of the `AbortError` the other attempts get when attempt
/// `number` wins ([`crate::core::hedge::answered_first`]).
#[wasm_bindgen(js_name = answeredFirstText)]
pub fn answered_first_text(number: u32) -> String {
    crate::core::hedge::answered_first(number).to_string()
}

#[wasm_bindgen(js_name = HedgeRun)]
pub struct HedgeRunJs {
    run: HedgeRun,
}

fn step(step: Result<HedgeStep, RetryError>) -> Result<JsValue, JsValue> {
    into_js(&step.map_err(to_js)?)
}

#[wasm_bindgen(js_class = HedgeRun)]
impl HedgeRunJs {
    /// [`HedgeOptions::policy`]; errors name the option (`options.delayMs`).
    #[wasm_bindgen(constructor)]
    pub fn new(#[wasm_bindgen(unchecked_param_type = "HedgeOptions")] options: JsValue) -> Result<HedgeRunJs, JsValue> {
        let options: HedgeOptions = from_js(options, "options")?;
        let policy = options.policy().map_err(|e| within_js("options", &e))?;
        Ok(Self { run: HedgeRun::new(policy) })
    }

    /// [`HedgeRun::start`].
    #[wasm_bindgen(unchecked_return_type = "HedgeStep")]
    pub fn start(&mut self, now_ms: f64) -> Result<JsValue, JsValue> {
        step(self.run.start(now_ms))
    }

    /// [`HedgeRun::wake`].
    #[wasm_bindgen(unchecked_return_type = "HedgeStep")]
    pub fn wake(&mut self, now_ms: f64) -> Result<JsValue, JsValue> {
        step(self.run.wake(now_ms))
    }

    /// [`HedgeRun::succeeded`].
    #[wasm_bindgen(unchecked_return_type = "HedgeStep")]
    pub fn succeeded(&mut self, number: u32, now_ms: f64) -> Result<JsValue, JsValue> {
        step(self.run.succeeded(number, now_ms))
    }

    /// [`HedgeRun::failed`].
    #[wasm_bindgen(unchecked_return_type = "HedgeStep")]
    pub fn failed(&mut self, number: u32, now_ms: f64) -> Result<JsValue, JsValue> {
        step(self.run.failed(number, now_ms))
    }

    /// [`HedgeRun::aborted`]; `deadline`: the deadline's own expiry.
    #[wasm_bindgen(unchecked_return_type = "HedgeStep")]
    pub fn aborted(&mut self, now_ms: f64, deadline: bool) -> Result<JsValue, JsValue> {
        step(self.run.aborted(now_ms, deadline))
    }

    /// [`HedgeRun::last_failed`]: the attempt whose error is the failure's cause.
    #[wasm_bindgen(js_name = lastFailed)]
    pub fn last_failed(&self) -> Option<u32> {
        self.run.last_failed()
    }

    /// Every attempt launched, oldest first.
    #[wasm_bindgen(unchecked_return_type = "HedgeRecord[]")]
    pub fn records(&self) -> Result<js_sys::Array, JsValue> {
        array_js(self.run.records())
    }
}
