//! Retries inside one deadline: backoff schedules, the decision to try
//! again, and the loop itself as a machine ([`RetryRun`]) that both hosts
//! drive (`js/retry.js`, `src/web/retry.rs`): they report what happened at
//! `now` (an attempt started, succeeded, failed, timed out, a signal
//! aborted) and own only the signals and timers. How a loop that gave up
//! is worded ([`Stopped`], `RetryFailed`) is written here once, for the
//! hedge loop too. The retry budget shared across calls is
//! [`crate::core::retry_budget`]; the hedge loop is [`crate::core::hedge`].
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
//! # Invariants (each is a property test, in `retry/tests.rs`)
//! 1. Backoff schedules: see [`backoff`] (bounded, monotone ceilings,
//!    deterministic for a seed).
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
//! 7. A wait the server asked for (`Retry-After` and the rate-limit resets,
//!    [`after`]) is taken only when `attemptMinMs` still remains after it
//!    and it is not over `maxRetryAfterMs`; otherwise the loop stops at once
//!    ([`StopReason::RetryAfter`]). The delay slept is never shorter than it
//!    (jitter applies to the computed backoff only), so no server wait is
//!    cut short and none is slept past the deadline.
//! 6. A signal ends a run where it is (before an attempt, during one, during
//!    the backoff): a running attempt is recorded as ambiguous, ended by the
//!    deadline or aborted, and no retry is asked of the budget; every stop
//!    is one [`Stopped`], whose sentence names the attempts made.

use core::fmt;

use serde::{Deserialize, Serialize};

use crate::core::deadline::{check_ms, DeadlineError};
use crate::core::error::{Described, Kind, Message};
use crate::core::retry_budget::{RetryBudget, RetryBudgetError};
use crate::core::rng::SplitMix64;

/// The most attempts one retry loop accepts (and the longest schedule).
pub const MAX_ATTEMPTS: u32 = 100;

/// Attempts when the caller does not say (one try and two retries).
pub const DEFAULT_MAX_ATTEMPTS: u32 = 3;

/// Why a retry setting or call was refused.
#[derive(Debug, Clone, PartialEq)]
pub enum RetryError {
    /// A duration (`baseMs`, `maxMs`, `attemptMinMs`, `attemptTimeoutMs`, `now`,
    /// `at`, `delayMs`) is NaN, infinite, negative or too large.
    Time(DeadlineError),
    /// `jitter` is outside `[0, 1]` (0: no jitter, 1: anywhere from 0 to the ceiling).
    BadJitter {
        /// The jitter given.
        value: f64,
    },
    /// `maxMs` is below `baseMs`: the first delay would already exceed the cap.
    MaxBelowBase {
        /// The base delay given, in ms.
        base_ms: f64,
        /// The ceiling given, in ms (below `base_ms`).
        max_ms: f64,
    },
    /// `maxAttempts` is outside `1 ..= MAX_ATTEMPTS`.
    BadMaxAttempts {
        /// The number of attempts given.
        value: u32,
    },
    /// A schedule of more than `MAX_ATTEMPTS` retries was asked for.
    TooManyRetries {
        /// The number of retries asked for.
        value: u32,
    },
    /// Attempt numbers start at 1.
    BadAttempt {
        /// The attempt number given (0).
        value: u32,
    },
    /// `jitter` is a name other than `full`, `equal` or `decorrelated`.
    UnknownJitter {
        /// The name given (its first 64 characters).
        value: String,
    },
    /// A failure kind other than `ambiguous`, `not-applied` or `permanent`.
    UnknownFailure {
        /// The kind given (its first 64 characters).
        value: String,
    },
    /// The shared retry budget refused a value ([`crate::core::retry_budget`]).
    Budget(RetryBudgetError),
    /// A [`RetryRun`] method was called in the wrong state, e.g. `failed`
    /// without a started attempt.
    OutOfOrder {
        /// The method called (`start`, `succeeded`, `failed`).
        call: &'static str,
        /// The run's state in words (`running an attempt`, `finished`, …).
        state: &'static str,
    },
}

/// The retry's message templates: its errors' and its stops' (a stop's
/// sentence is data a binding shows, see [`StopReason::message`]).
pub mod msg {
    crate::templates! { "retry";
        /// [`attempt_timeout`](super::attempt_timeout).
        ATTEMPT_TIMEOUT = "attempt {attempt} timed out after {timeoutMs:ms} ms";
        /// [`RetryError::BadJitter`](super::RetryError::BadJitter).
        BAD_JITTER = "'jitter' must be between 0 and 1: current value is {value}";
        /// [`RetryError::UnknownJitter`](super::RetryError::UnknownJitter).
        UNKNOWN_JITTER = "'jitter' must be a number between 0 and 1 or one of full, equal, decorrelated: current value is '{value}'";
        /// [`RetryError::MaxBelowBase`](super::RetryError::MaxBelowBase).
        MAX_BELOW_BASE = "'maxMs' must be at least 'baseMs' ({baseMs}): current value is {maxMs}";
        /// [`RetryError::BadMaxAttempts`](super::RetryError::BadMaxAttempts).
        BAD_MAX_ATTEMPTS = "'maxAttempts' must be between 1 and {max}: current value is {value}";
        /// [`RetryError::TooManyRetries`](super::RetryError::TooManyRetries).
        TOO_MANY_RETRIES = "'retries' must be between 0 and {max}: current value is {value}";
        /// [`RetryError::BadAttempt`](super::RetryError::BadAttempt).
        BAD_ATTEMPT = "'attempt' must be at least 1: current value is {value}";
        /// [`RetryError::UnknownFailure`](super::RetryError::UnknownFailure).
        UNKNOWN_FAILURE = "'failure' must be one of ambiguous, not-applied, permanent: current value is '{value}'";
        /// [`RetryError::OutOfOrder`](super::RetryError::OutOfOrder).
        OUT_OF_ORDER = "'{call}' cannot be called while the retry is {state}";
        /// The sentence of [`StopReason::Permanent`](super::StopReason::Permanent).
        STOP_PERMANENT = "the failure is permanent, so it was not retried";
        /// The sentence of [`StopReason::NotIdempotent`](super::StopReason::NotIdempotent).
        STOP_NOT_IDEMPOTENT = "the operation is not idempotent and its failure was ambiguous (it may have been applied), so it was not retried; pass an operation key if a repeat is safe";
        /// The sentence of [`StopReason::Exhausted`](super::StopReason::Exhausted).
        STOP_EXHAUSTED = "all {attempts} attempts failed";
        /// The sentence of [`StopReason::Insufficient`](super::StopReason::Insufficient).
        STOP_INSUFFICIENT = "only {remainingMs:ms} ms remain but an attempt needs at least {attemptMinMs:ms} ms, so none was started";
        /// The sentence of [`StopReason::TimeoutBelowMin`](super::StopReason::TimeoutBelowMin).
        STOP_TIMEOUT_BELOW_MIN = "an attempt would time out after {attemptTimeoutMs:ms} ms but needs at least {attemptMinMs:ms} ms, so none was started";
        /// The sentence of [`StopReason::BackoffPastDeadline`](super::StopReason::BackoffPastDeadline).
        STOP_BACKOFF_PAST_DEADLINE = "a {delayMs:ms} ms backoff would leave less than the {attemptMinMs:ms} ms an attempt needs out of the {remainingMs:ms} ms remaining, so it was not slept";
        /// The sentence of [`StopReason::RetryAfter`](super::StopReason::RetryAfter) past the deadline.
        STOP_RETRY_AFTER = "the server asked for a {retryAfterMs:ms} ms wait, which would leave less than the {attemptMinMs:ms} ms an attempt needs out of the {remainingMs:ms} ms remaining";
        /// The sentence of [`StopReason::RetryAfter`](super::StopReason::RetryAfter) over `maxRetryAfterMs`.
        STOP_RETRY_AFTER_CAP = "the server asked for a {retryAfterMs:ms} ms wait, over maxRetryAfterMs ({maxRetryAfterMs:ms} ms)";
        /// The sentence of [`StopReason::BudgetExhausted`](super::StopReason::BudgetExhausted).
        STOP_BUDGET_EXHAUSTED = "the retry budget is exhausted for this window";
        /// The sentence of [`StopReason::CircuitOpen`](super::StopReason::CircuitOpen).
        STOP_CIRCUIT_OPEN = "the circuit breaker lets no call through for {waitMs:ms} ms, which would leave less than the {attemptMinMs:ms} ms an attempt needs out of the {remainingMs:ms} ms remaining";
        /// The sentence of [`StopReason::Deadline`](super::StopReason::Deadline) in a hedge.
        STOP_DEADLINE = "the deadline passed";
        /// The sentence of [`StopReason::Deadline`](super::StopReason::Deadline) in a retry.
        STOP_DEADLINE_DURING = "the deadline passed {during}";
        /// The sentence of [`StopReason::Aborted`](super::StopReason::Aborted) in a hedge.
        STOP_ABORTED = "the operation was aborted";
        /// The sentence of [`StopReason::Aborted`](super::StopReason::Aborted) in a retry.
        STOP_ABORTED_DURING = "the operation was aborted {during}";
        /// [`During::BeforeAttempt`](super::During::BeforeAttempt).
        BEFORE_ATTEMPT = "before the attempt";
        /// [`During::Attempt`](super::During::Attempt).
        DURING_ATTEMPT = "during the attempt";
        /// [`During::Backoff`](super::During::Backoff).
        DURING_BACKOFF = "during the backoff";
        /// The reason a hedge's other attempts are aborted with when one wins
        /// ([`answered_first`](crate::core::hedge::answered_first)).
        HEDGE_ANSWERED_FIRST = "hedged attempt {number} answered first";
        /// The message of [`Stopped`](super::Stopped) (`RetryFailed`), one attempt.
        STOPPED_ONE = "{loop} stopped after 1 attempt: {reason}";
        /// The message of [`Stopped`](super::Stopped) (`RetryFailed`), 0 or several attempts.
        STOPPED = "{loop} stopped after {attempts} attempts: {reason}";
    }
}

/// How a stream's attempt that got a non-ok `status` failed, for the retry
/// loop when the caller gave no `classify`: 429 and 503 say the request was
/// not taken ([`Failure::NotApplied`]), 408 and the other 5xx may have run
/// ([`Failure::Ambiguous`]), any other status will not change by asking
/// again ([`Failure::Permanent`]).
pub fn status_failure(status: u16) -> Failure {
    match status {
        429 | 503 => Failure::NotApplied,
        408 | 500..=599 => Failure::Ambiguous,
        _ => Failure::Permanent,
    }
}

/// How an attempt failed when its error is an HTTP response of `status` (a
/// thrown `Response`) or carries one (an error's `response`), and the caller
/// gave no `classify`: the streams' rule, [`status_failure`] (429 and 503 were
/// not applied, 408 and the other 5xx are ambiguous, any other is permanent).
/// `None` when `status` is not a whole number 100 ..= 599: not an HTTP
/// status, so the error is classified as any other.
pub fn response_failure(status: f64) -> Option<Failure> {
    let http = status.fract() == 0.0 && (100.0..=599.0).contains(&status);
    // Whole and 100 ..= 599: exact.
    http.then(|| status_failure(status as u16))
}

/// The message of an `AttemptTimeout` error, which both hosts raise: attempt
/// `attempt` (from 1) reached its own timeout of `timeout_ms`.
pub fn attempt_timeout(attempt: u32, timeout_ms: f64) -> Message {
    Message::new(msg::ATTEMPT_TIMEOUT).arg("attempt", attempt).arg("timeoutMs", timeout_ms)
}

crate::described_error!(RetryError);

impl Described for RetryError {
    fn code(&self) -> &'static str {
        match self {
            Self::Time(e) => e.code(),
            Self::BadJitter { .. } => "JITTER_OUT_OF_RANGE",
            Self::MaxBelowBase { .. } => "MAX_BELOW_BASE",
            Self::BadMaxAttempts { .. } => "MAX_ATTEMPTS_OUT_OF_RANGE",
            Self::TooManyRetries { .. } => "RETRIES_OUT_OF_RANGE",
            Self::BadAttempt { .. } => "ATTEMPT_OUT_OF_RANGE",
            Self::UnknownJitter { .. } => "UNKNOWN_JITTER",
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
            Self::BadJitter { .. } | Self::UnknownJitter { .. } => "backoff.jitter",
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

    fn message(&self) -> Message {
        let value = |id, value: f64| Message::new(id).arg("value", value);
        match self {
            Self::Time(e) => e.message(),
            Self::BadJitter { value: v } => value(msg::BAD_JITTER, *v),
            Self::MaxBelowBase { base_ms, max_ms } => {
                Message::new(msg::MAX_BELOW_BASE).arg("baseMs", *base_ms).arg("maxMs", *max_ms)
            }
            Self::BadMaxAttempts { value: v } => value(msg::BAD_MAX_ATTEMPTS, (*v).into()).arg("max", MAX_ATTEMPTS),
            Self::TooManyRetries { value: v } => value(msg::TOO_MANY_RETRIES, (*v).into()).arg("max", MAX_ATTEMPTS),
            Self::BadAttempt { value: v } => value(msg::BAD_ATTEMPT, (*v).into()),
            Self::UnknownFailure { value: v } => Message::new(msg::UNKNOWN_FAILURE).arg("value", v.as_str()),
            Self::UnknownJitter { value: v } => Message::new(msg::UNKNOWN_JITTER).arg("value", v.as_str()),
            Self::Budget(e) => e.message(),
            Self::OutOfOrder { call, state } => Message::new(msg::OUT_OF_ORDER).arg("call", *call).arg("state", *state),
        }
    }
}

impl From<RetryBudgetError> for RetryError {
    fn from(e: RetryBudgetError) -> Self {
        Self::Budget(e)
    }
}

impl From<DeadlineError> for RetryError {
    fn from(e: DeadlineError) -> Self {
        Self::Time(e)
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
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub struct RetryOptions {
    /// No attempt starts with less than this left (checked again after every
    /// backoff). Default 0: whenever any time is left.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "typescript", tsify(optional))]
    pub attempt_min_ms: Option<f64>,
    /// Each attempt's own timeout (default: the time left). Below
    /// `attemptMinMs` (or 0): no attempt, a stop for "insufficient".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "typescript", tsify(optional))]
    pub attempt_timeout_ms: Option<f64>,
    /// Default `{ baseMs: 100, maxMs: 2000, jitter: 1 }`: full jitter under a
    /// ceiling doubling from 100 ms to 2 s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "typescript", tsify(optional))]
    pub backoff: Option<BackoffOptions>,
    /// 1–100, default 3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "typescript", tsify(optional))]
    pub max_attempts: Option<u32>,
    /// Whether repeating the operation is harmless (default false). An
    /// ambiguous failure (a timeout) of a non-idempotent one is not retried
    /// without an operation key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "typescript", tsify(optional))]
    pub idempotent: Option<bool>,
    /// The longest wait a server may ask for (`Retry-After`, the rate-limit
    /// resets) that the loop still waits; a longer one stops it at once with
    /// [`StopReason::RetryAfter`]. Default: no cap but the deadline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "typescript", tsify(optional))]
    pub max_retry_after_ms: Option<f64>,
}

impl RetryOptions {
    /// The validated policy, defaults filled in.
    pub fn policy(&self) -> Result<RetryPolicy, RetryError> {
        let backoff = match &self.backoff {
            Some(b) => b.backoff()?,
            None => DEFAULT_BACKOFF.backoff()?,
        };
        RetryPolicy::new(
            self.attempt_min_ms.unwrap_or(0.0),
            self.attempt_timeout_ms,
            backoff,
            self.max_attempts.unwrap_or(DEFAULT_MAX_ATTEMPTS),
            self.idempotent.unwrap_or(false),
        )?
        .with_max_retry_after_ms(self.max_retry_after_ms)
    }
}

/// How an attempt failed, as far as the caller can tell. Crosses to
/// JavaScript as `"ambiguous"`, `"not-applied"` or `"permanent"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
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

    /// The kind's name as JavaScript writes it (`"ambiguous"`, `"not-applied"`,
    /// `"permanent"`).
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
    Exhausted {
        /// How many attempts were made (the policy's `maxAttempts`).
        attempts: u32,
    },
    /// Less than `attemptMinMs` remains (checked again after every backoff).
    Insufficient {
        /// What was left before the deadline, in ms.
        remaining_ms: f64,
        /// The least an attempt needs, in ms.
        attempt_min_ms: f64,
    },
    /// `attemptTimeoutMs` is below `attemptMinMs` (or 0): no attempt could
    /// get the time it needs. Reported as `insufficient`, like a short deadline.
    TimeoutBelowMin {
        /// The per-attempt timeout, in ms.
        attempt_timeout_ms: f64,
        /// The least an attempt needs, in ms.
        attempt_min_ms: f64,
    },
    /// Sleeping `delay_ms` would leave less than `attemptMinMs`; not slept.
    BackoffPastDeadline {
        /// The backoff that was not slept, in ms.
        delay_ms: f64,
        /// What was left before the deadline, in ms.
        remaining_ms: f64,
        /// The least an attempt needs, in ms.
        attempt_min_ms: f64,
    },
    /// The server asked for a wait (`Retry-After`, a rate-limit reset) that
    /// would leave less than `attemptMinMs`, or longer than `maxRetryAfterMs`.
    RetryAfter {
        /// The wait the server asked for, in ms.
        retry_after_ms: f64,
        /// What was left before the deadline, in ms.
        remaining_ms: f64,
        /// The least an attempt needs, in ms.
        attempt_min_ms: f64,
        /// The cap it was over, when that is why.
        max_retry_after_ms: Option<f64>,
    },
    /// The shared [`RetryBudget`] has no retry left in its window.
    BudgetExhausted,
    /// A circuit breaker refused the attempt, and waiting until it lets a
    /// call through would leave less than `attemptMinMs`.
    CircuitOpen {
        /// How long until the breaker lets a call through, in ms.
        wait_ms: f64,
        /// What was left before the deadline, in ms.
        remaining_ms: f64,
        /// The least an attempt needs, in ms.
        attempt_min_ms: f64,
    },
    /// The deadline itself passed (its signal aborted with its own expiry).
    Deadline {
        /// Where the loop was; `None` in a hedge, whose attempts overlap.
        during: Option<During>,
    },
    /// The caller's signal aborted, or the deadline's signal aborted for
    /// another reason (a parent's).
    Aborted {
        /// Where the loop was; `None` in a hedge.
        during: Option<During>,
    },
}

/// Where a retry loop was when a signal ended it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum During {
    /// Before an attempt started.
    BeforeAttempt,
    /// While an attempt ran.
    Attempt,
    /// While the backoff was slept.
    Backoff,
}

impl During {
    fn message(self) -> Message {
        Message::new(match self {
            Self::BeforeAttempt => msg::BEFORE_ATTEMPT,
            Self::Attempt => msg::DURING_ATTEMPT,
            Self::Backoff => msg::DURING_BACKOFF,
        })
    }
}

/// Which loop stopped: the first word of its message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loop {
    /// [`RetryRun`].
    Retry,
    /// [`HedgeRun`](crate::core::hedge::HedgeRun).
    Hedge,
}

/// How a retry or hedge loop ended without a value: what both hosts raise
/// (`RetryFailed`), its word ([`Stopped::code`]) and its whole sentence
/// ([`Stopped::message`], the `Display`), written once here.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stopped {
    /// The loop that stopped.
    pub kind: Loop,
    /// How many attempts it started.
    pub attempts: u32,
    /// Why.
    pub reason: StopReason,
}

impl Stopped {
    /// The stable word (`RetryFailed.reason`).
    pub fn code(&self) -> &'static str {
        self.reason.code()
    }

    /// The whole sentence: `retry stopped after 2 attempts: all 2 attempts failed`.
    pub fn message(&self) -> Message {
        let name = match self.kind {
            Loop::Retry => "retry",
            Loop::Hedge => "hedge",
        };
        let m = match self.attempts {
            1 => Message::new(msg::STOPPED_ONE),
            n => Message::new(msg::STOPPED).arg("attempts", n),
        };
        m.arg("loop", name).arg("reason", self.reason.message())
    }

    /// The word and the whole sentence, for a binding.
    pub fn stop(&self) -> Stop {
        Stop { message: self.message(), ..self.reason.stop() }
    }
}

impl fmt::Display for Stopped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.message().fmt(f)
    }
}

/// Why a retry loop stopped, as a stable word (`RetryFailed.reason` in
/// JavaScript). Several [`StopReason`]s share one word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub enum StopCode {
    /// `"permanent"`: [`StopReason::Permanent`].
    Permanent,
    /// `"not-idempotent"`: [`StopReason::NotIdempotent`].
    NotIdempotent,
    /// `"exhausted"`: every attempt failed.
    Exhausted,
    /// `"insufficient"`: too little time for an attempt, from the deadline or
    /// from `attemptTimeoutMs` ([`StopReason::Insufficient`],
    /// [`StopReason::TimeoutBelowMin`]).
    Insufficient,
    /// `"backoff-past-deadline"`: [`StopReason::BackoffPastDeadline`].
    BackoffPastDeadline,
    /// `"retry-after"`: [`StopReason::RetryAfter`].
    RetryAfter,
    /// `"budget-exhausted"`: [`StopReason::BudgetExhausted`].
    BudgetExhausted,
    /// `"circuit-open"`: [`StopReason::CircuitOpen`].
    CircuitOpen,
    /// `"deadline"`: [`StopReason::Deadline`].
    Deadline,
    /// `"aborted"`: [`StopReason::Aborted`].
    Aborted,
}

impl StopCode {
    /// The word as JavaScript writes it (`"not-idempotent"`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Permanent => "permanent",
            Self::NotIdempotent => "not-idempotent",
            Self::Exhausted => "exhausted",
            Self::Insufficient => "insufficient",
            Self::BackoffPastDeadline => "backoff-past-deadline",
            Self::RetryAfter => "retry-after",
            Self::BudgetExhausted => "budget-exhausted",
            Self::CircuitOpen => "circuit-open",
            Self::Deadline => "deadline",
            Self::Aborted => "aborted",
        }
    }
}

/// A stop as a binding reports it: the word and the sentence (as a
/// message, its template and numbers, see [`crate::core::error`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub struct Stop {
    /// The stable word (`reason` in JS).
    pub reason: StopCode,
    /// The sentence, as a template and its numbers.
    #[cfg_attr(feature = "typescript", tsify(type = "string"))]
    pub message: Message,
    /// For `"retry-after"`: the wait the server asked for, in ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "typescript", tsify(optional))]
    pub retry_after_ms: Option<f64>,
    /// For `"retry-after"`: what was left before the deadline, in ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "typescript", tsify(optional))]
    pub remaining_ms: Option<f64>,
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
            Self::RetryAfter { .. } => StopCode::RetryAfter,
            Self::BudgetExhausted => StopCode::BudgetExhausted,
            Self::CircuitOpen { .. } => StopCode::CircuitOpen,
            Self::Deadline { .. } => StopCode::Deadline,
            Self::Aborted { .. } => StopCode::Aborted,
        }
    }

    /// A stable code for JS (`err.reason`).
    pub fn code(&self) -> &'static str {
        self.stop_code().as_str()
    }

    /// The word and the sentence, for a binding.
    pub fn stop(&self) -> Stop {
        let (retry_after_ms, remaining_ms) = match *self {
            Self::RetryAfter { retry_after_ms, remaining_ms, .. } => (Some(retry_after_ms), Some(remaining_ms)),
            _ => (None, None),
        };
        Stop { reason: self.stop_code(), message: self.message(), retry_after_ms, remaining_ms }
    }

    /// The sentence, as a message.
    pub fn message(&self) -> Message {
        match *self {
            Self::Permanent => Message::new(msg::STOP_PERMANENT),
            Self::NotIdempotent => Message::new(msg::STOP_NOT_IDEMPOTENT),
            Self::Exhausted { attempts } => Message::new(msg::STOP_EXHAUSTED).arg("attempts", attempts),
            Self::Insufficient { remaining_ms, attempt_min_ms } => Message::new(msg::STOP_INSUFFICIENT)
                .arg("remainingMs", remaining_ms)
                .arg("attemptMinMs", attempt_min_ms),
            Self::TimeoutBelowMin { attempt_timeout_ms, attempt_min_ms } => Message::new(msg::STOP_TIMEOUT_BELOW_MIN)
                .arg("attemptTimeoutMs", attempt_timeout_ms)
                .arg("attemptMinMs", attempt_min_ms),
            Self::BackoffPastDeadline { delay_ms, remaining_ms, attempt_min_ms } => {
                Message::new(msg::STOP_BACKOFF_PAST_DEADLINE)
                    .arg("delayMs", delay_ms)
                    .arg("attemptMinMs", attempt_min_ms)
                    .arg("remainingMs", remaining_ms)
            }
            Self::RetryAfter { retry_after_ms, max_retry_after_ms: Some(cap), .. } => {
                Message::new(msg::STOP_RETRY_AFTER_CAP).arg("retryAfterMs", retry_after_ms).arg("maxRetryAfterMs", cap)
            }
            Self::RetryAfter { retry_after_ms, remaining_ms, attempt_min_ms, max_retry_after_ms: None } => {
                Message::new(msg::STOP_RETRY_AFTER)
                    .arg("retryAfterMs", retry_after_ms)
                    .arg("attemptMinMs", attempt_min_ms)
                    .arg("remainingMs", remaining_ms)
            }
            Self::BudgetExhausted => Message::new(msg::STOP_BUDGET_EXHAUSTED),
            Self::CircuitOpen { wait_ms, remaining_ms, attempt_min_ms } => Message::new(msg::STOP_CIRCUIT_OPEN)
                .arg("waitMs", wait_ms)
                .arg("attemptMinMs", attempt_min_ms)
                .arg("remainingMs", remaining_ms),
            Self::Deadline { during: None } => Message::new(msg::STOP_DEADLINE),
            Self::Deadline { during: Some(d) } => Message::new(msg::STOP_DEADLINE_DURING).arg("during", d.message()),
            Self::Aborted { during: None } => Message::new(msg::STOP_ABORTED),
            Self::Aborted { during: Some(d) } => Message::new(msg::STOP_ABORTED_DURING).arg("during", d.message()),
        }
    }
}

impl fmt::Display for StopReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.message().fmt(f)
    }
}

/// What to do before attempt `n`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Start {
    /// Start attempt `number`, aborting it after `timeout_ms`.
    Attempt {
        /// The attempt's number, from 1.
        number: u32,
        /// The attempt's timeout, in ms: `attemptTimeoutMs` or what is left
        /// before the deadline, whichever is smaller.
        timeout_ms: f64,
        /// What is left before the deadline, in ms.
        remaining_ms: f64,
    },
    /// Give up.
    Stop(StopReason),
}

/// What to do after a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum AfterFailure {
    /// Sleep `delay_ms` (abortably), then ask [`RetryPolicy::start`] again.
    Backoff {
        /// The delay, in ms, jittered and never past `maxMs`.
        delay_ms: f64,
    },
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
    max_retry_after_ms: Option<f64>,
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
        Ok(Self { attempt_min_ms, attempt_timeout_ms, backoff, max_attempts, idempotent, max_retry_after_ms: None })
    }

    /// The policy with a cap on the waits a server may ask for (`None`: the
    /// deadline is the only cap); a duration in ms, checked by name
    /// (`maxRetryAfterMs`).
    pub fn with_max_retry_after_ms(mut self, max_retry_after_ms: Option<f64>) -> Result<Self, RetryError> {
        self.max_retry_after_ms = match max_retry_after_ms {
            Some(m) => Some(check_ms("maxRetryAfterMs", m)?),
            None => None,
        };
        Ok(self)
    }

    /// The cap on a server-asked wait, in ms (`None`: only the deadline).
    pub fn max_retry_after_ms(&self) -> Option<f64> {
        self.max_retry_after_ms
    }

    /// The backoff between attempts.
    pub fn backoff(&self) -> &Backoff {
        &self.backoff
    }
    /// The most attempts, the first included: `1 ..= MAX_ATTEMPTS`.
    pub fn max_attempts(&self) -> u32 {
        self.max_attempts
    }
    /// The least an attempt needs, in ms: with less left, none starts.
    pub fn attempt_min_ms(&self) -> f64 {
        self.attempt_min_ms
    }
    /// Whether a repeat of the operation is safe, so that an ambiguous
    /// failure may be retried.
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
        self.after_failure_waiting(attempt, failure, operation_key_safe, delay_ms, None, now_ms, at)
    }

    /// [`RetryPolicy::after_failure`] when the failed attempt's response
    /// asked for a wait of `server_wait_ms` ([`after::server_wait`]): it is
    /// taken only when `attemptMinMs` remains after it and it is within
    /// `maxRetryAfterMs` (else [`StopReason::RetryAfter`]), and the delay is
    /// the longer of it and the backoff. A wait that is not a finite,
    /// non-negative number is no wait.
    #[allow(clippy::too_many_arguments)]
    pub fn after_failure_waiting(
        &self,
        attempt: u32,
        failure: Failure,
        operation_key_safe: bool,
        delay_ms: f64,
        server_wait_ms: Option<f64>,
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
        let mut delay_ms = delay_ms;
        if let Some(wait) = server_wait_ms.filter(|w| w.is_finite() && *w >= 0.0) {
            let refuse = |cap| {
                stop(StopReason::RetryAfter {
                    retry_after_ms: wait + 0.0,
                    remaining_ms: remaining,
                    attempt_min_ms: self.attempt_min_ms,
                    max_retry_after_ms: cap,
                })
            };
            if let Some(cap) = self.max_retry_after_ms.filter(|cap| wait > *cap) {
                return refuse(Some(cap));
            }
            let after = remaining - wait;
            if after < self.attempt_min_ms || after <= 0.0 {
                return refuse(None);
            }
            if wait > delay_ms {
                delay_ms = wait + 0.0;
            }
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
    /// The attempt succeeded.
    #[default]
    Ok,
    /// The attempt failed, and how.
    Failed(Failure),
}

/// One attempt, for the error that carries every attempt's outcome. Crosses
/// to JavaScript as `{ attempt, startedAtMs, timeoutMs, elapsedMs, failure? }`
/// (no `failure`: the attempt succeeded).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub struct AttemptRecord {
    /// The attempt's number, from 1 (`attempt` in JS).
    #[serde(rename = "attempt")]
    pub number: u32,
    /// When the attempt started, in ms on the monotonic timeline
    /// (`startedAtMs` in JS).
    #[serde(rename = "startedAtMs")]
    pub started_ms: f64,
    /// The timeout the attempt was given, in ms (`timeoutMs` in JS).
    pub timeout_ms: f64,
    /// How long the attempt ran, in ms (`elapsedMs` in JS).
    pub elapsed_ms: f64,
    /// How it ended (`outcome` in JS): ok, error, timeout, deadline or aborted.
    #[serde(rename = "outcome")]
    pub ended: Ended,
    /// How it ended as a failure kind; in JS a `failure` field, absent on success.
    #[serde(rename = "failure", with = "outcome_as_failure", default, skip_serializing_if = "AttemptOutcome::is_ok")]
    #[cfg_attr(feature = "typescript", tsify(optional, type = "Failure"))]
    pub outcome: AttemptOutcome,
}

impl AttemptOutcome {
    fn is_ok(&self) -> bool {
        *self == Self::Ok
    }
}

/// How an attempt ended, as both hosts report it (`outcome` in JS, a retry's
/// and a hedge's records alike).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub enum Ended {
    /// Still running (a hedge's attempt, while the hedge runs).
    Running,
    /// It answered.
    Ok,
    /// It failed with an error of its own.
    Error,
    /// Its own timeout cut it (`AttemptTimeout`): an ambiguous failure.
    Timeout,
    /// The deadline itself ended it.
    Deadline,
    /// A signal ended it: the caller's, or, in a hedge, another attempt's answer.
    Aborted,
}

impl Ended {
    /// The word as JavaScript writes it (`"ok"`, `"timeout"`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Ok => "ok",
            Self::Error => "error",
            Self::Timeout => "timeout",
            Self::Deadline => "deadline",
            Self::Aborted => "aborted",
        }
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
    Sleeping,
    Done,
}

impl Phase {
    fn name(self) -> &'static str {
        match self {
            Self::Ready => "waiting to start an attempt",
            Self::Running { .. } => "running an attempt",
            Self::Sleeping => "sleeping a backoff",
            Self::Done => "finished",
        }
    }
}

/// How a running attempt failed, as the host saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptFailure {
    /// It rejected (or threw) an error of its own, classified as this.
    Error(Failure),
    /// Its own timeout fired: always [`Failure::Ambiguous`], never classified.
    Timeout,
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
    /// The last computed backoff, in ms (decorrelated jitter follows it).
    previous_delay_ms: f64,
    /// The first attempt was counted as a request in a budget (once, even
    /// when a breaker refused it and it started again).
    requested: bool,
    phase: Phase,
    records: Vec<AttemptRecord>,
    stop: Option<StopReason>,
}

impl RetryRun {
    /// A run of `policy` against the deadline `at` (ms on the monotonic
    /// timeline), with jitter drawn from `seed`. `operation_key_safe`: the
    /// caller passed an operation key, so an ambiguous failure of a
    /// non-idempotent operation may still be retried.
    pub fn new(policy: RetryPolicy, at: f64, seed: u64, operation_key_safe: bool) -> Result<Self, RetryError> {
        let at = check_ms("at", at)?;
        Ok(Self {
            policy,
            at,
            rng: SplitMix64::new(seed),
            operation_key_safe,
            attempts: 0,
            previous_delay_ms: 0.0,
            requested: false,
            phase: Phase::Ready,
            records: Vec::new(),
            stop: None,
        })
    }

    /// Decides the next attempt. The first attempt counts as one request in
    /// `budget`; later attempts were already paid for by [`RetryRun::failed`].
    pub fn start(&mut self, now_ms: f64, budget: Option<&mut RetryBudget>) -> Result<Start, RetryError> {
        if !matches!(self.phase, Phase::Ready | Phase::Sleeping) {
            return Err(RetryError::OutOfOrder { call: "start", state: self.phase.name() });
        }
        let decision = self.policy.start(self.attempts + 1, now_ms, self.at)?;
        match decision {
            Start::Attempt { number, timeout_ms, .. } => {
                if number == 1 && !self.requested {
                    if let Some(b) = budget {
                        b.record_request(now_ms)?;
                        self.requested = true;
                    }
                }
                self.attempts = number;
                self.phase = Phase::Running { started_ms: now_ms + 0.0, timeout_ms };
            }
            Start::Stop(reason) => self.end(reason),
        }
        Ok(decision)
    }

    /// A circuit breaker refused the attempt [`start`](Self::start) just
    /// admitted, until `until` (ms, the same clock): the attempt is not
    /// made and not counted. Waits for the breaker (a backoff of
    /// `until - now`) when that leaves `attemptMinMs` before the deadline;
    /// otherwise stops ([`StopReason::CircuitOpen`]): a caller without the
    /// time to wait goes to its fallback at once.
    pub fn refused(&mut self, now_ms: f64, until: f64) -> Result<AfterFailure, RetryError> {
        let now = check_ms("now", now_ms)?;
        if !matches!(self.phase, Phase::Running { .. }) {
            return Err(RetryError::OutOfOrder { call: "refused", state: self.phase.name() });
        }
        self.attempts = self.attempts.saturating_sub(1);
        let remaining_ms = (self.at - now).max(0.0);
        // NaN or a passed instant waits nothing.
        let wait_ms = if until > now { until - now } else { 0.0 };
        let attempt_min_ms = self.policy.attempt_min_ms;
        if remaining_ms - wait_ms >= attempt_min_ms {
            self.phase = Phase::Sleeping;
            Ok(AfterFailure::Backoff { delay_ms: wait_ms })
        } else {
            let reason = StopReason::CircuitOpen { wait_ms, remaining_ms, attempt_min_ms };
            self.end(reason);
            Ok(AfterFailure::Stop(reason))
        }
    }

    /// The running attempt resolved.
    pub fn succeeded(&mut self, now_ms: f64) -> Result<(), RetryError> {
        self.finish(now_ms, AttemptOutcome::Ok, Ended::Ok, "succeeded")?;
        self.phase = Phase::Done;
        Ok(())
    }

    /// The running attempt failed with an error classified as `failure`:
    /// decides whether to back off and retry ([`RetryRun::attempt_failed`]).
    pub fn failed(
        &mut self,
        now_ms: f64,
        failure: Failure,
        budget: Option<&mut RetryBudget>,
    ) -> Result<AfterFailure, RetryError> {
        self.attempt_failed(now_ms, AttemptFailure::Error(failure), budget)
    }

    /// The running attempt failed, by an error or its own timeout (which is
    /// ambiguous: it may have been applied): decides whether to back off and
    /// retry. A retry withdraws from `budget`; an empty budget stops the loop.
    pub fn attempt_failed(
        &mut self,
        now_ms: f64,
        how: AttemptFailure,
        budget: Option<&mut RetryBudget>,
    ) -> Result<AfterFailure, RetryError> {
        self.attempt_failed_waiting(now_ms, how, None, budget)
    }

    /// [`RetryRun::attempt_failed`] when the attempt's response asked for a
    /// wait of `server_wait_ms` ([`after::server_wait`], invariant 7).
    /// Never inlined: the binding's four failure paths share one copy in the
    /// `.wasm` (the Worker's size budget).
    #[inline(never)]
    pub fn attempt_failed_waiting(
        &mut self,
        now_ms: f64,
        how: AttemptFailure,
        server_wait_ms: Option<f64>,
        budget: Option<&mut RetryBudget>,
    ) -> Result<AfterFailure, RetryError> {
        let (failure, ended) = match how {
            AttemptFailure::Error(f) => (f, Ended::Error),
            AttemptFailure::Timeout => (Failure::Ambiguous, Ended::Timeout),
        };
        self.finish(now_ms, AttemptOutcome::Failed(failure), ended, "failed")?;
        let delay = self.policy.backoff.delay(self.attempts, self.previous_delay_ms, &mut self.rng);
        self.previous_delay_ms = delay;
        let mut decision = self.policy.after_failure_waiting(
            self.attempts,
            failure,
            self.operation_key_safe,
            delay,
            server_wait_ms,
            now_ms,
            self.at,
        )?;
        if let (AfterFailure::Backoff { .. }, Some(b)) = (decision, budget) {
            if !b.try_retry(now_ms)? {
                decision = AfterFailure::Stop(StopReason::BudgetExhausted);
            }
        }
        match decision {
            AfterFailure::Backoff { .. } => self.phase = Phase::Sleeping,
            AfterFailure::Stop(reason) => self.end(reason),
        }
        Ok(decision)
    }

    /// The deadline's signal (`deadline`: with the deadline's own expiry) or
    /// the caller's signal aborted at `now_ms`: the loop stops. A running
    /// attempt is recorded as ambiguous (it may have been applied), ended by
    /// the deadline or aborted, and no retry is asked of the budget.
    pub fn aborted(&mut self, now_ms: f64, deadline: bool) -> Result<Stopped, RetryError> {
        let during = match self.phase {
            Phase::Ready => During::BeforeAttempt,
            Phase::Running { .. } => {
                let ended = if deadline { Ended::Deadline } else { Ended::Aborted };
                self.finish(now_ms, AttemptOutcome::Failed(Failure::Ambiguous), ended, "aborted")?;
                During::Attempt
            }
            Phase::Sleeping => During::Backoff,
            Phase::Done => return Err(RetryError::OutOfOrder { call: "aborted", state: self.phase.name() }),
        };
        let during = Some(during);
        let reason = if deadline { StopReason::Deadline { during } } else { StopReason::Aborted { during } };
        self.end(reason);
        Ok(Stopped { kind: Loop::Retry, attempts: self.attempts, reason })
    }

    fn end(&mut self, reason: StopReason) {
        self.phase = Phase::Done;
        self.stop = Some(reason);
    }

    /// How the loop stopped without a value (the `RetryFailed` of both
    /// hosts); `None` while it runs or after a success.
    pub fn stopped(&self) -> Option<Stopped> {
        self.stop.map(|reason| Stopped { kind: Loop::Retry, attempts: self.attempts, reason })
    }

    fn finish(
        &mut self,
        now_ms: f64,
        outcome: AttemptOutcome,
        ended: Ended,
        call: &'static str,
    ) -> Result<(), RetryError> {
        let now = check_ms("now", now_ms)?;
        let Phase::Running { started_ms, timeout_ms } = self.phase else {
            return Err(RetryError::OutOfOrder { call, state: self.phase.name() });
        };
        self.records.push(AttemptRecord {
            number: self.attempts,
            started_ms,
            timeout_ms,
            elapsed_ms: if now > started_ms { now - started_ms } else { 0.0 },
            ended,
            outcome,
        });
        // Until the next decision, the run is between attempts.
        self.phase = Phase::Ready;
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

pub mod after;
pub mod backoff;
pub use after::{server_wait, ServerWait};
pub use backoff::{Backoff, BackoffOptions, Jitter, JitterOption, DEFAULT_BACKOFF};

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests;
