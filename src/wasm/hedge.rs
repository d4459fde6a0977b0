//! Bindings for [`crate::core::hedge`] (`js/hedge.js`): one [`HedgeRunJs`]
//! per `hedge()` call, freed by `js/hedge.js` when the hedge settles.
//!
//! The options cross once as [`HedgeOptions`] (the default number of
//! attempts and every range check are the core's). Each event answers the
//! core's [`HedgeStep`] as one number, so no object is built per event:
//! `n > 0` launch attempt `n` now and arm the timer at [`HedgeRunJs::wake_at`]
//! (`undefined`: clear it); `0` wait; `-1` arm the timer again at `wakeAt()`;
//! `-2` the attempt just reported answered first; `-3` stop, read with
//! [`HedgeRunJs::stop`]. The records cross only when the hedge fails.

use wasm_bindgen::prelude::*;

use super::{array_js, from_js, into_js, to_js, within_js};
use crate::core::hedge::{HedgeOptions, HedgeRun, HedgeStep};
use crate::core::retry::RetryError;

/// One `hedge()` call's [`HedgeRun`].
#[wasm_bindgen(js_name = HedgeRun)]
pub struct HedgeRunJs {
    run: HedgeRun,
}

fn step(step: Result<HedgeStep, RetryError>) -> Result<i32, JsValue> {
    Ok(match step.map_err(to_js)? {
        // At most MAX_ATTEMPTS (100): the number fits.
        HedgeStep::Launch { number, .. } => i32::try_from(number).unwrap_or(i32::MAX),
        HedgeStep::Wait => 0,
        HedgeStep::Sleep { .. } => -1,
        HedgeStep::Won { .. } => -2,
        HedgeStep::Stop(_) => -3,
    })
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
    pub fn start(&mut self, now_ms: f64) -> Result<i32, JsValue> {
        step(self.run.start(now_ms))
    }

    /// [`HedgeRun::wake`].
    pub fn wake(&mut self, now_ms: f64) -> Result<i32, JsValue> {
        step(self.run.wake(now_ms))
    }

    /// [`HedgeRun::succeeded`].
    pub fn succeeded(&mut self, number: u32, now_ms: f64) -> Result<i32, JsValue> {
        step(self.run.succeeded(number, now_ms))
    }

    /// [`HedgeRun::failed`].
    pub fn failed(&mut self, number: u32, now_ms: f64) -> Result<i32, JsValue> {
        step(self.run.failed(number, now_ms))
    }

    /// [`HedgeRun::aborted`]; `deadline`: the deadline's own expiry.
    pub fn aborted(&mut self, now_ms: f64, deadline: bool) -> Result<i32, JsValue> {
        step(self.run.aborted(now_ms, deadline))
    }

    /// [`HedgeRun::wake_at`]: when the hedge timer is due, `undefined` when it is not armed.
    #[wasm_bindgen(js_name = wakeAt)]
    pub fn wake_at(&self) -> Option<f64> {
        self.run.wake_at()
    }

    /// [`HedgeRun::last_failed`]: the attempt whose error is the failure's cause.
    #[wasm_bindgen(js_name = lastFailed)]
    pub fn last_failed(&self) -> Option<u32> {
        self.run.last_failed()
    }

    /// The stop's word and whole sentence ([`Stopped::stop`](crate::core::retry::Stopped::stop)); `undefined` unless stopped.
    #[wasm_bindgen(unchecked_return_type = "Stop | undefined")]
    pub fn stop(&self) -> Result<JsValue, JsValue> {
        match self.run.stopped() {
            Some(s) => into_js(&s.stop()),
            None => Ok(JsValue::UNDEFINED),
        }
    }

    /// Every attempt launched, oldest first.
    #[wasm_bindgen(unchecked_return_type = "HedgeRecord[]")]
    pub fn records(&self) -> Result<js_sys::Array, JsValue> {
        array_js(self.run.records())
    }
}
