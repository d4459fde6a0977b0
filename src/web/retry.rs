//! Retries inside one deadline, as async Rust.
//!
//! Whether to attempt, each attempt's timeout, the backoff delay (seeded
//! jitter), the idempotency rule, how each attempt ended, why the loop
//! stopped and its sentence, and the retry budget's accounting are the
//! core's ([`crate::core::retry`] `RetryRun`, see its module doc); this file
//! owns the attempts' signals and timers and the abortable backoff sleep, as
//! `js/retry.js` does. Hedging is [`super::hedge`].
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
//! 3. When `retry` returns, every timer it armed is cleared and every
//!    listener it added removed.
//! 4. A failure carries every attempt's outcome ([`Error::RetryFailed`]).
//! 5. A failed attempt whose error is a JavaScript `Response`, or a value with
//!    a `response` (a `Response`, as an HTTP client attaches it), hands its `Retry-After`,
//!    `RateLimit-Reset` and `X-RateLimit-Reset` to the core
//!    ([`crate::core::retry::after`]); the wall clock is read only when the
//!    core asks for it. The wait is slept only when an attempt still fits
//!    after it (and it is within `max_retry_after_ms`); otherwise the loop
//!    stops at once with reason `"retry-after"`.

use std::cell::RefCell;
use std::future::Future;
use std::rc::Rc;

use wasm_bindgen::JsValue;
use web_sys::AbortSignal;

use super::errors::AttemptReport;
use super::guard::{Ended, Guard};
use super::timers::{self, sleep_until};
use super::{Deadline, Error};
pub use crate::core::retry::Failure;
use crate::core::retry::{
    self as core, server_wait, AfterFailure, AttemptFailure, AttemptRecord, Backoff, JitterOption, RetryError,
    RetryPolicy, RetryRun, ServerWait, Start, Stop, Stopped,
};
use crate::core::retry_budget::{self, RetryBudgetError};

impl From<RetryError> for Error {
    fn from(error: RetryError) -> Self {
        // The core's parameter names (`RetryError::param`), as `&'static str`.
        let param = match &error {
            RetryError::Time(e) => match e.param() {
                Some("baseMs") => "backoff.baseMs",
                Some("maxMs") => "backoff.maxMs",
                _ => return Error::from(*e),
            },
            RetryError::BadJitter { .. } | RetryError::UnknownJitter { .. } => "backoff.jitter",
            RetryError::MaxBelowBase { .. } => "backoff.maxMs",
            RetryError::BadMaxAttempts { .. } => "maxAttempts",
            RetryError::BadAttempt { .. } => "attempt",
            RetryError::UnknownFailure { .. } => "failure",
            RetryError::Budget(e) => return Error::from(e.clone()),
            _ => "options",
        };
        Error::described(param, &error)
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
        Error::described(param, &error)
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
pub struct RetryBudget(pub(super) RefCell<retry_budget::RetryBudget>);

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
pub(super) type Classify = Box<dyn Fn(&Error) -> Failure>;

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
    jitter: Option<String>,
    max_retry_after_ms: Option<f64>,
    max_attempts: u32,
    /// Not set: false for [`retry`], true for a stream (nothing delivered, a
    /// read can be made again).
    idempotent: Option<bool>,
    pub(super) operation_key: Option<String>,
    pub(super) seed: Option<u64>,
    pub(super) signal: Option<AbortSignal>,
    pub(super) budget: Option<Rc<RetryBudget>>,
    pub(super) classify: Option<Classify>,
    circuit: Option<super::Circuit>,
    record: Option<(super::TimeoutBook, String)>,
}

impl RetryOptions {
    /// No attempt starts with less than `attempt_min_ms` left. Defaults: each
    /// attempt may run to the deadline, backoff 50–1000 ms with full jitter,
    /// 3 attempts, not idempotent (idempotent for a stream read by
    /// [`fetch_with_deadline`](super::fetch_with_deadline)), no operation
    /// key, a random seed.
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
            jitter: None,
            max_retry_after_ms: None,
            max_attempts: core::DEFAULT_MAX_ATTEMPTS,
            idempotent: None,
            operation_key: None,
            seed: None,
            signal: None,
            budget: None,
            classify: None,
            circuit: None,
            record: None,
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
        self.jitter = None;
        self
    }

    /// The backoff's jitter by name, one of AWS's schemes (JavaScript's
    /// `backoff.jitter` as a string): `"full"` (the fraction 1), `"equal"`
    /// (0.5) or `"decorrelated"` (each delay `min(max_ms, uniform in
    /// [base_ms, 3 × the previous])`). Another name is refused when the retry
    /// starts ([`Error::InvalidArgument`] naming `backoff.jitter`).
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// let options = edge_deadline::web::RetryOptions::new(25.0).backoff(10.0, 1_000.0, 1.0).jitter("decorrelated");
    /// # let _ = options;
    /// # Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    pub fn jitter(mut self, name: &str) -> Self {
        self.jitter = Some(name.into());
        self
    }

    /// The longest wait a server may ask for (`Retry-After`, the rate-limit
    /// resets) that is still waited; a longer one stops the retry at once
    /// with reason `"retry-after"`. Default: no cap but the deadline.
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// let options = edge_deadline::web::RetryOptions::new(25.0).max_retry_after_ms(5_000.0);
    /// # let _ = options;
    /// # Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    pub fn max_retry_after_ms(mut self, ms: f64) -> Self {
        self.max_retry_after_ms = Some(ms);
        self
    }

    /// A circuit breaker's key ([`CircuitBreaker::circuit`](super::CircuitBreaker::circuit)):
    /// no attempt goes into it while it refuses. The retry waits for it when
    /// the deadline leaves `attempt_min_ms` after that, and otherwise stops
    /// with reason `"circuit-open"` (its cause the [`Error::CircuitOpen`]).
    /// Every attempt that went through tells the breaker how it ended.
    pub fn circuit(mut self, circuit: super::Circuit) -> Self {
        self.circuit = Some(circuit);
        self
    }

    /// Every attempt records into `book` under `bucket` (JavaScript's
    /// `record: book, bucket`): its latency when it succeeds, a timeout when
    /// it is cut by time, an error when it fails.
    pub fn record(mut self, book: &super::TimeoutBook, bucket: impl Into<String>) -> Self {
        self.record = Some((book.clone(), bucket.into()));
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
        self.idempotent = Some(yes);
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

    /// How a failed attempt's error is classified (default: for a thrown
    /// `Response`, or a JS error whose `response` has an HTTP status, 429 and
    /// 503 not applied, 408 and other 5xx ambiguous, any other permanent;
    /// otherwise ambiguous, which is retried only when idempotent or keyed).
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
            .field("jitter", &self.jitter)
            .field("max_retry_after_ms", &self.max_retry_after_ms)
            .field("max_attempts", &self.max_attempts)
            .field("idempotent", &self.idempotent)
            .finish_non_exhaustive()
    }
}

impl RetryOptions {
    /// The core's policy of these options, each attempt bounded by
    /// `attempt_timeout_ms`; `idempotent` when the caller did not say.
    pub(super) fn policy(&self, attempt_timeout_ms: Option<f64>, idempotent: bool) -> Result<RetryPolicy, Error> {
        let (base, max, fraction) = self.backoff;
        let jitter = match &self.jitter {
            Some(name) => JitterOption::Name(name.clone()),
            None => JitterOption::Fraction(fraction),
        };
        Ok(RetryPolicy::new(
            self.attempt_min_ms,
            attempt_timeout_ms,
            Backoff::with_jitter(base, max, &jitter)?,
            self.max_attempts,
            self.idempotent.unwrap_or(idempotent),
        )?
        .with_max_retry_after_ms(self.max_retry_after_ms)?)
    }

    /// Each attempt's own timeout, if one was set.
    pub(super) fn attempt_timeout(&self) -> Option<f64> {
        self.attempt_timeout_ms
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

pub(super) fn random_seed() -> u64 {
    let hi = (js_sys::Math::random() * 4_294_967_296.0) as u64;
    let lo = (js_sys::Math::random() * 4_294_967_296.0) as u64;
    (hi << 32) | lo
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
    let policy = options.policy(options.attempt_timeout_ms, false)?;
    let at = deadline.instant_ms();
    let mut run = RetryRun::new(policy, at, options.seed.unwrap_or_else(random_seed), options.operation_key.is_some())?;
    let deadline_signal = deadline.signal();
    let parents: Vec<&AbortSignal> = std::iter::once(&deadline_signal).chain(options.signal.as_ref()).collect();
    let mut last: Option<Error> = None;
    // The core's stop, its word and its sentence; `last` is the cause.
    let stopped = |run: &RetryRun, last: Option<Error>| match run.stopped() {
        Some(stop) => failed(stop, reports(run.records()), last),
        None => Error::invalid("options", "the retry stopped without a reason"),
    };
    // A signal ended the loop: the core records it and words the stop.
    let ended_by = |signal_reason: JsValue, run: &mut RetryRun| -> Result<Error, Error> {
        let reason = Error::from(signal_reason);
        let stop = run.aborted(timers::now(), own_deadline(&reason, at))?;
        Ok(failed(stop, reports(run.records()), Some(reason)))
    };
    loop {
        if let Some(aborted) = parents.iter().find(|p| p.aborted()) {
            return Err(ended_by(aborted.reason(), &mut run)?);
        }
        let t = timers::now();
        let start = match &options.budget {
            Some(b) => run.start(t, Some(&mut b.0.borrow_mut()))?,
            None => run.start(t, None)?,
        };
        let (number, timeout_ms) = match start {
            Start::Attempt { number, timeout_ms, .. } => (number, timeout_ms),
            Start::Stop(_) => return Err(stopped(&run, last)),
        };
        let permit = match &options.circuit {
            None => None,
            Some(circuit) => match circuit.acquire(None) {
                Ok(permit) => Some(permit),
                Err(refusal @ Error::CircuitOpen { retry_at, .. }) => match run.refused(timers::now(), retry_at)? {
                    AfterFailure::Backoff { delay_ms } => {
                        let sleeper = Guard::new(None, || JsValue::UNDEFINED, &parents, false);
                        if let Err(Ended::Parent(_, reason)) = sleeper.race(sleep_until(timers::now() + delay_ms)).await
                        {
                            return Err(ended_by(reason, &mut run)?);
                        }
                        continue;
                    }
                    AfterFailure::Stop(_) => return Err(stopped(&run, Some(refusal))),
                },
                Err(other) => return Err(other),
            },
        };
        // An attempt given all that was left ends with the deadline, not its own timeout.
        let guard = Guard::new(
            Some(t + timeout_ms),
            move || {
                let now = timers::now();
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
        let t1 = timers::now();
        if let Some((book, bucket)) = &options.record {
            let how = match &result {
                Ok(Ok(_)) => Some(super::CallOutcome::Ok),
                Ok(Err(e)) if e.is_timeout() => Some(super::CallOutcome::Timeout),
                Ok(Err(_)) => Some(super::CallOutcome::Error),
                Err(Ended::Cap(_)) => Some(super::CallOutcome::Timeout),
                _ => None,
            };
            // A bucket the book refuses changes nothing: the attempt's result stands.
            if let Some(how) = how {
                let _ = book.record(bucket, if t1 > t { t1 - t } else { 0.0 }, how);
            }
        }
        // The breaker hears how the attempt ended; a permit dropped unrecorded
        // (the caller's signal ended the loop) counts as cancelled.
        match (&result, permit) {
            (Ok(Ok(_)), Some(p)) => p.success(),
            (Ok(Err(e)), Some(p)) => p.failed_with(e),
            (Err(Ended::Cap(_)), Some(p)) => p.timeout(),
            _ => {}
        }
        let mut wait = None;
        let how = match result {
            Ok(Ok(value)) => {
                run.succeeded(t1)?;
                return Ok(value);
            }
            Ok(Err(error)) => {
                let failure = options.classify.as_ref().map_or_else(|| default_failure(&error), |c| c(&error));
                wait = asked_wait(&error);
                last = Some(error);
                AttemptFailure::Error(failure)
            }
            Err(Ended::Cap(reason)) if !own_deadline(&Error::from(reason.clone()), at) => {
                last = Some(Error::from(reason));
                AttemptFailure::Timeout
            }
            // The loop ends here; the core records the attempt (ambiguous: it may have been applied).
            Err(Ended::Cap(reason) | Ended::Parent(_, reason)) => return Err(ended_by(reason, &mut run)?),
        };
        let decision = match &options.budget {
            Some(b) => run.attempt_failed_waiting(t1, how, wait, Some(&mut b.0.borrow_mut()))?,
            None => run.attempt_failed_waiting(t1, how, wait, None)?,
        };
        match decision {
            AfterFailure::Backoff { delay_ms } => {
                let sleeper = Guard::new(None, || JsValue::UNDEFINED, &parents, false);
                if let Err(Ended::Parent(_, reason)) = sleeper.race(sleep_until(timers::now() + delay_ms)).await {
                    return Err(ended_by(reason, &mut run)?);
                }
            }
            AfterFailure::Stop(_) => return Err(stopped(&run, last)),
        }
    }
}

/// How a failure is classified when no `classify` was given: for a thrown
/// `Response`, or an error whose `response` has an HTTP status, the core's
/// status rule ([`response_failure`](crate::core::retry::response_failure));
/// otherwise ambiguous.
pub(super) fn default_failure(error: &Error) -> Failure {
    use wasm_bindgen::JsCast;
    let Error::Js(value) = error else { return Failure::Ambiguous };
    let status = match value.dyn_ref::<web_sys::Response>() {
        Some(thrown) => Some(f64::from(thrown.status())),
        None => js_sys::Reflect::get(value, &JsValue::from_str("response"))
            .ok()
            .filter(JsValue::is_object)
            .and_then(|r| js_sys::Reflect::get(&r, &JsValue::from_str("status")).ok())
            .and_then(|s| s.as_f64()),
    };
    status.and_then(crate::core::retry::response_failure).unwrap_or(Failure::Ambiguous)
}

/// The wait a failed attempt's response asked for (invariant 5): the
/// headers of the error's `response`, read by the core; `Date.now()` only
/// when the core needs the wall clock.
pub(super) fn asked_wait(error: &Error) -> Option<f64> {
    use wasm_bindgen::JsCast;
    let Error::Js(value) = error else { return None };
    // The error's `response`, or the error itself when an attempt threw the Response.
    let headers = match value.dyn_ref::<web_sys::Response>() {
        Some(thrown) => thrown.headers(),
        None => {
            js_sys::Reflect::get(value, &JsValue::from_str("response")).ok()?.dyn_ref::<web_sys::Response>()?.headers()
        }
    };
    let get = |name: &str| headers.get(name).ok().flatten();
    let (ra, rl, xrl) = (get("retry-after"), get("ratelimit-reset"), get("x-ratelimit-reset"));
    let ask = |wall: f64| server_wait(ra.as_deref(), rl.as_deref(), xrl.as_deref(), wall);
    match ask(f64::NAN) {
        ServerWait::Ms(ms) => Some(ms),
        ServerWait::NeedsWallClock => match ask(js_sys::Date::now()) {
            ServerWait::Ms(ms) => Some(ms),
            _ => None,
        },
        ServerWait::None => None,
    }
}

/// The core's records as the web API reports them.
pub(super) fn reports(records: &[AttemptRecord]) -> Vec<AttemptReport> {
    AttemptReport::all(records, |r| (r.number, r.started_ms, r.elapsed_ms, r.ended.as_str()))
}

/// The `RetryFailed` of a stopped retry or hedge: the core's word and sentence.
pub(super) fn failed(stop: Stopped, attempts: Vec<AttemptReport>, last: Option<Error>) -> Error {
    let Stop { retry_after_ms, remaining_ms, .. } = stop.stop();
    Error::RetryFailed {
        reason: stop.code().into(),
        message: stop.to_string(),
        attempts,
        last: last.map(Box::new),
        retry_after_ms,
        remaining_ms,
    }
}

/// Whether a signal's reason is this deadline's own expiry.
pub(super) fn own_deadline(reason: &Error, at: f64) -> bool {
    matches!(reason, Error::DeadlineExceeded { at: a, .. } if *a == at)
}
