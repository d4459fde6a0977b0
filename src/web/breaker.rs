//! Circuit breakers for Rust on the edge: the same core machine as the
//! JavaScript `CircuitBreaker` (src/core/breaker.rs, its module doc says when
//! a key opens and when it lets a probe through), the same option names,
//! defaults and errors. This file owns the clock reads, the permits and the
//! state-change callback; no timer and no listener (an open key half-opens
//! when a call arrives after `openMs`).

use std::cell::RefCell;
use std::future::Future;

use super::errors::Error;
use super::timers;
use crate::core::breaker::{error_outcome, Admit, Breaker, BreakerError, Change, CircuitState, CircuitStats, Outcome};

pub use crate::core::breaker::{BreakerOptions, OpenReason};

impl From<BreakerError> for Error {
    fn from(error: BreakerError) -> Self {
        let param = match &error {
            BreakerError::Time(e) => return Error::from(*e),
            BreakerError::Count { param, .. }
            | BreakerError::Rate { param, .. }
            | BreakerError::Duration { param, .. } => param,
            BreakerError::BothWindows => "windowMs",
            BreakerError::Bytes { .. } => "bytes",
        };
        Error::described(param, &error)
    }
}

/// A key's change of state, as [`CircuitBreaker::on_state_change`] hears it.
#[derive(Debug, Clone, PartialEq)]
pub struct CircuitStateChange {
    /// The key.
    pub key: String,
    /// The state before.
    pub from: CircuitState,
    /// The state after.
    pub to: CircuitState,
    /// Why it opened, when `to` is open.
    pub reason: Option<OpenReason>,
    /// When (ms on the `performance.now()` timeline).
    pub at: f64,
}

type Listener = Box<dyn Fn(&CircuitStateChange)>;

/// A keyed circuit breaker: one guards many upstreams, a key each. Share it
/// with `Rc` between the calls to those upstreams.
///
/// ```
/// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
/// # fn run() -> Result<(), edge_deadline::web::Error> {
/// use edge_deadline::web::{BreakerOptions, CircuitBreaker};
/// let breaker = CircuitBreaker::new(BreakerOptions { consecutive_failures: Some(3.0), ..Default::default() })?;
/// let permit = breaker.acquire("llm", None)?;
/// permit.success();
/// assert_eq!(breaker.state("llm"), edge_deadline::core::breaker::CircuitState::Closed);
/// # Ok(())
/// # }
/// # fn main() {}
/// ```
pub struct CircuitBreaker {
    core: RefCell<Breaker>,
    listener: Option<Listener>,
}

impl std::fmt::Debug for CircuitBreaker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CircuitBreaker").field("keys", &self.keys()).finish_non_exhaustive()
    }
}

impl CircuitBreaker {
    /// A breaker with `options` (every one optional; the defaults are the
    /// core's, the same as JavaScript's).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the option (`failureRate`, `openMs`, …).
    pub fn new(options: BreakerOptions) -> Result<Self, Error> {
        Ok(Self { core: RefCell::new(Breaker::new(&options)?), listener: None })
    }

    /// Calls `listener` after each change of a key's state.
    #[must_use]
    pub fn on_state_change(mut self, listener: impl Fn(&CircuitStateChange) + 'static) -> Self {
        self.listener = Some(Box::new(listener));
        self
    }

    fn emit(&self, key: &str, change: Change, at: f64) {
        if let Some(listener) = &self.listener {
            let (from, to) = change.states();
            let reason = match change {
                Change::Opened(r) => Some(r),
                _ => None,
            };
            listener(&CircuitStateChange { key: key.to_owned(), from, to, reason, at });
        }
    }

    /// A permit for one call on `key`; `slow_ms`: the call's timeout (an
    /// answer later than that is slow).
    ///
    /// # Errors
    /// [`Error::CircuitOpen`] when the breaker refuses the call.
    pub fn acquire(&self, key: &str, slow_ms: Option<f64>) -> Result<CircuitPermit<'_>, Error> {
        let t = timers::now();
        let admit = {
            let mut core = self.core.borrow_mut();
            let slot = core.key(key, t).index;
            (slot, core.check(slot, t))
        };
        match admit {
            (slot, Admit::Closed) => {
                Ok(CircuitPermit { breaker: self, key: key.to_owned(), slot, probe: false, start: t, slow_ms })
            }
            (slot, Admit::Probe { half_opened }) => {
                if half_opened {
                    self.emit(key, Change::HalfOpened, t);
                }
                Ok(CircuitPermit { breaker: self, key: key.to_owned(), slot, probe: true, start: t, slow_ms })
            }
            (slot, Admit::Refused { until }) => {
                let state = match self.core.borrow_mut().stats(slot, t).state {
                    CircuitState::HalfOpen => "half-open",
                    _ => "open",
                };
                Err(Error::CircuitOpen { key: key.to_owned(), state, retry_at: until, retry_in_ms: until - t })
            }
        }
    }

    /// Runs `call()` through the breaker on `key`: [`Error::CircuitOpen`]
    /// without calling it when refused; otherwise its result, recorded as
    /// [`CircuitPermit::failed_with`] says for an `Err` (a timeout a slow
    /// failure; a shed call, an inner breaker's refusal or a caller that left
    /// nothing); an answer later than `slow_ms`, its step's timeout, is slow.
    /// A future dropped before it ends (the caller left) counts nothing.
    ///
    /// # Errors
    /// [`Error::CircuitOpen`], or the call's own error.
    pub async fn run<T, F, Fut>(&self, key: &str, slow_ms: Option<f64>, call: F) -> Result<T, Error>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, Error>>,
    {
        let permit = self.acquire(key, slow_ms)?;
        let result = call().await;
        match &result {
            Ok(_) => permit.success(),
            Err(e) => permit.failed_with(e),
        }
        result
    }

    /// The state a call on `key` would meet now (an open key past its
    /// instant reads half-open).
    pub fn state(&self, key: &str) -> CircuitState {
        self.stats(key).state
    }

    /// The counters of `key` now.
    pub fn stats(&self, key: &str) -> CircuitStats {
        let t = timers::now();
        let mut core = self.core.borrow_mut();
        let slot = core.key(key, t).index;
        core.stats(slot, t)
    }

    /// The keys held.
    pub fn keys(&self) -> Vec<String> {
        self.core.borrow().names().map(str::to_owned).collect()
    }

    /// The keys' states as bytes, for [`import_state`](Self::import_state)
    /// elsewhere (the same bytes as JavaScript's `exportState()`).
    pub fn export_state(&self) -> Vec<u8> {
        self.core.borrow().export(timers::now(), js_sys::Date::now())
    }

    /// Opens the keys open in `bytes` (less the time since the export).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming `bytes` (code `BAD_STATE`) when they
    /// are not an exported state; nothing changes then.
    pub fn import_state(&self, bytes: &[u8]) -> Result<(), Error> {
        let t = timers::now();
        let opened = self.core.borrow_mut().import(bytes, t, js_sys::Date::now())?;
        let names: Vec<String> = self.keys();
        for slot in opened {
            if let Some(name) = names.get(slot) {
                self.emit(name, Change::Opened(OpenReason::Imported), t);
            }
        }
        Ok(())
    }
}

/// One key of a [`CircuitBreaker`] ([`CircuitBreaker::circuit`]), for
/// [`RetryOptions::circuit`](super::RetryOptions::circuit).
#[derive(Debug, Clone)]
pub struct Circuit {
    breaker: std::rc::Rc<CircuitBreaker>,
    key: String,
}

impl Circuit {
    /// The key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// [`CircuitBreaker::acquire`] for this key.
    ///
    /// # Errors
    /// [`Error::CircuitOpen`] when the breaker refuses the call.
    pub fn acquire(&self, slow_ms: Option<f64>) -> Result<CircuitPermit<'_>, Error> {
        self.breaker.acquire(&self.key, slow_ms)
    }

    /// [`CircuitBreaker::state`] of this key.
    pub fn state(&self) -> CircuitState {
        self.breaker.state(&self.key)
    }
}

impl CircuitBreaker {
    /// One key of this breaker (shared through `Rc`), to hand to
    /// [`RetryOptions::circuit`](super::RetryOptions::circuit).
    pub fn circuit(self: &std::rc::Rc<Self>, key: &str) -> Circuit {
        Circuit { breaker: self.clone(), key: key.to_owned() }
    }
}

/// The right to make one call through a [`CircuitBreaker`]: say how it
/// ended with [`success`](Self::success), [`failure`](Self::failure),
/// [`timeout`](Self::timeout) or [`cancel`](Self::cancel). A permit dropped
/// without one of these counts as cancelled (a future dropped mid-call: the
/// caller left).
#[derive(Debug)]
pub struct CircuitPermit<'a> {
    breaker: &'a CircuitBreaker,
    key: String,
    slot: usize,
    probe: bool,
    start: f64,
    slow_ms: Option<f64>,
}

impl CircuitPermit<'_> {
    /// Whether the call goes as a half-open probe.
    pub fn probe(&self) -> bool {
        self.probe
    }

    /// It answered (slow when later than its `slow_ms` or `slowCallMs`).
    pub fn success(self) {
        self.done(Outcome::Success);
    }

    /// It failed.
    pub fn failure(self) {
        self.done(Outcome::Failure);
    }

    /// It ended with `error`; the core decides how that counts: a timeout
    /// is a slow failure; [`Error::Overloaded`] (a limiter shed it),
    /// [`Error::CircuitOpen`] (an inner breaker refused it),
    /// [`Error::InsufficientBudget`] (refused for time before it started) or an
    /// `AbortError` (the caller left), in the error or its causes, is not the
    /// dependency's outcome and counts nothing (a probe's permit is freed);
    /// any other error is a failure.
    pub fn failed_with(self, error: &Error) {
        self.done(error_outcome(error.breaker_found()));
    }

    /// It was cut at its timeout: a failure, and slow.
    pub fn timeout(self) {
        self.done(Outcome::Timeout);
    }

    /// The caller gave up: nothing is counted, a probe's permit is freed.
    pub fn cancel(self) {
        self.done(Outcome::Cancelled);
    }

    fn done(mut self, outcome: Outcome) {
        self.record(outcome);
        // Recorded: Drop has nothing left to do.
        self.slot = usize::MAX;
    }

    fn record(&mut self, outcome: Outcome) {
        if self.slot == usize::MAX {
            return;
        }
        let t = timers::now();
        let slow_ms = self.slow_ms.unwrap_or(f64::NAN);
        let change = self.breaker.core.borrow_mut().record(self.slot, t, self.probe, outcome, t - self.start, slow_ms);
        if let Some(change) = change {
            self.breaker.emit(&self.key, change, t);
        }
    }
}

impl Drop for CircuitPermit<'_> {
    fn drop(&mut self) {
        self.record(Outcome::Cancelled);
    }
}
