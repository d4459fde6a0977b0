//! Bindings for [`crate::core::retry`] (`js/retry.js`).
//!
//! # What holds Wasm memory, and who frees it
//! A [`RetryRunJs`] lives for exactly one `retry()` call; `js/retry.js` frees
//! it in a `finally`.
//!
//! # What crosses, and how
//! - The options cross as their fields, named scalar arguments of the
//!   `RetryRun` constructor (the defaults and every range check stay the
//!   core's: [`RetryOptions::policy`]); the attempt records come back as
//!   [`AttemptRecord`]s and a stop as a [`Stop`] whose `reason` is a string
//!   enum: no table of codes is mirrored in JS.
//! - Why the options are not one object through serde: `retry()` is called
//!   per request, and reading a struct through serde costs a property read
//!   per field. Measured with both builds alternating in one process
//!   (`node bench/ab.mjs BEFORE_DIR`, medians of 15 rounds), a `retry()`
//!   whose first attempt succeeds cost 0.4 µs more in Deno through
//!   serde-wasm-bindgen than with these scalars.
//! - The per-attempt decisions stay scalar: `start` answers the attempt's
//!   timeout and `failed` the backoff delay, or `undefined` to stop; the rare
//!   stop is read with [`RetryRunJs::stop`]; the records cross only when a
//!   hook or a failure reads them.

use wasm_bindgen::prelude::*;

use super::retry_budget::RetryBudgetJs;
use super::{array_js, from_js, into_js, to_js, within_js};
use crate::core::error::ShapeError;
use crate::core::retry::{AfterFailure, AttemptFailure, BackoffOptions, Failure, RetryOptions, RetryRun, Start};

/// One `retry()` call's [`RetryRun`].
#[wasm_bindgen(js_name = RetryRun)]
pub struct RetryRunJs {
    run: RetryRun,
}

#[wasm_bindgen(js_class = RetryRun)]
impl RetryRunJs {
    /// A validated policy ([`RetryOptions::policy`]) for the deadline `at`.
    /// Errors name the option as the user wrote it (`options.backoff.jitter`).
    /// The options cross as their fields, scalars (see the module doc);
    /// `js/retry.js` has checked their types, and a backoff's three fields
    /// come together or not at all.
    #[wasm_bindgen(constructor)]
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        at: f64,
        attempt_min_ms: Option<f64>,
        attempt_timeout_ms: Option<f64>,
        backoff_base_ms: Option<f64>,
        backoff_max_ms: Option<f64>,
        backoff_jitter: Option<f64>,
        max_attempts: Option<u32>,
        idempotent: Option<bool>,
        operation_key_safe: bool,
        seed: u64,
    ) -> Result<RetryRunJs, JsValue> {
        let backoff = match (backoff_base_ms, backoff_max_ms, backoff_jitter) {
            (Some(base_ms), Some(max_ms), Some(jitter)) => Some(BackoffOptions { base_ms, max_ms, jitter }),
            (None, None, None) => None,
            _ => {
                let detail = "baseMs, maxMs and jitter must all be given".to_string();
                return Err(to_js(ShapeError { param: "options.backoff", detail }));
            }
        };
        let options = RetryOptions { attempt_min_ms, attempt_timeout_ms, backoff, max_attempts, idempotent };
        let policy = options.policy().map_err(|e| within_js("options", &e))?;
        let run = RetryRun::new(policy, at, seed, operation_key_safe).map_err(to_js)?;
        Ok(Self { run })
    }

    /// [`RetryRun::start`]: the attempt's timeout, or `undefined` to stop.
    pub fn start(&mut self, now_ms: f64) -> Result<Option<f64>, JsValue> {
        let start = self.run.start(now_ms, None).map_err(to_js)?;
        Ok(self.started(start))
    }

    /// [`RetryRun::start`] counting the first attempt as a request in `budget`.
    #[wasm_bindgen(js_name = startBudgeted)]
    pub fn start_budgeted(&mut self, now_ms: f64, budget: &mut RetryBudgetJs) -> Result<Option<f64>, JsValue> {
        let start = self.run.start(now_ms, Some(budget.budget_mut())).map_err(to_js)?;
        Ok(self.started(start))
    }

    fn started(&mut self, start: Start) -> Option<f64> {
        match start {
            Start::Attempt { timeout_ms, .. } => Some(timeout_ms),
            Start::Stop(_) => None,
        }
    }

    /// [`RetryRun::succeeded`].
    pub fn succeeded(&mut self, now_ms: f64) -> Result<(), JsValue> {
        self.run.succeeded(now_ms).map_err(to_js)
    }

    /// [`RetryRun::failed`]: the backoff delay, or `undefined` to stop.
    pub fn failed(&mut self, now_ms: f64, failure: &str) -> Result<Option<f64>, JsValue> {
        let failure = Failure::parse(failure).map_err(to_js)?;
        let after = self.run.failed(now_ms, failure, None).map_err(to_js)?;
        Ok(self.after(after))
    }

    /// [`RetryRun::failed`], withdrawing the retry from `budget`.
    #[wasm_bindgen(js_name = failedBudgeted)]
    pub fn failed_budgeted(
        &mut self,
        now_ms: f64,
        failure: &str,
        budget: &mut RetryBudgetJs,
    ) -> Result<Option<f64>, JsValue> {
        let failure = Failure::parse(failure).map_err(to_js)?;
        let after = self.run.failed(now_ms, failure, Some(budget.budget_mut())).map_err(to_js)?;
        Ok(self.after(after))
    }

    fn after(&mut self, after: AfterFailure) -> Option<f64> {
        match after {
            AfterFailure::Backoff { delay_ms } => Some(delay_ms),
            AfterFailure::Stop(_) => None,
        }
    }

    /// [`RetryRun::attempt_failed`] by the attempt's own timeout (ambiguous):
    /// the backoff delay, or `undefined` to stop.
    #[wasm_bindgen(js_name = timedOut)]
    pub fn timed_out(&mut self, now_ms: f64) -> Result<Option<f64>, JsValue> {
        let after = self.run.attempt_failed(now_ms, AttemptFailure::Timeout, None).map_err(to_js)?;
        Ok(self.after(after))
    }

    /// [`RetryRun::attempt_failed`] by the attempt's own timeout, withdrawing the retry from `budget`.
    #[wasm_bindgen(js_name = timedOutBudgeted)]
    pub fn timed_out_budgeted(&mut self, now_ms: f64, budget: &mut RetryBudgetJs) -> Result<Option<f64>, JsValue> {
        let after =
            self.run.attempt_failed(now_ms, AttemptFailure::Timeout, Some(budget.budget_mut())).map_err(to_js)?;
        Ok(self.after(after))
    }

    /// [`RetryRun::refused`]: how long to wait for the breaker, or
    /// `undefined` to stop.
    pub fn refused(&mut self, now_ms: f64, until: f64) -> Result<Option<f64>, JsValue> {
        let after = self.run.refused(now_ms, until).map_err(to_js)?;
        Ok(self.after(after))
    }

    /// [`RetryRun::aborted`]: a signal ended the loop (`deadline`: the
    /// deadline's own expiry); read the stop with [`RetryRunJs::stop`].
    pub fn aborted(&mut self, now_ms: f64, deadline: bool) -> Result<(), JsValue> {
        self.run.aborted(now_ms, deadline).map(drop).map_err(to_js)
    }

    /// Why the loop stopped: its word and whole sentence
    /// ([`Stopped::stop`](crate::core::retry::Stopped::stop)); `undefined` while it runs.
    #[wasm_bindgen(unchecked_return_type = "Stop | undefined")]
    pub fn stop(&self) -> Result<JsValue, JsValue> {
        match self.run.stopped() {
            Some(s) => into_js(&s.stop()),
            None => Ok(JsValue::UNDEFINED),
        }
    }

    /// Every finished attempt, oldest first.
    #[wasm_bindgen(unchecked_return_type = "AttemptRecord[]")]
    pub fn records(&self) -> Result<js_sys::Array, JsValue> {
        array_js(self.run.records())
    }
}

/// The failure kinds `classify` may answer ([`Failure::ALL`]).
/// The message of an `AttemptTimeout` ([`crate::core::retry::attempt_timeout`]).
#[wasm_bindgen(js_name = attemptTimeoutText)]
pub fn attempt_timeout_text(attempt: u32, timeout_ms: f64) -> String {
    crate::core::retry::attempt_timeout(attempt, timeout_ms).to_string()
}

#[wasm_bindgen(js_name = failureKinds, unchecked_return_type = "Failure[]")]
pub fn failure_kinds() -> Result<js_sys::Array, JsValue> {
    array_js(&Failure::ALL)
}

/// The first `retries` delays of a backoff for `seed` ([`Backoff::schedule`](crate::core::retry::Backoff::schedule)).
#[wasm_bindgen(js_name = backoffSchedule)]
pub fn backoff_schedule(
    #[wasm_bindgen(unchecked_param_type = "BackoffOptions")] backoff: JsValue,
    retries: u32,
    seed: u64,
) -> Result<Vec<f64>, JsValue> {
    let backoff: BackoffOptions = from_js(backoff, "backoff")?;
    let backoff = backoff.backoff().map_err(to_js)?;
    backoff.schedule(retries, seed).map_err(to_js)
}
