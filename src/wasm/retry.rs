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
//!   whose first attempt succeeds cost more in Deno through
//!   serde-wasm-bindgen than with these scalars.
//! - The per-attempt decisions stay scalar: `start` answers the attempt's
//!   timeout and `failed` the backoff delay, or `undefined` to stop; the rare
//!   stop is read with [`RetryRunJs::stop`]; the records cross only when a
//!   hook or a failure reads them.

use wasm_bindgen::prelude::*;

use super::retry_budget::RetryBudgetJs;
use super::{array_js, into_js, to_js, within_js};
use crate::core::error::ShapeError;
use crate::core::retry::{
    server_wait, AfterFailure, AttemptFailure, Backoff, BackoffOptions, Failure, JitterOption, RetryOptions, RetryRun,
    ServerWait, Start,
};

/// One `retry()` call's [`RetryRun`].
#[wasm_bindgen(js_name = RetryRun)]
pub struct RetryRunJs {
    pub(super) run: RetryRun,
}

#[wasm_bindgen(js_class = RetryRun)]
impl RetryRunJs {
    /// A validated policy ([`RetryOptions::policy`]) for the deadline `at`.
    /// Errors name the option as the user wrote it (`options.backoff.jitter`).
    /// The options cross as their fields, scalars (see the module doc);
    /// `js/retry.js` has checked their types, and a backoff's three fields
    /// come together or not at all (`jitter` as a number or as a name:
    /// `backoff_jitter` or `backoff_jitter_name`). `in_retry_option`: the
    /// options are another call's `options.retry` (`relay`,
    /// `fetchWithDeadline`), which errors then name.
    #[wasm_bindgen(constructor)]
    #[allow(clippy::too_many_arguments)] // scalar: through serde, retry() measured slower (BENCHMARKS.md, "Where it stands", the retry() row)
    pub fn new(
        at: f64,
        attempt_min_ms: Option<f64>,
        attempt_timeout_ms: Option<f64>,
        backoff_base_ms: Option<f64>,
        backoff_max_ms: Option<f64>,
        backoff_jitter: Option<f64>,
        backoff_jitter_name: Option<String>,
        max_attempts: Option<u32>,
        idempotent: Option<bool>,
        max_retry_after_ms: Option<f64>,
        operation_key_safe: bool,
        seed: u64,
        in_retry_option: bool,
    ) -> Result<RetryRunJs, JsValue> {
        let param = if in_retry_option { "options.retry" } else { "options" };
        let jitter = match (backoff_jitter, backoff_jitter_name) {
            (Some(j), _) => Some(JitterOption::Fraction(j)),
            (None, Some(name)) => Some(JitterOption::Name(name)),
            (None, None) => None,
        };
        let backoff = match (backoff_base_ms, backoff_max_ms, jitter) {
            (Some(base_ms), Some(max_ms), Some(jitter)) => Some(BackoffOptions { base_ms, max_ms, jitter }),
            (None, None, None) => None,
            _ => {
                let detail = "baseMs, maxMs and jitter must all be given".to_string();
                return Err(within_js(param, &ShapeError { param: "backoff", detail }));
            }
        };
        let options =
            RetryOptions { attempt_min_ms, attempt_timeout_ms, backoff, max_attempts, idempotent, max_retry_after_ms };
        let policy = options.policy().map_err(|e| within_js(param, &e))?;
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

    /// [`RetryRun::attempt_failed_waiting`] with an error classified as
    /// `failure`, whose response asked for `server_wait_ms` ([`serverWait`](server_wait_js)):
    /// the backoff delay, or `undefined` to stop.
    pub fn failed(&mut self, now_ms: f64, failure: &str, server_wait_ms: Option<f64>) -> Result<Option<f64>, JsValue> {
        let failure = Failure::parse(failure).map_err(to_js)?;
        let how = AttemptFailure::Error(failure);
        let after = self.run.attempt_failed_waiting(now_ms, how, server_wait_ms, None).map_err(to_js)?;
        Ok(self.after(after))
    }

    /// [`RetryRun::failed`], withdrawing the retry from `budget`.
    #[wasm_bindgen(js_name = failedBudgeted)]
    pub fn failed_budgeted(
        &mut self,
        now_ms: f64,
        failure: &str,
        budget: &mut RetryBudgetJs,
        server_wait_ms: Option<f64>,
    ) -> Result<Option<f64>, JsValue> {
        let failure = Failure::parse(failure).map_err(to_js)?;
        let how = AttemptFailure::Error(failure);
        let after =
            self.run.attempt_failed_waiting(now_ms, how, server_wait_ms, Some(budget.budget_mut())).map_err(to_js)?;
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

/// The wait a failed attempt's response asks for ([`server_wait`]): its
/// `Retry-After`, `RateLimit-Reset` and `X-RateLimit-Reset` values (absent:
/// `undefined`) → the wait in ms, `undefined` for none, or NaN when a value is
/// a wall-clock instant and `wall_now_ms` was NaN: ask again with `Date.now()`.
/// Scalars both ways: this runs on a failed attempt's path.
#[wasm_bindgen(js_name = serverWait)]
pub fn server_wait_js(
    retry_after: Option<String>,
    ratelimit_reset: Option<String>,
    x_ratelimit_reset: Option<String>,
    wall_now_ms: f64,
) -> Option<f64> {
    match server_wait(retry_after.as_deref(), ratelimit_reset.as_deref(), x_ratelimit_reset.as_deref(), wall_now_ms) {
        ServerWait::None => None,
        ServerWait::Ms(ms) => Some(ms),
        ServerWait::NeedsWallClock => Some(f64::NAN),
    }
}

/// The message of an `AttemptTimeout` ([`crate::core::retry::attempt_timeout`]).
/// How an attempt whose error is (or carries) a response of `status` failed,
/// when no `classify` was given: the core's word, or `undefined` when
/// `status` is not an HTTP status.
#[wasm_bindgen(js_name = responseFailure)]
pub fn response_failure(status: f64) -> Option<String> {
    crate::core::retry::response_failure(status).map(|f| f.as_str().to_string())
}

#[wasm_bindgen(js_name = attemptTimeoutText)]
pub fn attempt_timeout_text(attempt: u32, timeout_ms: f64) -> String {
    crate::core::retry::attempt_timeout(attempt, timeout_ms).to_string()
}

/// The failure kinds `classify` may answer ([`Failure::ALL`]).
#[wasm_bindgen(js_name = failureKinds, unchecked_return_type = "Failure[]")]
pub fn failure_kinds() -> Result<js_sys::Array, JsValue> {
    array_js(&Failure::ALL)
}

/// The first `retries` delays of a backoff for `seed` ([`Backoff::schedule`](crate::core::retry::Backoff::schedule)).
/// The backoff crosses as its fields, `jitter` as a number or a name (as
/// for [`RetryRunJs::new`]): a serde decoder of the options measured larger in
/// the main `.wasm`, whose Worker has an upload budget (BENCHMARKS.md, "Size
/// and start-up": `backoffSchedule`).
#[wasm_bindgen(js_name = backoffSchedule)]
pub fn backoff_schedule(
    base_ms: f64,
    max_ms: f64,
    jitter: Option<f64>,
    jitter_name: Option<String>,
    retries: u32,
    seed: u64,
) -> Result<Vec<f64>, JsValue> {
    let jitter = match (jitter, jitter_name) {
        (Some(j), _) => JitterOption::Fraction(j),
        (None, Some(name)) => JitterOption::Name(name),
        (None, None) => JitterOption::Fraction(f64::NAN),
    };
    let backoff = Backoff::with_jitter(base_ms, max_ms, &jitter).map_err(to_js)?;
    backoff.schedule(retries, seed).map_err(to_js)
}
