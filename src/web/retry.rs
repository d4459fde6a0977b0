//! Retries and hedging inside one deadline, as async Rust.
//!
//! Whether to attempt, each attempt's timeout, the backoff delay (seeded
//! jitter), the idempotency rule and the retry budget's accounting are the
//! core's ([`crate::core::retry`], see its module doc); this file owns the
//! attempts' signals and timers, the abortable backoff sleep, and hedging
//! (which has no arithmetic beyond "time is left"), as `js/retry.js` does.
//!
//! # Invariants
//! 1. Every attempt gets its own `AbortSignal`, aborted at the attempt's
//!    timeout (`AttemptTimeout`; `DeadlineExceeded` when that timeout is the
//!    deadline itself), by the deadline, or by `signal`; the attempt
//!    ends in that same turn even if it ignores its signal (its future is
//!    dropped).
//! 2. The backoff sleep ends early when the deadline's signal or `signal`
//!    aborts; after it the core decides again from the clock, and no attempt
//!    starts with less than `attempt_min_ms` left.
//! 3. When `retry` or `hedge` returns, every timer it armed is cleared and
//!    every listener it added removed.
//! 4. A failure carries every attempt's outcome ([`Error::RetryFailed`]).
//! 5. `hedge`: the first attempt to succeed wins and every other attempt in
//!    flight is aborted at once; none starts after the deadline's signal has
//!    aborted.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::Poll;

use wasm_bindgen::{JsValue, UnwrapThrowExt};
use web_sys::{AbortController, AbortSignal};

use super::errors::AttemptReport;
use super::guard::{Ended, Guard};
use super::timers::{sleep_until, Sleep};
use super::{sys, Deadline, Error};
use crate::core::hedge::check_hedge;
pub use crate::core::retry::Failure;
use crate::core::retry::{self as core, AfterFailure, Backoff, RetryError, RetryPolicy, RetryRun, Start, StopReason};
use crate::core::retry_budget::{self, RetryBudgetError};

impl From<RetryError> for Error {
    fn from(error: RetryError) -> Self {
        let param = match &error {
            RetryError::Time(e) => return Error::from(*e),
            RetryError::BadJitter { .. } => "backoff.jitter",
            RetryError::MaxBelowBase { .. } => "backoff.maxMs",
            RetryError::BadMaxAttempts { .. } => "maxAttempts",
            RetryError::BadAttempt { .. } => "attempt",
            RetryError::UnknownFailure { .. } => "failure",
            RetryError::Budget(e) => return Error::from(e.clone()),
            _ => "options",
        };
        Error::invalid(param, error.to_string())
    }
}

impl From<RetryBudgetError> for Error {
    fn from(error: RetryBudgetError) -> Self {
        let param = match &error {
            RetryBudgetError::Time(e) => return Error::from(*e),
            RetryBudgetError::BadRatio { .. } => "ratio",
            RetryBudgetError::BadMinPerSecond { .. } => "minPerSecond",
            RetryBudgetError::BadWindow { .. } => "windowMs",
        };
        Error::invalid(param, error.to_string())
    }
}

/// A retry allowance shared across calls (Finagle / Envoy style): in any
/// `window_ms`, retries are allowed while `retries ≤ ratio × requests +
/// min_per_second × window_ms / 1000`. Share one with `Rc` between the calls
/// to one dependency.
///
/// ```
/// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
/// # fn run() -> Result<(), edge_deadline::web::Error> {
/// use edge_deadline::web::RetryBudget;
/// let budget = std::rc::Rc::new(RetryBudget::new(0.1, 10.0, 10_000.0)?);
/// # let _ = budget; Ok(())
/// # }
/// # fn main() {}
/// ```
#[derive(Debug)]
pub struct RetryBudget(RefCell<retry_budget::RetryBudget>);

impl RetryBudget {
    /// `ratio` in `[0, 1]`, `min_per_second` ≥ 0, `window_ms` in `1 ..= 86 400 000`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming `ratio`, `minPerSecond` or `windowMs`.
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// use edge_deadline::web::RetryBudget;
    /// assert!(RetryBudget::new(2.0, 10.0, 10_000.0).is_err());
    /// # Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    pub fn new(ratio: f64, min_per_second: f64, window_ms: f64) -> Result<Self, Error> {
        Ok(Self(RefCell::new(retry_budget::RetryBudget::new(ratio, min_per_second, window_ms)?)))
    }
}

/// The `classify` option.
type Classify = Box<dyn Fn(&Error) -> Failure>;

/// The options of [`retry`].
///
/// ```
/// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
/// # fn run() -> Result<(), edge_deadline::web::Error> {
/// use edge_deadline::web::RetryOptions;
/// let options = RetryOptions::new(50.0).attempt_timeout_ms(300.0).backoff(20.0, 200.0, 1.0).max_attempts(3).idempotent(true);
/// # let _ = options;
/// # Ok(())
/// # }
/// # fn main() {}
/// ```
#[must_use]
pub struct RetryOptions {
    attempt_min_ms: f64,
    attempt_timeout_ms: Option<f64>,
    backoff: (f64, f64, f64),
    max_attempts: u32,
    idempotent: bool,
    operation_key: Option<String>,
    seed: Option<u64>,
    signal: Option<AbortSignal>,
    budget: Option<Rc<RetryBudget>>,
    classify: Option<Classify>,
}

impl RetryOptions {
    /// No attempt starts with less than `attempt_min_ms` left. Defaults: each
    /// attempt may run to the deadline, backoff 50–1000 ms with full jitter,
    /// 3 attempts, not idempotent, no operation key, a random seed.
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// let options = edge_deadline::web::RetryOptions::new(25.0);
    /// # let _ = options;
    /// # Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    pub fn new(attempt_min_ms: f64) -> Self {
        Self {
            attempt_min_ms,
            attempt_timeout_ms: None,
            backoff: (50.0, 1_000.0, 1.0),
            max_attempts: core::DEFAULT_MAX_ATTEMPTS,
            idempotent: false,
            operation_key: None,
            seed: None,
            signal: None,
            budget: None,
            classify: None,
        }
    }

    /// Each attempt's own timeout (it is also never longer than what is left).
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// let options = edge_deadline::web::RetryOptions::new(25.0).attempt_timeout_ms(250.0);
    /// # let _ = options;
    /// # Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    pub fn attempt_timeout_ms(mut self, ms: f64) -> Self {
        self.attempt_timeout_ms = Some(ms);
        self
    }

    /// Exponential backoff: `min(max_ms, base_ms × 2^(k−1))`, less up to `jitter` (0–1) of it.
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// let options = edge_deadline::web::RetryOptions::new(25.0).backoff(10.0, 100.0, 0.5);
    /// # let _ = options;
    /// # Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    pub fn backoff(mut self, base_ms: f64, max_ms: f64, jitter: f64) -> Self {
        self.backoff = (base_ms, max_ms, jitter);
        self
    }

    /// At most this many attempts (1–100).
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// let options = edge_deadline::web::RetryOptions::new(25.0).max_attempts(5);
    /// # let _ = options;
    /// # Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    pub fn max_attempts(mut self, n: u32) -> Self {
        self.max_attempts = n;
        self
    }

    /// Whether repeating the operation is harmless (then ambiguous failures,
    /// such as timeouts, are retried).
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// let options = edge_deadline::web::RetryOptions::new(25.0).idempotent(true);
    /// # let _ = options;
    /// # Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    pub fn idempotent(mut self, yes: bool) -> Self {
        self.idempotent = yes;
        self
    }

    /// A key the server de-duplicates on, which makes repeating an ambiguous
    /// failure safe; passed to every attempt.
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// let options = edge_deadline::web::RetryOptions::new(25.0).operation_key("order-42");
    /// # let _ = options;
    /// # Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    pub fn operation_key(mut self, key: impl Into<String>) -> Self {
        self.operation_key = Some(key.into());
        self
    }

    /// The jitter seed: the same seed gives the same delays on every runtime.
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// let options = edge_deadline::web::RetryOptions::new(25.0).seed(7);
    /// # let _ = options;
    /// # Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// A caller's signal: when it aborts, the loop stops (`RetryFailed`, reason `"aborted"`).
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// let caller = web_sys::AbortController::new().unwrap();
    /// let options = edge_deadline::web::RetryOptions::new(25.0).signal(&caller.signal());
    /// # let _ = options;
    /// # Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    pub fn signal(mut self, signal: &AbortSignal) -> Self {
        self.signal = Some(signal.clone());
        self
    }

    /// A retry budget shared with other calls.
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// use edge_deadline::web::{RetryBudget, RetryOptions};
    /// let budget = std::rc::Rc::new(RetryBudget::new(0.1, 10.0, 10_000.0)?);
    /// let options = RetryOptions::new(25.0).budget(budget.clone());
    /// # let _ = options; Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    pub fn budget(mut self, budget: Rc<RetryBudget>) -> Self {
        self.budget = Some(budget);
        self
    }

    /// How a failed attempt's error is classified (default: ambiguous, which
    /// is retried only when idempotent or keyed).
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// use edge_deadline::web::{Error, Failure, RetryOptions};
    /// let options = RetryOptions::new(25.0).classify(|e| match e {
    ///     Error::InvalidArgument { .. } => Failure::Permanent,
    ///     _ => Failure::NotApplied,
    /// });
    /// # let _ = options;
    /// # Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    pub fn classify(mut self, f: impl Fn(&Error) -> Failure + 'static) -> Self {
        self.classify = Some(Box::new(f));
        self
    }
}

impl std::fmt::Debug for RetryOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RetryOptions")
            .field("attempt_min_ms", &self.attempt_min_ms)
            .field("attempt_timeout_ms", &self.attempt_timeout_ms)
            .field("backoff", &self.backoff)
            .field("max_attempts", &self.max_attempts)
            .field("idempotent", &self.idempotent)
            .finish_non_exhaustive()
    }
}

/// What each attempt is told.
#[derive(Debug, Clone, PartialEq)]
pub struct Attempt {
    /// The attempt's number, from 1.
    pub number: u32,
    /// Its timeout (ms): `min(attempt_timeout_ms, remaining)`.
    pub timeout_ms: f64,
    /// The operation key, if one was given.
    pub operation_key: Option<String>,
}

fn random_seed() -> u64 {
    let hi = (js_sys::Math::random() * 4_294_967_296.0) as u64;
    let lo = (js_sys::Math::random() * 4_294_967_296.0) as u64;
    (hi << 32) | lo
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// Whether a signal's reason is this deadline's own expiry.
fn own_deadline(reason: &Error, at: f64) -> bool {
    matches!(reason, Error::DeadlineExceeded { at: a, .. } if *a == at)
}

/// Calls `f(signal, attempt)` until it succeeds or the core says stop, every
/// attempt and backoff inside `deadline`.
///
/// # Errors
/// [`Error::RetryFailed`] with every attempt's outcome; its `reason` is the
/// core's stop code, or `"deadline"` / `"aborted"` when a signal ended the
/// loop. [`Error::InvalidArgument`] naming the option for bad options.
///
/// ```
/// use edge_deadline::web::{retry, Deadline, RetryOptions};
/// # #[wasm_bindgen_test::wasm_bindgen_test] async fn doc() { demo().await.unwrap() }
/// # async fn demo() -> Result<(), edge_deadline::web::Error> {
/// let deadline = Deadline::in_ms(2_000.0)?;
/// let value = retry(&deadline, RetryOptions::new(50.0).attempt_timeout_ms(400.0).idempotent(true), |signal, attempt| async move {
///     let _ = (signal, attempt.number);
///     Ok::<_, edge_deadline::web::Error>(7)
/// })
/// .await?;
/// # let _ = value; Ok(()) }
/// # fn main() {}
/// ```
pub async fn retry<F, Fut, T>(deadline: &Deadline, options: RetryOptions, mut f: F) -> Result<T, Error>
where
    F: FnMut(AbortSignal, Attempt) -> Fut,
    Fut: Future<Output = Result<T, Error>>,
{
    let (base, max, jitter) = options.backoff;
    let policy = RetryPolicy::new(
        options.attempt_min_ms,
        options.attempt_timeout_ms,
        Backoff::new(base, max, jitter)?,
        options.max_attempts,
        options.idempotent,
    )?;
    let at = deadline.instant_ms();
    let mut run = RetryRun::new(policy, at, options.seed.unwrap_or_else(random_seed), options.operation_key.is_some())?;
    let deadline_signal = deadline.signal();
    let parents: Vec<&AbortSignal> = std::iter::once(&deadline_signal).chain(options.signal.as_ref()).collect();
    let mut ends: Vec<&'static str> = Vec::new();
    let mut last: Option<Error> = None;
    let reports = |run: &RetryRun, ends: &[&'static str]| -> Vec<AttemptReport> {
        run.records()
            .iter()
            .enumerate()
            .map(|(i, r)| AttemptReport {
                attempt: r.number,
                started_at_ms: r.started_ms,
                elapsed_ms: r.elapsed_ms,
                outcome: if matches!(r.outcome, core::AttemptOutcome::Ok) {
                    "ok"
                } else {
                    ends.get(i).copied().unwrap_or("error")
                },
            })
            .collect()
    };
    let stopped = |stop: StopReason, run: &RetryRun, ends: &[&'static str], last: Option<Error>| {
        let attempts = reports(run, ends);
        Error::RetryFailed {
            reason: stop.code().into(),
            message: format!("retry stopped after {} attempt{}: {stop}", attempts.len(), plural(attempts.len())),
            attempts,
            last: last.map(Box::new),
        }
    };
    let ended_by = |signal_reason: JsValue, run: &RetryRun, ends: &[&'static str], where_: &str| {
        let reason = Error::from(signal_reason);
        let own = own_deadline(&reason, at);
        let attempts = reports(run, ends);
        Error::RetryFailed {
            reason: if own { "deadline" } else { "aborted" }.into(),
            message: format!(
                "retry stopped after {} attempt{}: {} {where_}",
                attempts.len(),
                plural(attempts.len()),
                if own { "the deadline passed" } else { "the operation was aborted" }
            ),
            attempts,
            last: Some(Box::new(reason)),
        }
    };
    loop {
        if let Some(aborted) = parents.iter().find(|p| p.aborted()) {
            return Err(ended_by(aborted.reason(), &run, &ends, "before the attempt"));
        }
        let t = sys::now();
        let start = match &options.budget {
            Some(b) => run.start(t, Some(&mut b.0.borrow_mut()))?,
            None => run.start(t, None)?,
        };
        let (number, timeout_ms) = match start {
            Start::Attempt { number, timeout_ms, .. } => (number, timeout_ms),
            Start::Stop(stop) => return Err(stopped(stop, &run, &ends, last)),
        };
        // An attempt given all that was left ends with the deadline, not its own timeout.
        let guard = Guard::new(
            Some(t + timeout_ms),
            move || {
                let now = sys::now();
                if now >= at {
                    Error::DeadlineExceeded { at, late_by_ms: now - at }.into()
                } else {
                    Error::AttemptTimeout { attempt: number, timeout_ms }.into()
                }
            },
            &parents,
            true,
        );
        let info = Attempt { number, timeout_ms, operation_key: options.operation_key.clone() };
        let result = guard.race(f(guard.signal(), info)).await;
        drop(guard);
        let t1 = sys::now();
        let failure = match result {
            Ok(Ok(value)) => {
                run.succeeded(t1)?;
                return Ok(value);
            }
            Ok(Err(error)) => {
                let failure = options.classify.as_ref().map_or(Failure::Ambiguous, |c| c(&error));
                ends.push("error");
                last = Some(error);
                failure
            }
            Err(Ended::Cap(reason)) if !own_deadline(&Error::from(reason.clone()), at) => {
                ends.push("timeout");
                last = Some(Error::from(reason));
                Failure::Ambiguous
            }
            Err(Ended::Cap(reason) | Ended::Parent(_, reason)) => {
                // The loop ends here: the attempt may have been applied (ambiguous).
                let own = own_deadline(&Error::from(reason.clone()), at);
                ends.push(if own { "deadline" } else { "aborted" });
                run.failed(t1, Failure::Ambiguous, None)?;
                return Err(ended_by(reason, &run, &ends, "during the attempt"));
            }
        };
        let decision = match &options.budget {
            Some(b) => run.failed(t1, failure, Some(&mut b.0.borrow_mut()))?,
            None => run.failed(t1, failure, None)?,
        };
        match decision {
            AfterFailure::Backoff { delay_ms } => {
                let sleeper = Guard::new(None, || JsValue::UNDEFINED, &parents, false);
                if let Err(Ended::Parent(_, reason)) = sleeper.race(sleep_until(sys::now() + delay_ms)).await {
                    return Err(ended_by(reason, &run, &ends, "during the backoff"));
                }
            }
            AfterFailure::Stop(stop) => return Err(stopped(stop, &run, &ends, last)),
        }
    }
}

/// The options of [`hedge`].
///
/// ```
/// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
/// # fn run() -> Result<(), edge_deadline::web::Error> {
/// let options = edge_deadline::web::HedgeOptions::new(50.0).max_attempts(3);
/// # let _ = options;
/// # Ok(())
/// # }
/// # fn main() {}
/// ```
#[must_use]
#[derive(Debug, Clone)]
pub struct HedgeOptions {
    delay_ms: f64,
    max_attempts: u32,
    signal: Option<AbortSignal>,
}

impl HedgeOptions {
    /// Start another attempt every `delay_ms` while none has answered
    /// (default at most 2 attempts).
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// let options = edge_deadline::web::HedgeOptions::new(80.0);
    /// # let _ = options;
    /// # Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    pub fn new(delay_ms: f64) -> Self {
        Self { delay_ms, max_attempts: 2, signal: None }
    }

    /// At most this many attempts in all (1–100).
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// let options = edge_deadline::web::HedgeOptions::new(80.0).max_attempts(3);
    /// # let _ = options;
    /// # Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    pub fn max_attempts(mut self, n: u32) -> Self {
        self.max_attempts = n;
        self
    }

    /// A caller's signal: when it aborts, every attempt is aborted.
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// let caller = web_sys::AbortController::new().unwrap();
    /// let options = edge_deadline::web::HedgeOptions::new(80.0).signal(&caller.signal());
    /// # let _ = options;
    /// # Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    pub fn signal(mut self, signal: &AbortSignal) -> Self {
        self.signal = Some(signal.clone());
        self
    }
}

struct InFlight<Fut> {
    number: u32,
    controller: AbortController,
    future: Pin<Box<Fut>>,
}

/// Starts `f(signal, attempt_number)`, and another attempt every `delay_ms`
/// while none has answered (up to `max_attempts`); a failed attempt starts the
/// next one at once. The first to succeed wins; the others are aborted.
///
/// # Errors
/// [`Error::RetryFailed`]: `"exhausted"` when every attempt failed,
/// `"deadline"` / `"aborted"` when a signal ended it. [`Error::InvalidArgument`]
/// naming `delayMs` or `maxAttempts`.
///
/// ```
/// use edge_deadline::web::{hedge, Deadline, HedgeOptions};
/// # #[wasm_bindgen_test::wasm_bindgen_test] async fn doc() { demo().await.unwrap() }
/// # async fn demo() -> Result<(), edge_deadline::web::Error> {
/// let deadline = Deadline::in_ms(1_000.0)?;
/// let fastest = hedge(&deadline, HedgeOptions::new(100.0), |signal, attempt| async move {
///     let _ = signal;
///     Ok::<_, edge_deadline::web::Error>(attempt)
/// })
/// .await?;
/// # let _ = fastest; Ok(()) }
/// # fn main() {}
/// ```
pub async fn hedge<F, Fut, T>(deadline: &Deadline, options: HedgeOptions, mut f: F) -> Result<T, Error>
where
    F: FnMut(AbortSignal, u32) -> Fut,
    Fut: Future<Output = Result<T, Error>>,
{
    let delay_ms = check_hedge(options.delay_ms, options.max_attempts)?;
    let max = options.max_attempts;
    let at = deadline.instant_ms();
    let deadline_signal = deadline.signal();
    let parents: Vec<&AbortSignal> = std::iter::once(&deadline_signal).chain(options.signal.as_ref()).collect();
    let guard = Guard::new(None, || JsValue::UNDEFINED, &parents, false);
    let mut in_flight: Vec<InFlight<Fut>> = Vec::new();
    let mut reports: Vec<AttemptReport> = Vec::new();
    let mut last: Option<Error> = None;
    let mut started: u32 = 0;
    let mut next: Option<Sleep> = None;

    let start = |started: &mut u32,
                 in_flight: &mut Vec<InFlight<Fut>>,
                 reports: &mut Vec<AttemptReport>,
                 next: &mut Option<Sleep>,
                 f: &mut F| {
        *started += 1;
        let controller = AbortController::new().expect_throw("this runtime has no AbortController");
        let future = Box::pin(f(controller.signal(), *started));
        reports.push(AttemptReport {
            attempt: *started,
            started_at_ms: sys::now(),
            elapsed_ms: 0.0,
            outcome: "running",
        });
        in_flight.push(InFlight { number: *started, controller, future });
        *next = if *started < max { Some(sleep_until(sys::now() + delay_ms)) } else { None };
    };
    let finish = |reports: &mut Vec<AttemptReport>, number: u32, outcome: &'static str| {
        if let Some(r) = reports.get_mut(number as usize - 1) {
            r.elapsed_ms = sys::now() - r.started_at_ms;
            r.outcome = outcome;
        }
    };

    if guard.ended().is_none() {
        start(&mut started, &mut in_flight, &mut reports, &mut next, &mut f);
    }
    std::future::poll_fn(|cx| {
        loop {
            if let Some(ended) = guard.ended() {
                let reason = Error::from(ended.reason().clone());
                let own = own_deadline(&reason, at);
                for a in in_flight.drain(..) {
                    a.controller.abort_with_reason(ended.reason());
                    finish(&mut reports, a.number, if own { "deadline" } else { "aborted" });
                }
                return Poll::Ready(Err(Error::RetryFailed {
                    reason: if own { "deadline" } else { "aborted" }.into(),
                    message: format!(
                        "hedge stopped after {started} attempt{}: {}",
                        plural(started as usize),
                        if own { "the deadline passed" } else { "the operation was aborted" }
                    ),
                    attempts: reports.clone(),
                    last: Some(Box::new(reason)),
                }));
            }
            let mut progressed = false;
            let mut i = 0;
            while i < in_flight.len() {
                match in_flight[i].future.as_mut().poll(cx) {
                    Poll::Pending => i += 1,
                    Poll::Ready(Ok(value)) => {
                        let winner = in_flight.remove(i);
                        finish(&mut reports, winner.number, "ok");
                        let reason = abort_error(&format!("hedged attempt {} answered first", winner.number));
                        for a in in_flight.drain(..) {
                            a.controller.abort_with_reason(&reason);
                            finish(&mut reports, a.number, "aborted");
                        }
                        return Poll::Ready(Ok(value));
                    }
                    Poll::Ready(Err(error)) => {
                        let failed = in_flight.remove(i);
                        finish(&mut reports, failed.number, "error");
                        last = Some(error);
                        if started < max {
                            start(&mut started, &mut in_flight, &mut reports, &mut next, &mut f);
                            progressed = true;
                        }
                    }
                }
            }
            if in_flight.is_empty() && !progressed {
                let n = reports.len();
                return Poll::Ready(Err(Error::RetryFailed {
                    reason: "exhausted".into(),
                    message: format!("hedge stopped after {n} attempt{}: all {n} attempts failed", plural(n)),
                    attempts: reports.clone(),
                    last: last.take().map(Box::new),
                }));
            }
            if let Some(sleep) = next.as_mut() {
                if Pin::new(sleep).poll(cx).is_ready() {
                    start(&mut started, &mut in_flight, &mut reports, &mut next, &mut f);
                    progressed = true;
                }
            }
            if !progressed {
                // Registers the waker for the guard (deadline / caller signal).
                let _ = Pin::new(&mut Box::pin(guard.until_ended())).poll(cx);
                return Poll::Pending;
            }
        }
    })
    .await
}

/// A `DOMException`-like `AbortError`, the reason losers of a hedge are aborted with.
fn abort_error(message: &str) -> JsValue {
    let e = js_sys::Error::new(message);
    e.set_name("AbortError");
    e.into()
}
