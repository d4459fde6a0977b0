//! Bindings for [`crate::core::limiter`] (`js/limiter.js`'s
//! `ConcurrencyLimiter`). The options cross once, through serde (their type
//! is generated from [`LimiterOptions`]); the per-call event, a finished
//! call's round trip, stays scalar: numbers in, the limit out, no allocation
//! (acquire and release together have a budget: BENCHMARKS.md, "Concurrency
//! limiter").
//!
//! # What holds Wasm memory
//! A [`LimiterJs`] is a few dozen bytes, lives as long as the user's
//! `ConcurrencyLimiter` and is freed by the glue's `FinalizationRegistry`.
//! A fixed limiter that never queues holds none: js/limiter.js frees the
//! machine as soon as the options are validated.

use wasm_bindgen::prelude::*;

use super::{from_js, to_js};
use crate::core::limiter::{self, Limiter, LimiterOptions};

/// Whether a queued caller whose budget ends at `endsAtMs` may start at `nowMs`.
#[wasm_bindgen(js_name = limiterMayStart)]
pub fn may_start(now_ms: f64, ends_at_ms: f64) -> bool {
    limiter::may_start(now_ms, ends_at_ms)
}

/// The limiter machine.
#[wasm_bindgen(js_name = LimiterCore)]
pub struct LimiterJs(Limiter);

#[wasm_bindgen(js_class = LimiterCore)]
impl LimiterJs {
    /// Validates `options` (errors name `options.<field>`) and starts at `now_ms`.
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(unchecked_param_type = "LimiterOptions")] options: JsValue,
        now_ms: f64,
    ) -> Result<LimiterJs, JsValue> {
        let options: LimiterOptions = from_js(options, "options")?;
        Ok(Self(Limiter::new(&options, now_ms).map_err(to_js)?))
    }

    /// The limit now.
    pub fn limit(&self) -> f64 {
        self.0.limit()
    }

    /// `"fixed"`, `"aimd"` or `"gradient2"`.
    pub fn algorithm(&self) -> String {
        self.0.config().algorithm.name().into()
    }

    /// The validated `maxQueue`.
    #[wasm_bindgen(js_name = maxQueue)]
    pub fn max_queue(&self) -> f64 {
        self.0.config().max_queue
    }

    /// The validated `minLimit`.
    #[wasm_bindgen(js_name = minLimit)]
    pub fn min_limit(&self) -> f64 {
        self.0.config().min_limit
    }

    /// The validated `maxLimit`.
    #[wasm_bindgen(js_name = maxLimit)]
    pub fn max_limit(&self) -> f64 {
        self.0.config().max_limit
    }

    /// A call returned: its round trip; answers the limit.
    pub fn sample(&mut self, now_ms: f64, rtt_ms: f64, in_flight: f64, dropped: bool) -> f64 {
        self.0.sample(now_ms, rtt_ms, in_flight, dropped)
    }

    /// The estimated wait of queue position `position`, ms.
    #[wasm_bindgen(js_name = waitMs)]
    pub fn wait_ms(&self, position: f64) -> f64 {
        self.0.wait_ms(position)
    }

    /// The last window's average round trip, ms (NaN before one closed).
    #[wasm_bindgen(js_name = rttMs)]
    pub fn rtt_ms(&self) -> f64 {
        self.0.rtt_ms()
    }

    /// Gradient2's baseline round trip, ms (NaN until probed).
    #[wasm_bindgen(js_name = baselineMs)]
    pub fn baseline_ms(&self) -> f64 {
        self.0.baseline_ms()
    }
}
