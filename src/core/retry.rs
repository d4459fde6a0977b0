//! Retries inside one deadline: backoff schedules and the decision to try
//! again. The retry budget shared across calls is [`crate::core::budget`];
//! hedging's policy is [`crate::core::hedge`].
//!
//! # Why retries live inside the deadline
//! Two attempts of 10 s each are a 20 s step, whatever the caller's deadline
//! says. Here every attempt's timeout is `min(attemptTimeout, remaining)`, and
//! the decision to try again is made twice: before the backoff (is there room
//! to sleep *and* still run an attempt of `attemptMinMs`?) and again after it,
//! because the sleep may have overrun. A backoff that would leave less than
//! `attemptMinMs` is not slept at all: sleeping only to give up is the
//! slowest way to fail.
//!
//! # Ambiguous failures
//! A timeout is an observation failure, not a rollback: the server may have
//! applied the request before the answer was lost. Repeating a
//! non-idempotent operation after such a failure can apply it twice, so
//! [`Failure::Ambiguous`] is retried only when the operation is idempotent or
//! the caller holds an operation key that makes a repeat safe (the server
//! de-duplicates on it). [`Failure::NotApplied`] (refused connection, a 429 or
//! 503 that proves nothing ran) is always safe to retry;
//! [`Failure::Permanent`] never is.
//!
//! # Determinism
//! Jitter comes from [`SplitMix64`], seeded by the caller: the same seed gives
//! the same schedule on every runtime, so tests and incident replays are exact.
//! Production callers seed from `crypto.getRandomValues`.
//!
//! # Invariants (each is a property test in this module)
//! 1. A backoff delay lies in `[c × (1 − jitter), c]` where the ceiling
//!    `c = min(maxMs, baseMs × 2^(k−1))` never decreases with `k`; a seed
//!    always yields the same schedule.
//! 2. No attempt starts with less than `attemptMinMs` (or nothing) left; its
//!    timeout never exceeds `attemptTimeoutMs` nor the time remaining, and
//!    is at least `attemptMinMs` and above zero.
//! 3. A backoff is only returned when at least `attemptMinMs` would remain
//!    after sleeping it.
//! 4. An ambiguous failure of a non-idempotent operation is never retried
//!    without an operation key.
//! 5. A retry loop whose attempts hang until their timeout ends by the
//!    deadline (plus the lateness of the last timer), with at most
//!    `maxAttempts` attempts; inside a plan, seed 004's four steps × two
//!    attempts × 10 s end by the caller's 30 s, never at 80 s.

use core::fmt;

use serde::{Deserialize, Serialize};

use crate::core::budget::{BudgetError, RetryBudget};
use crate::core::deadline::{check_ms, DeadlineError, Ms};
use crate::core::error::{Described, Kind};
use crate::core::rng::SplitMix64;

/// The most attempts one retry loop accepts (and the longest schedule).
pub const MAX_ATTEMPTS: u32 = 100;

/// Attempts when the caller does not say (one try and two retries).
pub const DEFAULT_MAX_ATTEMPTS: u32 = 3;

/// The backoff when the caller does not say: full jitter (`jitter: 1`) under a
/// ceiling that doubles from 100 ms up to 2 s, so synchronized clients spread
/// out.
pub const DEFAULT_BACKOFF: BackoffOptions = BackoffOptions { base_ms: 100.0, max_ms: 2_000.0, jitter: 1.0 };

/// Why a retry setting or call was refused.
#[derive(Debug, Clone, PartialEq)]
pub enum RetryError {
    /// A duration (`baseMs`, `maxMs`, `attemptMinMs`, `attemptTimeoutMs`, `now`,
    /// `at`, `delayMs`) is NaN, infinite, negative or too large.
    Time(DeadlineError),
    /// `jitter` is outside `[0, 1]` (0: no jitter, 1: anywhere from 0 to the ceiling).
    BadJitter { value: f64 },
    /// `maxMs` is below `baseMs`: the first delay would already exceed the cap.
    MaxBelowBase { base_ms: f64, max_ms: f64 },
    /// `maxAttempts` is outside `1 ..= MAX_ATTEMPTS`.
    BadMaxAttempts { value: u32 },
    /// A schedule of more than `MAX_ATTEMPTS` retries was asked for.
    TooManyRetries { value: u32 },
    /// Attempt numbers start at 1.
    BadAttempt { value: u32 },
    /// A failure kind other than `ambiguous`, `not-applied` or `permanent`.
    UnknownFailure { value: String },
    /// The shared retry budget refused a value ([`crate::core::budget`]).
    Budget(BudgetError),
    /// A [`RetryRun`] method was called in the wrong state, e.g. `failed`
    /// without a started attempt.
    OutOfOrder { call: &'static str, state: &'static str },
}

impl fmt::Display for RetryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Time(e) => e.fmt(f),
            Self::BadJitter { value } => write!(f, "'jitter' must be between 0 and 1: current value is {value}"),
            Self::MaxBelowBase { base_ms, max_ms } => {
                write!(f, "'maxMs' must be at least 'baseMs' ({base_ms}): current value is {max_ms}")
            }
            Self::BadMaxAttempts { value } => {
                write!(f, "'maxAttempts' must be between 1 and {MAX_ATTEMPTS}: current value is {value}")
            }
            Self::TooManyRetries { value } => {
                write!(f, "'retries' must be between 0 and {MAX_ATTEMPTS}: current value is {value}")
            }
            Self::BadAttempt { value } => write!(f, "'attempt' must be at least 1: current value is {value}"),
            Self::UnknownFailure { value } => {
                write!(f, "'failure' must be one of ambiguous, not-applied, permanent: current value is '{value}'")
            }
            Self::Budget(e) => e.fmt(f),
            Self::OutOfOrder { call, state } => write!(f, "'{call}' cannot be called while the retry is {state}"),
        }
    }
}

impl std::error::Error for RetryError {}

impl Described for RetryError {
    fn code(&self) -> &'static str {
        match self {
            Self::Time(e) => e.code(),
            Self::BadJitter { .. } => "JITTER_OUT_OF_RANGE",
            Self::MaxBelowBase { .. } => "MAX_BELOW_BASE",
            Self::BadMaxAttempts { .. } => "MAX_ATTEMPTS_OUT_OF_RANGE",
            Self::TooManyRetries { .. } => "RETRIES_OUT_OF_RANGE",
            Self::BadAttempt { .. } => "ATTEMPT_OUT_OF_RANGE",
            Self::UnknownFailure { .. } => "UNKNOWN_FAILURE",
            Self::Budget(e) => e.code(),
            Self::OutOfOrder { .. } => "OUT_OF_ORDER",
        }
    }

    /// Paths inside [`RetryOptions`] (`backoff.jitter`, `maxAttempts`); the
    /// binding prefixes the argument (`options.backoff.jitter`).
    fn param(&self) -> Option<String> {
        let name = match self {
            Self::Time(e) => match e.param() {
                Some("baseMs") => "backoff.baseMs",
                Some("maxMs") => "backoff.maxMs",
                other => return other.map(String::from),
            },
            Self::BadJitter { .. } => "backoff.jitter",
            Self::MaxBelowBase { .. } => "backoff.maxMs",
            Self::BadMaxAttempts { .. } => "maxAttempts",
            Self::TooManyRetries { .. } => "retries",
            Self::BadAttempt { .. } => "attempt",
            Self::UnknownFailure { .. } => "failure",
            Self::Budget(e) => return e.param(),
            Self::OutOfOrder { .. } => return None,
        };
        Some(name.into())
    }

    fn kind(&self) -> Kind {
        match self {
            Self::Time(e) => e.kind(),
            Self::Budget(e) => e.kind(),
            _ => Kind::Range,
        }
    }

    fn fields(&self) -> Vec<(&'static str, f64)> {
        match self {
            Self::Time(e) => e.fields(),
            _ => Vec::new(),
        }
    }
}

impl From<BudgetError> for RetryError {
    fn from(e: BudgetError) -> Self {
        Self::Budget(e)
    }
}

impl From<DeadlineError> for RetryError {
    fn from(e: DeadlineError) -> Self {
        Self::Time(e)
    }
}

/// Exponential backoff with subtractive jitter.
///
/// Before retry `k` (1 for the first retry) the ceiling is
/// `min(maxMs, baseMs × 2^(k−1))` and the delay is `ceiling × (1 − jitter × u)`
/// with `u` uniform in `[0, 1)`: `jitter = 0` is plain exponential backoff,
/// `1` is "full jitter", `0.5` is "equal jitter". Jitter only ever shortens a
/// delay, so `maxMs` is a true maximum.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backoff {
    base_ms: f64,
    max_ms: f64,
    jitter: f64,
}

impl Backoff {
    pub fn new(base_ms: f64, max_ms: f64, jitter: f64) -> Result<Self, RetryError> {
        let base_ms = check_ms("baseMs", base_ms)?;
        let max_ms = check_ms("maxMs", max_ms)?;
        if max_ms < base_ms {
            return Err(RetryError::MaxBelowBase { base_ms, max_ms });
        }
        if !(0.0..=1.0).contains(&jitter) {
            return Err(RetryError::BadJitter { value: jitter });
        }
        Ok(Self { base_ms, max_ms, jitter: jitter + 0.0 })
    }

    pub fn base_ms(&self) -> f64 {
        self.base_ms
    }
    pub fn max_ms(&self) -> f64 {
        self.max_ms
    }
    pub fn jitter(&self) -> f64 {
        self.jitter
    }

    /// The un-jittered delay before retry `retry` (1-based); 0 for retry 0.
    pub fn ceiling(&self, retry: u32) -> f64 {
        if retry == 0 {
            return 0.0;
        }
        // 2^1023 is finite; past it the product saturates to ∞ and `min` caps it.
        let exp = retry.saturating_sub(1).min(1023) as i32;
        let c = self.base_ms * 2f64.powi(exp);
        if c < self.max_ms {
            c
        } else {
            self.max_ms
        }
    }

    /// The jittered delay before retry `retry`. Draws exactly one number from
    /// `rng`, whatever the jitter, so schedules stay aligned across settings.
    pub fn delay(&self, retry: u32, rng: &mut SplitMix64) -> f64 {
        let u = rng.next_f64();
        self.ceiling(retry) * (1.0 - self.jitter * u)
    }

    /// The first `retries` delays for `seed`.
    pub fn schedule(&self, retries: u32, seed: u64) -> Result<Vec<f64>, RetryError> {
        if retries > MAX_ATTEMPTS {
            return Err(RetryError::TooManyRetries { value: retries });
        }
        let mut rng = SplitMix64::new(seed);
        Ok((1..=retries).map(|k| self.delay(k, &mut rng)).collect())
    }
}

/// A backoff as the caller writes it (`backoff` in the retry options);
/// [`BackoffOptions::backoff`] validates it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub struct BackoffOptions {
    /// The first retry's ceiling.
    pub base_ms: f64,
    /// No delay exceeds this (at least `baseMs`).
    pub max_ms: f64,
    /// 0: plain exponential; 1: anywhere in `[0, ceiling]`; jitter only shortens a delay.
    pub jitter: f64,
}

impl BackoffOptions {
    pub fn backoff(&self) -> Result<Backoff, RetryError> {
        Backoff::new(self.base_ms, self.max_ms, self.jitter)
    }
}

impl Default for BackoffOptions {
    fn default() -> Self {
        DEFAULT_BACKOFF
    }
}

/// A retry policy as the caller writes it (the numeric part of `retry`'s
/// options). Every field is optional (absent, `undefined` and `null` alike),
/// and the defaults are written here once: `attemptMinMs` 0 (an attempt
/// starts whenever any time is left; give the operation's p95 to skip
/// hopeless attempts), no `attemptTimeoutMs` (each attempt may run to the
/// deadline), [`DEFAULT_BACKOFF`], [`DEFAULT_MAX_ATTEMPTS`], and not
/// idempotent: an ambiguous failure is not repeated unless the operation is
/// idempotent or holds an operation key.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub struct RetryOptions {
    /// No attempt starts with less than this left (checked again after every
    /// backoff). Default 0: whenever any time is left.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub attempt_min_ms: Option<f64>,
    /// Each attempt's own timeout (default: the time left). Below
    /// `attemptMinMs` (or 0): no attempt, a stop for "insufficient".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub attempt_timeout_ms: Option<f64>,
    /// Default `{ baseMs: 100, maxMs: 2000, jitter: 1 }`: full jitter under a
    /// ceiling doubling from 100 ms to 2 s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub backoff: Option<BackoffOptions>,
    /// 1–100, default 3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub max_attempts: Option<u32>,
    /// Whether repeating the operation is harmless (default false). An
    /// ambiguous failure (a timeout) of a non-idempotent one is not retried
    /// without an operation key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub idempotent: Option<bool>,
}

impl RetryOptions {
    /// The validated policy, defaults filled in.
    pub fn policy(&self) -> Result<RetryPolicy, RetryError> {
        RetryPolicy::new(
            self.attempt_min_ms.unwrap_or(0.0),
            self.attempt_timeout_ms,
            self.backoff.unwrap_or(DEFAULT_BACKOFF).backoff()?,
            self.max_attempts.unwrap_or(DEFAULT_MAX_ATTEMPTS),
            self.idempotent.unwrap_or(false),
        )
    }
}

/// How an attempt failed, as far as the caller can tell. Crosses to
/// JavaScript as `"ambiguous"`, `"not-applied"` or `"permanent"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub enum Failure {
    /// The attempt may have been applied: a timeout, or a connection lost
    /// after the request was sent.
    Ambiguous,
    /// The attempt provably did not run: connection refused, or a 429/503
    /// answered before any work.
    NotApplied,
    /// Retrying cannot help: the request itself is wrong.
    Permanent,
}

impl Failure {
    /// Every failure kind, in the order of [`Failure::as_str`]'s documentation.
    pub const ALL: [Self; 3] = [Self::Ambiguous, Self::NotApplied, Self::Permanent];

    /// Parses the JS spelling: `ambiguous`, `not-applied` or `permanent`.
    pub fn parse(value: &str) -> Result<Self, RetryError> {
        match value {
            "ambiguous" => Ok(Self::Ambiguous),
            "not-applied" => Ok(Self::NotApplied),
            "permanent" => Ok(Self::Permanent),
            _ => Err(RetryError::UnknownFailure { value: value.chars().take(64).collect() }),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ambiguous => "ambiguous",
            Self::NotApplied => "not-applied",
            Self::Permanent => "permanent",
        }
    }
}

/// Why no further attempt will be made.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum StopReason {
    /// The failure was [`Failure::Permanent`].
    Permanent,
    /// An ambiguous failure of a non-idempotent operation without an operation key.
    NotIdempotent,
    /// All `attempts` were used.
    Exhausted { attempts: u32 },
    /// Less than `attemptMinMs` remains (checked again after every backoff).
    Insufficient { remaining_ms: f64, attempt_min_ms: f64 },
    /// `attemptTimeoutMs` is below `attemptMinMs` (or 0): no attempt could
    /// get the time it needs. Reported as `insufficient`, like a short deadline.
    TimeoutBelowMin { attempt_timeout_ms: f64, attempt_min_ms: f64 },
    /// Sleeping `delay_ms` would leave less than `attemptMinMs`; not slept.
    BackoffPastDeadline { delay_ms: f64, remaining_ms: f64, attempt_min_ms: f64 },
    /// The shared [`RetryBudget`] has no retry left in its window.
    BudgetExhausted,
}

/// Why a retry loop stopped, as a stable word (`RetryFailed.reason` in
/// JavaScript). Several [`StopReason`]s share one word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub enum StopCode {
    Permanent,
    NotIdempotent,
    Exhausted,
    Insufficient,
    BackoffPastDeadline,
    BudgetExhausted,
}

impl StopCode {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Permanent => "permanent",
            Self::NotIdempotent => "not-idempotent",
            Self::Exhausted => "exhausted",
            Self::Insufficient => "insufficient",
            Self::BackoffPastDeadline => "backoff-past-deadline",
            Self::BudgetExhausted => "budget-exhausted",
        }
    }
}

/// A stop as a binding reports it: the word and the sentence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub struct Stop {
    pub reason: StopCode,
    pub message: String,
}

impl StopReason {
    /// The stable word for this reason.
    pub fn stop_code(&self) -> StopCode {
        match self {
            Self::Permanent => StopCode::Permanent,
            Self::NotIdempotent => StopCode::NotIdempotent,
            Self::Exhausted { .. } => StopCode::Exhausted,
            Self::Insufficient { .. } | Self::TimeoutBelowMin { .. } => StopCode::Insufficient,
            Self::BackoffPastDeadline { .. } => StopCode::BackoffPastDeadline,
            Self::BudgetExhausted => StopCode::BudgetExhausted,
        }
    }

    /// A stable code for JS (`err.reason`).
    pub fn code(&self) -> &'static str {
        self.stop_code().as_str()
    }

    /// The word and the sentence, for a binding.
    pub fn stop(&self) -> Stop {
        Stop { reason: self.stop_code(), message: self.to_string() }
    }
}

impl fmt::Display for StopReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::Permanent => write!(f, "the failure is permanent, so it was not retried"),
            Self::NotIdempotent => write!(
                f,
                "the operation is not idempotent and its failure was ambiguous (it may have been applied), so it was not retried; pass an operation key if a repeat is safe"
            ),
            Self::Exhausted { attempts } => write!(f, "all {attempts} attempts failed"),
            Self::Insufficient { remaining_ms, attempt_min_ms } => write!(
                f,
                "only {} ms remain but an attempt needs at least {} ms, so none was started",
                Ms(remaining_ms),
                Ms(attempt_min_ms)
            ),
            Self::TimeoutBelowMin { attempt_timeout_ms, attempt_min_ms } => write!(
                f,
                "an attempt would time out after {} ms but needs at least {} ms, so none was started",
                Ms(attempt_timeout_ms),
                Ms(attempt_min_ms)
            ),
            Self::BackoffPastDeadline { delay_ms, remaining_ms, attempt_min_ms } => write!(
                f,
                "a {} ms backoff would leave less than the {} ms an attempt needs out of the {} ms remaining, so it was not slept",
                Ms(delay_ms),
                Ms(attempt_min_ms),
                Ms(remaining_ms)
            ),
            Self::BudgetExhausted => write!(f, "the retry budget is exhausted for this window"),
        }
    }
}

/// What to do before attempt `n`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Start {
    /// Start attempt `number`, aborting it after `timeout_ms`.
    Attempt { number: u32, timeout_ms: f64, remaining_ms: f64 },
    /// Give up.
    Stop(StopReason),
}

/// What to do after a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum AfterFailure {
    /// Sleep `delay_ms` (abortably), then ask [`RetryPolicy::start`] again.
    Backoff { delay_ms: f64 },
    /// Give up.
    Stop(StopReason),
}

/// A validated retry policy. Pure: every method takes the time and deadline.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    attempt_min_ms: f64,
    attempt_timeout_ms: Option<f64>,
    backoff: Backoff,
    max_attempts: u32,
    idempotent: bool,
}

impl RetryPolicy {
    /// `attempt_timeout_ms: None` lets each attempt run to the deadline.
    pub fn new(
        attempt_min_ms: f64,
        attempt_timeout_ms: Option<f64>,
        backoff: Backoff,
        max_attempts: u32,
        idempotent: bool,
    ) -> Result<Self, RetryError> {
        let attempt_min_ms = check_ms("attemptMinMs", attempt_min_ms)?;
        // A timeout of 0 or below `attemptMinMs` is accepted: it is often
        // computed from what a caller has left, and a shortage stops the loop
        // at its first `start` (`StopReason::TimeoutBelowMin`), never throws.
        let attempt_timeout_ms = match attempt_timeout_ms {
            Some(t) => Some(check_ms("attemptTimeoutMs", t)?),
            None => None,
        };
        if !(1..=MAX_ATTEMPTS).contains(&max_attempts) {
            return Err(RetryError::BadMaxAttempts { value: max_attempts });
        }
        Ok(Self { attempt_min_ms, attempt_timeout_ms, backoff, max_attempts, idempotent })
    }

    pub fn backoff(&self) -> &Backoff {
        &self.backoff
    }
    pub fn max_attempts(&self) -> u32 {
        self.max_attempts
    }
    pub fn attempt_min_ms(&self) -> f64 {
        self.attempt_min_ms
    }
    pub fn idempotent(&self) -> bool {
        self.idempotent
    }

    /// Whether `failure` may be retried at all (ignoring time and attempts).
    pub fn may_retry(&self, failure: Failure, operation_key_safe: bool) -> bool {
        match failure {
            Failure::Permanent => false,
            Failure::NotApplied => true,
            Failure::Ambiguous => self.idempotent || operation_key_safe,
        }
    }

    /// Whether attempt `attempt` (1-based) may start at `now_ms`, and its timeout.
    pub fn start(&self, attempt: u32, now_ms: f64, at: f64) -> Result<Start, RetryError> {
        if attempt == 0 {
            return Err(RetryError::BadAttempt { value: 0 });
        }
        let remaining = left(now_ms, at)?;
        if attempt > self.max_attempts {
            return Ok(Start::Stop(StopReason::Exhausted { attempts: self.max_attempts }));
        }
        if remaining < self.attempt_min_ms || remaining <= 0.0 {
            return Ok(Start::Stop(StopReason::Insufficient {
                remaining_ms: remaining,
                attempt_min_ms: self.attempt_min_ms,
            }));
        }
        let timeout_ms = match self.attempt_timeout_ms {
            Some(t) if t < remaining => t,
            _ => remaining,
        };
        if timeout_ms < self.attempt_min_ms || timeout_ms <= 0.0 {
            return Ok(Start::Stop(StopReason::TimeoutBelowMin {
                attempt_timeout_ms: timeout_ms,
                attempt_min_ms: self.attempt_min_ms,
            }));
        }
        Ok(Start::Attempt { number: attempt, timeout_ms, remaining_ms: remaining })
    }

    /// The decision after attempt `attempt` failed with `failure` at `now_ms`,
    /// given the backoff `delay_ms` drawn for the next retry.
    pub fn after_failure(
        &self,
        attempt: u32,
        failure: Failure,
        operation_key_safe: bool,
        delay_ms: f64,
        now_ms: f64,
        at: f64,
    ) -> Result<AfterFailure, RetryError> {
        if attempt == 0 {
            return Err(RetryError::BadAttempt { value: 0 });
        }
        let delay_ms = check_ms("delayMs", delay_ms)?;
        let remaining = left(now_ms, at)?;
        let stop = |r| Ok(AfterFailure::Stop(r));
        match failure {
            Failure::Permanent => return stop(StopReason::Permanent),
            Failure::Ambiguous if !self.may_retry(failure, operation_key_safe) => {
                return stop(StopReason::NotIdempotent)
            }
            _ => {}
        }
        if attempt >= self.max_attempts {
            return stop(StopReason::Exhausted { attempts: self.max_attempts });
        }
        let after = remaining - delay_ms;
        if after < self.attempt_min_ms || after <= 0.0 {
            return stop(StopReason::BackoffPastDeadline {
                delay_ms,
                remaining_ms: remaining,
                attempt_min_ms: self.attempt_min_ms,
            });
        }
        Ok(AfterFailure::Backoff { delay_ms })
    }
}

fn left(now_ms: f64, at: f64) -> Result<f64, RetryError> {
    let now = check_ms("now", now_ms)?;
    let at = check_ms("at", at)?;
    Ok(if at > now { at - now } else { 0.0 })
}

/// How one attempt ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum AttemptOutcome {
    #[default]
    Ok,
    Failed(Failure),
}

/// One attempt, for the error that carries every attempt's outcome. Crosses
/// to JavaScript as `{ attempt, startedAtMs, timeoutMs, elapsedMs, failure? }`
/// (no `failure`: the attempt succeeded).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub struct AttemptRecord {
    #[serde(rename = "attempt")]
    pub number: u32,
    #[serde(rename = "startedAtMs")]
    pub started_ms: f64,
    pub timeout_ms: f64,
    pub elapsed_ms: f64,
    #[serde(rename = "failure", with = "outcome_as_failure", default, skip_serializing_if = "AttemptOutcome::is_ok")]
    #[cfg_attr(target_arch = "wasm32", tsify(optional, type = "Failure"))]
    pub outcome: AttemptOutcome,
}

impl AttemptOutcome {
    fn is_ok(&self) -> bool {
        *self == Self::Ok
    }
}

/// An [`AttemptOutcome`] on the wire: the failure, or nothing for success.
mod outcome_as_failure {
    use super::{AttemptOutcome, Failure};
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(outcome: &AttemptOutcome, s: S) -> Result<S::Ok, S::Error> {
        match outcome {
            AttemptOutcome::Ok => s.serialize_none(),
            AttemptOutcome::Failed(f) => f.serialize(s),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<AttemptOutcome, D::Error> {
        Ok(Option::<Failure>::deserialize(d)?.map_or(AttemptOutcome::Ok, AttemptOutcome::Failed))
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    Ready,
    Running { started_ms: f64, timeout_ms: f64 },
    Done,
}

impl Phase {
    fn name(self) -> &'static str {
        match self {
            Self::Ready => "waiting to start an attempt",
            Self::Running { .. } => "running an attempt",
            Self::Done => "finished",
        }
    }
}

/// One retry loop: a policy, a deadline, a seeded jitter stream and the
/// record of every attempt. JS drives it: `start` → run with the timeout →
/// `succeeded` or `failed` → sleep the backoff → `start` again.
#[derive(Debug, Clone)]
pub struct RetryRun {
    policy: RetryPolicy,
    at: f64,
    rng: SplitMix64,
    operation_key_safe: bool,
    attempts: u32,
    phase: Phase,
    records: Vec<AttemptRecord>,
}

impl RetryRun {
    pub fn new(policy: RetryPolicy, at: f64, seed: u64, operation_key_safe: bool) -> Result<Self, RetryError> {
        let at = check_ms("at", at)?;
        Ok(Self {
            policy,
            at,
            rng: SplitMix64::new(seed),
            operation_key_safe,
            attempts: 0,
            phase: Phase::Ready,
            records: Vec::new(),
        })
    }

    /// Decides the next attempt. The first attempt counts as one request in
    /// `budget`; later attempts were already paid for by [`RetryRun::failed`].
    pub fn start(&mut self, now_ms: f64, budget: Option<&mut RetryBudget>) -> Result<Start, RetryError> {
        if self.phase != Phase::Ready {
            return Err(RetryError::OutOfOrder { call: "start", state: self.phase.name() });
        }
        let decision = self.policy.start(self.attempts + 1, now_ms, self.at)?;
        match decision {
            Start::Attempt { number, timeout_ms, .. } => {
                if number == 1 {
                    if let Some(b) = budget {
                        b.record_request(now_ms)?;
                    }
                }
                self.attempts = number;
                self.phase = Phase::Running { started_ms: now_ms + 0.0, timeout_ms };
            }
            Start::Stop(_) => self.phase = Phase::Done,
        }
        Ok(decision)
    }

    /// The running attempt resolved.
    pub fn succeeded(&mut self, now_ms: f64) -> Result<(), RetryError> {
        self.finish(now_ms, AttemptOutcome::Ok, "succeeded")?;
        self.phase = Phase::Done;
        Ok(())
    }

    /// The running attempt failed: decides whether to back off and retry.
    /// A retry withdraws from `budget`; an empty budget stops the loop.
    pub fn failed(
        &mut self,
        now_ms: f64,
        failure: Failure,
        budget: Option<&mut RetryBudget>,
    ) -> Result<AfterFailure, RetryError> {
        self.finish(now_ms, AttemptOutcome::Failed(failure), "failed")?;
        let delay = self.policy.backoff.delay(self.attempts, &mut self.rng);
        let mut decision =
            self.policy.after_failure(self.attempts, failure, self.operation_key_safe, delay, now_ms, self.at)?;
        if let (AfterFailure::Backoff { .. }, Some(b)) = (decision, budget) {
            if !b.try_retry(now_ms)? {
                decision = AfterFailure::Stop(StopReason::BudgetExhausted);
            }
        }
        self.phase = match decision {
            AfterFailure::Backoff { .. } => Phase::Ready,
            AfterFailure::Stop(_) => Phase::Done,
        };
        Ok(decision)
    }

    fn finish(&mut self, now_ms: f64, outcome: AttemptOutcome, call: &'static str) -> Result<(), RetryError> {
        let now = check_ms("now", now_ms)?;
        let Phase::Running { started_ms, timeout_ms } = self.phase else {
            return Err(RetryError::OutOfOrder { call, state: self.phase.name() });
        };
        self.records.push(AttemptRecord {
            number: self.attempts,
            started_ms,
            timeout_ms,
            elapsed_ms: if now > started_ms { now - started_ms } else { 0.0 },
            outcome,
        });
        Ok(())
    }

    /// Every finished attempt, in order.
    pub fn records(&self) -> &[AttemptRecord] {
        &self.records
    }

    /// Whether the loop has ended (success or a stop).
    pub fn is_done(&self) -> bool {
        self.phase == Phase::Done
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::budget::RetryBudget;
    use crate::core::plan::{Decision, Plan, StepKind, StepSpec};
    use proptest::prelude::*;

    #[test]
    fn backoff_schedule_is_exponential_capped_and_deterministic() {
        let b = Backoff::new(100.0, 1_000.0, 0.0).unwrap();
        assert_eq!(b.schedule(6, 7).unwrap(), vec![100.0, 200.0, 400.0, 800.0, 1_000.0, 1_000.0]);
        assert_eq!(b.ceiling(0), 0.0);
        assert_eq!(b.ceiling(u32::MAX), 1_000.0);
        let j = Backoff::new(100.0, 1_000.0, 0.5).unwrap();
        assert_eq!(j.schedule(5, 99).unwrap(), j.schedule(5, 99).unwrap());
        assert_ne!(j.schedule(5, 99).unwrap(), j.schedule(5, 100).unwrap());
        assert!(j.schedule(MAX_ATTEMPTS + 1, 0).is_err());
        let zero = Backoff::new(0.0, 0.0, 1.0).unwrap();
        assert_eq!(zero.ceiling(5_000), 0.0);
    }

    #[test]
    fn rejects_bad_settings_with_clear_errors() {
        assert_eq!(Backoff::new(10.0, 5.0, 0.0), Err(RetryError::MaxBelowBase { base_ms: 10.0, max_ms: 5.0 }));
        let e = Backoff::new(10.0, 50.0, 2.0).unwrap_err();
        assert_eq!(e.to_string(), "'jitter' must be between 0 and 1: current value is 2");
        assert!(matches!(Backoff::new(10.0, 50.0, f64::NAN), Err(RetryError::BadJitter { .. })));
        assert!(matches!(
            Backoff::new(-1.0, 50.0, 0.0),
            Err(RetryError::Time(DeadlineError::Negative { param: "baseMs", .. }))
        ));
        let b = Backoff::new(10.0, 50.0, 0.1).unwrap();
        // A timeout of 0, or below the attempt minimum, is a shortage: the
        // policy is valid and its first start stops the loop.
        for (min, timeout) in [(1.0, 0.0), (500.0, 100.0)] {
            let p = RetryPolicy::new(min, Some(timeout), b, 2, true).unwrap();
            let stop = StopReason::TimeoutBelowMin { attempt_timeout_ms: timeout, attempt_min_ms: min };
            assert_eq!(p.start(1, 0.0, 10_000.0), Ok(Start::Stop(stop)));
            assert_eq!(stop.code(), "insufficient");
        }
        assert!(matches!(
            RetryPolicy::new(1.0, Some(f64::NAN), b, 2, true),
            Err(RetryError::Time(DeadlineError::NotFinite { param: "attemptTimeoutMs", .. }))
        ));
        assert_eq!(RetryPolicy::new(1.0, None, b, 0, true), Err(RetryError::BadMaxAttempts { value: 0 }));
        assert_eq!(RetryPolicy::new(1.0, None, b, 101, true), Err(RetryError::BadMaxAttempts { value: 101 }));
        let p = RetryPolicy::new(1.0, None, b, 2, true).unwrap();
        assert_eq!(p.start(0, 0.0, 10.0), Err(RetryError::BadAttempt { value: 0 }));
        assert!(matches!(p.start(1, f64::NAN, 10.0), Err(RetryError::Time(_))));
        assert!(matches!(p.after_failure(1, Failure::NotApplied, false, -1.0, 0.0, 10.0), Err(RetryError::Time(_))));
        assert_eq!(Failure::parse("timeout"), Err(RetryError::UnknownFailure { value: "timeout".into() }));
        assert_eq!(Failure::parse("not-applied"), Ok(Failure::NotApplied));
    }

    #[test]
    fn errors_name_the_option_and_defaults_live_here() {
        use crate::core::error::{Described, Within};
        let named = |o: RetryOptions| {
            let e = Within::new("options", o.policy().unwrap_err());
            (e.param().unwrap(), e.code())
        };
        let bad = |base_ms, max_ms, jitter| RetryOptions {
            backoff: Some(BackoffOptions { base_ms, max_ms, jitter }),
            ..RetryOptions::default()
        };
        assert_eq!(named(bad(1.0, 2.0, 2.0)), ("options.backoff.jitter".into(), "JITTER_OUT_OF_RANGE"));
        assert_eq!(named(bad(10.0, 2.0, 0.0)), ("options.backoff.maxMs".into(), "MAX_BELOW_BASE"));
        assert_eq!(named(bad(-1.0, 2.0, 0.0)), ("options.backoff.baseMs".into(), "NEGATIVE"));
        let attempts = RetryOptions { max_attempts: Some(0), ..RetryOptions::default() };
        assert_eq!(named(attempts), ("options.maxAttempts".into(), "MAX_ATTEMPTS_OUT_OF_RANGE"));
        let min = RetryOptions { attempt_min_ms: Some(f64::NAN), ..RetryOptions::default() };
        assert_eq!(named(min), ("options.attemptMinMs".into(), "NOT_FINITE"));
        let retries = Backoff::new(1.0, 1.0, 0.0).unwrap().schedule(MAX_ATTEMPTS + 1, 0).unwrap_err();
        assert_eq!((retries.param().as_deref(), retries.code()), (Some("retries"), "RETRIES_OUT_OF_RANGE"));
        // Nothing given: the documented defaults.
        let p = RetryOptions::default().policy().unwrap();
        assert_eq!((p.attempt_min_ms(), p.max_attempts(), p.idempotent()), (0.0, DEFAULT_MAX_ATTEMPTS, false));
        assert_eq!(*p.backoff(), Backoff::new(100.0, 2_000.0, 1.0).unwrap());
        assert_eq!(StopReason::BudgetExhausted.stop().reason, StopCode::BudgetExhausted);
        assert_eq!(StopReason::BudgetExhausted.code(), "budget-exhausted");
    }

    #[test]
    fn attempt_timeout_is_min_of_timeout_and_remaining() {
        let b = Backoff::new(100.0, 1_000.0, 0.0).unwrap();
        let p = RetryPolicy::new(200.0, Some(1_000.0), b, 3, true).unwrap();
        assert_eq!(
            p.start(1, 0.0, 5_000.0),
            Ok(Start::Attempt { number: 1, timeout_ms: 1_000.0, remaining_ms: 5_000.0 })
        );
        assert_eq!(
            p.start(2, 4_500.0, 5_000.0),
            Ok(Start::Attempt { number: 2, timeout_ms: 500.0, remaining_ms: 500.0 })
        );
        assert_eq!(
            p.start(2, 4_850.0, 5_000.0),
            Ok(Start::Stop(StopReason::Insufficient { remaining_ms: 150.0, attempt_min_ms: 200.0 }))
        );
        assert_eq!(p.start(4, 0.0, 5_000.0), Ok(Start::Stop(StopReason::Exhausted { attempts: 3 })));
    }

    #[test]
    fn backoff_that_would_pass_the_deadline_is_not_slept() {
        let b = Backoff::new(1_000.0, 4_000.0, 0.0).unwrap();
        let p = RetryPolicy::new(500.0, Some(2_000.0), b, 5, true).unwrap();
        // 1 200 ms left, a 1 000 ms backoff would leave 200 < 500: stop now.
        let d = p.after_failure(1, Failure::NotApplied, false, 1_000.0, 8_800.0, 10_000.0).unwrap();
        assert_eq!(
            d,
            AfterFailure::Stop(StopReason::BackoffPastDeadline {
                delay_ms: 1_000.0,
                remaining_ms: 1_200.0,
                attempt_min_ms: 500.0
            })
        );
        assert_eq!(
            AfterFailure::Stop(StopReason::Permanent),
            p.after_failure(1, Failure::Permanent, true, 1.0, 0.0, 1e4).unwrap()
        );
        // With 1 600 ms left it sleeps, then the decision is recomputed: the
        // sleep overran by 200 ms, so 400 ms remain and no attempt starts.
        assert_eq!(
            p.after_failure(1, Failure::NotApplied, false, 1_000.0, 8_400.0, 10_000.0),
            Ok(AfterFailure::Backoff { delay_ms: 1_000.0 })
        );
        assert!(matches!(p.start(2, 9_600.0, 10_000.0), Ok(Start::Stop(StopReason::Insufficient { .. }))));
    }

    #[test]
    fn ambiguous_failures_need_idempotency_or_a_key() {
        let b = Backoff::new(10.0, 10.0, 0.0).unwrap();
        let post = RetryPolicy::new(0.0, Some(100.0), b, 3, false).unwrap();
        let get = RetryPolicy::new(0.0, Some(100.0), b, 3, true).unwrap();
        let at = 10_000.0;
        assert_eq!(
            post.after_failure(1, Failure::Ambiguous, false, 10.0, 0.0, at),
            Ok(AfterFailure::Stop(StopReason::NotIdempotent))
        );
        assert_eq!(
            post.after_failure(1, Failure::Ambiguous, true, 10.0, 0.0, at),
            Ok(AfterFailure::Backoff { delay_ms: 10.0 })
        );
        assert_eq!(
            post.after_failure(1, Failure::NotApplied, false, 10.0, 0.0, at),
            Ok(AfterFailure::Backoff { delay_ms: 10.0 })
        );
        assert_eq!(
            get.after_failure(1, Failure::Ambiguous, false, 10.0, 0.0, at),
            Ok(AfterFailure::Backoff { delay_ms: 10.0 })
        );
        assert!(StopReason::NotIdempotent.to_string().contains("operation key"));
    }

    #[test]
    fn run_records_every_attempt_and_enforces_order() {
        let b = Backoff::new(100.0, 100.0, 0.0).unwrap();
        let p = RetryPolicy::new(50.0, Some(1_000.0), b, 3, true).unwrap();
        let mut run = RetryRun::new(p, 10_000.0, 1, false).unwrap();
        assert!(matches!(
            run.failed(0.0, Failure::Ambiguous, None),
            Err(RetryError::OutOfOrder { call: "failed", .. })
        ));
        assert!(matches!(run.start(0.0, None), Ok(Start::Attempt { number: 1, .. })));
        assert!(matches!(run.start(0.0, None), Err(RetryError::OutOfOrder { call: "start", .. })));
        assert_eq!(run.failed(1_000.0, Failure::Ambiguous, None), Ok(AfterFailure::Backoff { delay_ms: 100.0 }));
        assert!(matches!(run.start(1_100.0, None), Ok(Start::Attempt { number: 2, .. })));
        run.succeeded(1_400.0).unwrap();
        assert!(run.is_done());
        assert!(matches!(run.start(2_000.0, None), Err(RetryError::OutOfOrder { .. })));
        let r = run.records();
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].outcome, AttemptOutcome::Failed(Failure::Ambiguous));
        assert_eq!(
            (r[1].number, r[1].started_ms, r[1].elapsed_ms, r[1].outcome),
            (2, 1_100.0, 300.0, AttemptOutcome::Ok)
        );
    }

    #[test]
    fn run_withdraws_from_the_budget() {
        let b = Backoff::new(10.0, 10.0, 0.0).unwrap();
        let p = RetryPolicy::new(0.0, Some(100.0), b, 5, true).unwrap();
        let mut budget = RetryBudget::new(0.0, 0.0, 1_000.0).unwrap();
        let mut run = RetryRun::new(p, 10_000.0, 3, false).unwrap();
        run.start(0.0, Some(&mut budget)).unwrap();
        assert_eq!(budget.counts(0.0).unwrap(), (1, 0));
        assert_eq!(
            run.failed(100.0, Failure::NotApplied, Some(&mut budget)),
            Ok(AfterFailure::Stop(StopReason::BudgetExhausted))
        );
        assert!(run.is_done());
    }

    // ---- the seed 004 scenario on a fake clock ----------------------------

    /// How a simulated attempt behaves.
    #[derive(Debug, Clone, Copy)]
    enum Behaviour {
        /// Never answers: runs until its timeout fires, `late_ms` late.
        Hang,
        /// Fails after `ms` (or at its timeout, if sooner).
        FailAfter(f64, Failure),
        /// Succeeds after `ms` (or times out first).
        SucceedAfter(f64),
    }

    /// Runs one step's retry loop on a fake clock from `now` with the step
    /// deadline `step_at`; returns the clock when the loop ends and the attempts.
    fn simulate_step(
        policy: RetryPolicy,
        now: f64,
        step_at: f64,
        seed: u64,
        late_ms: f64,
        behaviour: &mut dyn FnMut(u32) -> Behaviour,
    ) -> (f64, u32) {
        let mut run = RetryRun::new(policy, step_at, seed, false).unwrap();
        let mut now = now;
        loop {
            let Start::Attempt { number, timeout_ms, .. } = run.start(now, None).unwrap() else {
                return (now, run.records().len() as u32);
            };
            assert!(now + timeout_ms <= step_at + 1e-9, "attempt timeout passes the step deadline");
            let (took, result) = match behaviour(number) {
                Behaviour::Hang => (timeout_ms + late_ms, Err(Failure::Ambiguous)),
                Behaviour::FailAfter(ms, f) if ms < timeout_ms => (ms, Err(f)),
                Behaviour::SucceedAfter(ms) if ms < timeout_ms => (ms, Ok(())),
                _ => (timeout_ms + late_ms, Err(Failure::Ambiguous)),
            };
            now += took;
            match result {
                Ok(()) => {
                    run.succeeded(now).unwrap();
                    return (now, run.records().len() as u32);
                }
                Err(f) => match run.failed(now, f, None).unwrap() {
                    AfterFailure::Backoff { delay_ms } => now += delay_ms + late_ms,
                    AfterFailure::Stop(_) => return (now, run.records().len() as u32),
                },
            }
        }
    }

    /// Seed 004: classify, retrieve, generate, policy check; "sensible" 10 s
    /// timeouts and two attempts each; the caller gives up at 30 s.
    fn seed_004_plan(now: f64) -> Plan {
        Plan::new(
            now + 30_000.0,
            now,
            vec![
                StepSpec::new("classify", StepKind::Optional, 500.0).preferred(10_000.0),
                StepSpec::new("retrieve", StepKind::Optional, 500.0).preferred(10_000.0),
                StepSpec::new("generate", StepKind::Optional, 1_000.0).preferred(10_000.0),
                StepSpec::new("policy", StepKind::Mandatory, 1_000.0).preferred(10_000.0).reserve(2_000.0),
            ],
        )
        .unwrap()
    }

    fn seed_004_policy() -> RetryPolicy {
        RetryPolicy::new(500.0, Some(10_000.0), Backoff::new(200.0, 2_000.0, 0.5).unwrap(), 2, true).unwrap()
    }

    /// Runs the whole pipeline; returns (end, attempts, policy check's cap).
    fn run_seed_004(late_ms: f64, behaviour: &mut dyn FnMut(usize, u32) -> Behaviour) -> (f64, u32, f64) {
        let start = 1_000.0;
        let plan = seed_004_plan(start);
        let mut now = start;
        let mut attempts = 0;
        let mut policy_cap = 0.0;
        for i in 0..plan.steps().len() {
            match plan.decide_index(i, now).unwrap() {
                Decision::Run { cap_ms, .. } => {
                    if i == 3 {
                        policy_cap = cap_ms;
                    }
                    let (end, n) = simulate_step(seed_004_policy(), now, now + cap_ms, i as u64, late_ms, &mut |a| {
                        behaviour(i, a)
                    });
                    attempts += n;
                    now = end;
                }
                Decision::Skip { .. } => {}
                Decision::Insufficient { .. } => panic!("the mandatory policy check was starved"),
            }
            now += late_ms; // scheduling delay before the next step
        }
        (now - start, attempts, policy_cap)
    }

    #[test]
    fn seed_004_hanging_pipeline_fails_by_30_s_not_80_s() {
        // The per-step-timeout worst case: 4 steps × 2 attempts × 10 s.
        let naive = 4.0 * 2.0 * 10_000.0;
        assert_eq!(naive, 80_000.0);
        // Every attempt hangs until its timeout, timers exactly on time.
        let (elapsed, attempts, policy_cap) = run_seed_004(0.0, &mut |_, _| Behaviour::Hang);
        assert!(elapsed <= 30_000.0, "took {elapsed} ms");
        assert!(policy_cap >= 1_000.0, "policy check got {policy_cap} ms");
        assert!(attempts >= 4);
        // Timers 2 ms late and 2 ms per hand-off (within the 5 ms margin):
        // still done by the deadline plus the final step's lateness.
        let (elapsed, _, policy_cap) = run_seed_004(2.0, &mut |_, _| Behaviour::Hang);
        assert!(elapsed <= 30_000.0 + 2.0 * 2.0, "took {elapsed} ms");
        assert!(policy_cap >= 1_000.0);
    }

    #[test]
    fn seed_004_fast_failures_are_retried_inside_the_deadline() {
        // First attempts fail fast (refused); second attempts succeed.
        let (elapsed, attempts, _) = run_seed_004(0.0, &mut |_, a| {
            if a == 1 {
                Behaviour::FailAfter(300.0, Failure::NotApplied)
            } else {
                Behaviour::SucceedAfter(2_000.0)
            }
        });
        assert_eq!(attempts, 8);
        assert!(elapsed < 30_000.0 && elapsed > 4.0 * 2_300.0);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1024))]

        /// Invariant 1.
        #[test]
        fn backoff_bounds(base in 0.0..5_000.0f64, extra in 0.0..60_000.0f64, jitter in 0.0..=1.0f64, seed in any::<u64>()) {
            let b = Backoff::new(base, base + extra, jitter).unwrap();
            let s = b.schedule(30, seed).unwrap();
            prop_assert_eq!(&s, &b.schedule(30, seed).unwrap());
            let mut prev = 0.0;
            for (i, d) in s.iter().enumerate() {
                let c = b.ceiling(i as u32 + 1);
                prop_assert!(c >= prev && c <= b.max_ms());
                prop_assert!(*d <= c && *d >= c * (1.0 - jitter) - 1e-9 && d.is_finite());
                prev = c;
            }
        }

        /// Invariants 2, 3 and 4 for single decisions.
        #[test]
        fn decisions_respect_the_deadline(
            min in 0.0..2_000.0f64,
            timeout_extra in proptest::option::of(0.0..10_000.0f64),
            attempts in 1u32..6,
            idempotent in any::<bool>(),
            key in any::<bool>(),
            attempt in 1u32..8,
            now in 0.0..20_000.0f64,
            budget in 0.0..20_000.0f64,
            delay in 0.0..5_000.0f64,
            failure in prop_oneof![Just(Failure::Ambiguous), Just(Failure::NotApplied), Just(Failure::Permanent)],
        ) {
            let timeout = timeout_extra.map(|t| min + t + 1.0);
            let p = RetryPolicy::new(min, timeout, Backoff::new(1.0, 1.0, 0.0).unwrap(), attempts, idempotent).unwrap();
            let at = now + budget;
            let budget = at - now; // what the policy sees, after rounding
            match p.start(attempt, now, at).unwrap() {
                Start::Attempt { timeout_ms, .. } => {
                    prop_assert!(budget >= min && budget > 0.0 && attempt <= attempts);
                    prop_assert!(timeout_ms <= budget && timeout_ms > 0.0);
                    if let Some(t) = timeout { prop_assert!(timeout_ms <= t); }
                }
                Start::Stop(_) => prop_assert!(budget < min || budget <= 0.0 || attempt > attempts),
            }
            match p.after_failure(attempt, failure, key, delay, now, at).unwrap() {
                AfterFailure::Backoff { delay_ms } => {
                    prop_assert!(now + delay_ms + min <= at && now + delay_ms < at);
                    prop_assert!(failure != Failure::Permanent && attempt < attempts);
                    prop_assert!(failure != Failure::Ambiguous || idempotent || key);
                }
                AfterFailure::Stop(StopReason::NotIdempotent) => {
                    prop_assert!(failure == Failure::Ambiguous && !idempotent && !key);
                }
                AfterFailure::Stop(_) => {}
            }
        }

        /// Invariant 5: whatever the attempts do, the loop ends by the deadline
        /// plus one timer's lateness, and never exceeds maxAttempts.
        #[test]
        fn retry_loops_end_by_the_deadline(
            budget in 0.0..60_000.0f64,
            min in 0.0..1_000.0f64,
            timeout_extra in 1.0..15_000.0f64,
            attempts in 1u32..8,
            base in 0.0..3_000.0f64,
            jitter in 0.0..=1.0f64,
            seed in any::<u64>(),
            late in 0.0..5.0f64,
            script in proptest::collection::vec((0u8..3, 0.0..20_000.0f64), 8),
        ) {
            let p = RetryPolicy::new(min, Some(min + timeout_extra), Backoff::new(base, base * 8.0, jitter).unwrap(), attempts, true).unwrap();
            let start = 100.0;
            let (end, n) = simulate_step(p, start, start + budget, seed, late, &mut |a| {
                let (kind, ms) = script[(a as usize - 1) % script.len()];
                match kind {
                    0 => Behaviour::Hang,
                    1 => Behaviour::FailAfter(ms, Failure::NotApplied),
                    _ => Behaviour::SucceedAfter(ms),
                }
            });
            prop_assert!(n <= attempts);
            prop_assert!(end <= start + budget + late + 1e-6, "ended {} after the deadline", end - start - budget);
        }

        /// Seed 004 with random behaviour and lateness within the plan margin.
        #[test]
        fn seed_004_never_outlives_the_caller(
            script in proptest::collection::vec((0u8..3, 0.0..12_000.0f64), 8),
            late in 0.0..2.5f64,
        ) {
            let (elapsed, attempts, policy_cap) = run_seed_004(late, &mut |i, a| {
                let (kind, ms) = script[(i * 2 + a as usize - 1) % script.len()];
                match kind {
                    0 => Behaviour::Hang,
                    1 => Behaviour::FailAfter(ms, Failure::NotApplied),
                    _ => Behaviour::SucceedAfter(ms),
                }
            });
            prop_assert!(attempts <= 8);
            prop_assert!(policy_cap >= 1_000.0);
            prop_assert!(elapsed <= 30_000.0 + 2.0 * late + 1e-6, "took {}", elapsed);
        }

    }
}
