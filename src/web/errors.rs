//! The web API's one error type, and its round trip to JavaScript.
//!
//! # Why one enum that converts both ways
//! A Rust Worker's failure often ends in JavaScript: as a signal's abort
//! reason, as a rejected promise returned to the runtime, or as a `fetch`
//! rejection read back in Rust. So every variant that the JavaScript API also
//! has becomes an `Error` carrying the package's brand (an own enumerable
//! string property `edgeDeadlineError` equal to its `name`, plus the same
//! fields), which the JavaScript guards (`isDeadlineExceeded`,
//! `isStreamStalled`, …) recognise across package copies, realms and
//! workerd's cloned abort reasons. Going the other way, [`Error::from`] a
//! `JsValue` reads the brand back, so Rust code can `match` on a
//! `DeadlineExceeded` that travelled through a signal or a `fetch`.

use std::fmt;

use js_sys::{Object, Reflect};
use wasm_bindgen::{JsCast, JsValue};

use crate::core::deadline::DeadlineError;
use crate::core::error::{Described, Kind};
use crate::core::stall::StallError;

/// The own enumerable property every branded error carries (js/errors.js).
pub(crate) const BRAND: &str = "edgeDeadlineError";

/// Which limit of a stream expired (the JavaScript `StreamStalled.phase`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StallPhase {
    /// No response headers within `first_byte_ms` ([`fetch_with_deadline`](super::fetch_with_deadline)).
    FirstByte,
    /// No first progress chunk within `first_chunk_ms`.
    FirstChunk,
    /// No progress within `stall_ms` after the last progress chunk.
    Stall,
}

impl StallPhase {
    /// The JavaScript name: `"first-byte"`, `"first-chunk"` or `"stall"`.
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() {
    /// use edge_deadline::web::StallPhase;
    /// assert_eq!(StallPhase::FirstChunk.as_str(), "first-chunk");
    /// # }
    /// # fn main() {}
    /// ```
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::FirstByte => "first-byte",
            Self::FirstChunk => "first-chunk",
            Self::Stall => "stall",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        match s {
            "first-byte" => Some(Self::FirstByte),
            "first-chunk" => Some(Self::FirstChunk),
            "stall" => Some(Self::Stall),
            _ => None,
        }
    }
}

impl fmt::Display for StallPhase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One attempt of a retry or hedge loop, as [`Error::RetryFailed`] reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct AttemptReport {
    /// The attempt's number, from 1.
    pub attempt: u32,
    /// When it started (ms on the `performance.now()` timeline).
    pub started_at_ms: f64,
    /// How long it ran.
    pub elapsed_ms: f64,
    /// `"ok"`, `"error"`, `"timeout"`, `"deadline"` or `"aborted"`.
    pub outcome: &'static str,
}

impl AttemptReport {
    /// One report per record of a core loop (`RetryRun`'s or `HedgeRun`'s),
    /// `fields` reading its number, start, duration and outcome.
    pub(crate) fn all<R>(records: &[R], fields: impl Fn(&R) -> (u32, f64, f64, &'static str)) -> Vec<Self> {
        let report = |r: &R| {
            let (attempt, started_at_ms, elapsed_ms, outcome) = fields(r);
            Self { attempt, started_at_ms, elapsed_ms, outcome }
        };
        records.iter().map(report).collect()
    }
}

/// Everything the web API can fail with.
///
/// Shortage of time is never [`Error::InvalidArgument`]: an expired or short
/// deadline gives [`Error::DeadlineExceeded`] or [`Error::InsufficientBudget`],
/// so callers can fall back instead of treating it as a bug.
///
/// Converts into a `JsValue` (a branded JavaScript `Error`; a `RangeError` or
/// `TypeError` with `.param` and `.code` for bad input) with
/// `JsValue::from(error)`, and back with `Error::from(js_value)`.
///
/// ```
/// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() {
/// use edge_deadline::web::{Deadline, Error};
/// let err = Deadline::in_ms(f64::NAN).err().unwrap();
/// assert!(matches!(err, Error::InvalidArgument { param: "ms", .. }));
/// assert!(err.to_string().contains("'ms'"));
/// # }
/// # fn main() {}
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Error {
    /// An argument that could never be valid (NaN, ±∞, negative, out of
    /// range, an empty list). `param` names it; `code` is the fault as a
    /// stable word; `message` says what to pass. In JavaScript: a
    /// `RangeError` with the message, `.param` and `.code`.
    InvalidArgument {
        /// The parameter at fault, spelled as in the JavaScript API (`"ms"`, `"stallMs"`).
        param: &'static str,
        /// The fault as the JavaScript error's `.code` says it (`"NOT_FINITE"`,
        /// `"NEGATIVE"`, `"UNKNOWN_FORMAT"`, …): branch on it, not on the message.
        code: &'static str,
        /// What was wrong and what is accepted.
        message: String,
    },
    /// An argument of a kind that is never accepted where it was given (an
    /// option that does not apply, such as a plan for custom caps). In
    /// JavaScript: a `TypeError` with the message, `.param` and `.code`.
    InvalidType {
        /// The parameter at fault, spelled as in the JavaScript API.
        param: &'static str,
        /// The fault as the JavaScript error's `.code` says it (`"NOT_FOR_CUSTOM"`, …).
        code: &'static str,
        /// What was wrong and what is accepted.
        message: String,
    },
    /// The deadline at `at` passed `late_by_ms` ago. In JavaScript: `DeadlineExceeded`.
    DeadlineExceeded {
        /// The deadline instant (ms on the `performance.now()` timeline).
        at: f64,
        /// How long after the instant this was observed (≥ 0).
        late_by_ms: f64,
    },
    /// Less than a step's declared minimum was left, so it was not started.
    /// In JavaScript: `InsufficientBudget`.
    InsufficientBudget {
        /// Time left when the step asked.
        remaining_ms: f64,
        /// The step's declared minimum.
        min_ms: f64,
    },
    /// A stream went quiet: no progress within the limit of `phase`.
    /// In JavaScript: `StreamStalled`.
    StreamStalled {
        /// Which limit expired.
        phase: StallPhase,
        /// The silence observed (≥ the limit).
        after_ms: f64,
        /// Chunks received before the stall.
        chunks: f64,
        /// Bytes received before the stall.
        bytes: f64,
    },
    /// A plan step was cut at its own cap while the deadline still had time.
    /// In JavaScript: `StepTimeout`.
    StepTimeout {
        /// The step's name.
        step: String,
        /// The cap it was given (ms).
        cap_ms: f64,
    },
    /// A retry or hedge loop made no further attempt. In JavaScript: `RetryFailed`.
    RetryFailed {
        /// Why it stopped: the core's stop code (`"exhausted"`,
        /// `"budget-exhausted"`, `"not-idempotent"`, …) or `"deadline"` / `"aborted"`.
        reason: String,
        /// The whole sentence (`"retry stopped after 3 attempts: all 3 attempts failed"`).
        message: String,
        /// Every attempt's outcome, oldest first.
        attempts: Vec<AttemptReport>,
        /// The last attempt's error, if any (JavaScript's `cause`).
        last: Option<Box<Error>>,
        /// For reason `"retry-after"`: the wait the server asked for, in ms (JavaScript's `retryAfterMs`).
        retry_after_ms: Option<f64>,
        /// For reason `"retry-after"`: what was left before the deadline, in ms (JavaScript's `remainingMs`).
        remaining_ms: Option<f64>,
    },
    /// An incoming deadline header is malformed. Its value comes from the
    /// caller, so it is not [`Error::InvalidArgument`] (those are this
    /// program's own mistakes). In JavaScript: `InvalidHeader`.
    InvalidHeader {
        /// The header's name, lowercase.
        header: &'static str,
        /// The fault, as the JavaScript error's `.code` says it (`"HEADER_SIGNED"`, …).
        code: &'static str,
        /// What is wrong with its value.
        message: String,
    },
    /// A retry attempt was cut at its own timeout. In JavaScript: `AttemptTimeout`.
    AttemptTimeout {
        /// The attempt's number (from 1).
        attempt: u32,
        /// Its timeout (ms).
        timeout_ms: f64,
    },
    /// A [`CircuitBreaker`](super::CircuitBreaker) refused the call: calls on
    /// `key` fail at once until `retry_at`. Not a timeout. In JavaScript:
    /// `CircuitOpen`.
    CircuitOpen {
        /// The breaker's key.
        key: String,
        /// `"open"`, or `"half-open"` with every probe out.
        state: &'static str,
        /// When a probe may go at the latest (ms on the `performance.now()` timeline).
        retry_at: f64,
        /// `retry_at` less the time of the refusal.
        retry_in_ms: f64,
    },
    /// Every slot of a [`ConcurrencyLimiter`](super::ConcurrencyLimiter) was
    /// taken (and no wait was allowed or affordable), so the call was shed,
    /// never started. In JavaScript: `Overloaded`.
    Overloaded {
        /// The limit when the call was shed.
        limit: f64,
        /// Calls in flight then.
        in_flight: f64,
    },
    /// An error raised by JavaScript (a network failure, a parent signal's
    /// abort reason, a user callback's rejection), passed through unchanged.
    Js(JsValue),
}

impl Error {
    /// The JavaScript `name` of this error (`"DeadlineExceeded"`, `"RangeError"`, …).
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() {
    /// use edge_deadline::web::Error;
    /// let e = Error::DeadlineExceeded { at: 5.0, late_by_ms: 1.0 };
    /// assert_eq!(e.name(), "DeadlineExceeded");
    /// # }
    /// # fn main() {}
    /// ```
    pub fn name(&self) -> &'static str {
        match self {
            Self::InvalidArgument { .. } => "RangeError",
            Self::InvalidType { .. } => "TypeError",
            Self::DeadlineExceeded { .. } => "DeadlineExceeded",
            Self::InsufficientBudget { .. } => "InsufficientBudget",
            Self::StreamStalled { .. } => "StreamStalled",
            Self::StepTimeout { .. } => "StepTimeout",
            Self::RetryFailed { .. } => "RetryFailed",
            Self::AttemptTimeout { .. } => "AttemptTimeout",
            Self::InvalidHeader { .. } => "InvalidHeader",
            Self::CircuitOpen { .. } => "CircuitOpen",
            Self::Overloaded { .. } => "Overloaded",
            Self::Js(_) => "Error",
        }
    }

    /// What a public client may be told about this error, as the JavaScript
    /// `relay` tells it in its fallback answer and in the `event: error` that
    /// ends an event stream after content: the core's
    /// [`fallback_answer`](crate::core::plan::fallback_answer), a status, a
    /// stable code (`STREAM_STALLED`, `DEADLINE_EXCEEDED`, `RETRY_FAILED`,
    /// `UPSTREAM_FAILED`, …) and our own words. The message of one of this
    /// package's errors is kept; any other error's text (the upstream's:
    /// URLs, hosts, keys) never is.
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() {
    /// use edge_deadline::web::Error;
    /// let answer = Error::DeadlineExceeded { at: 5.0, late_by_ms: 1.0 }.public_answer();
    /// assert_eq!((answer.status, answer.code), (504, "DEADLINE_EXCEEDED"));
    /// let upstream = Error::Js(js_sys::Error::new("refused by http://user:key@10.0.0.7/").into());
    /// let answer = upstream.public_answer();
    /// assert_eq!((answer.status, answer.code), (502, "UPSTREAM_FAILED"));
    /// assert!(!answer.reason.contains("10.0.0.7"));
    /// # }
    /// # fn main() {}
    /// ```
    pub fn public_answer(&self) -> crate::core::plan::FallbackAnswer {
        self.answer_for(crate::core::plan::FallbackScope::Relay)
    }

    /// [`public_answer`](Self::public_answer) in the words of `scope` (a plan's step speaks of the step).
    pub(crate) fn answer_for(&self, scope: crate::core::plan::FallbackScope) -> crate::core::plan::FallbackAnswer {
        use crate::core::plan::FallbackCause;
        let (cause, phase) = match self {
            Self::StreamStalled { phase, .. } => (FallbackCause::Stalled, Some(phase.as_str())),
            Self::InsufficientBudget { .. } => (FallbackCause::Insufficient, None),
            Self::DeadlineExceeded { .. } => (FallbackCause::Deadline, None),
            Self::StepTimeout { .. } => (FallbackCause::StepTimeout, None),
            Self::RetryFailed { reason, .. } => (FallbackCause::of_retry(reason), None),
            _ => (FallbackCause::Failed, None),
        };
        let own = (cause != FallbackCause::Failed).then(|| self.to_string());
        crate::core::plan::fallback_answer(cause, scope, phase, false, own.as_deref())
    }

    /// Whether this error means that time ran out, as the JavaScript
    /// `isTimeout` answers it, looking through causes: SDKs and frameworks
    /// wrap the abort reason they were handed, and a handler wants one branch
    /// for all of them.
    ///
    /// True for [`Error::DeadlineExceeded`] (the deadline passed),
    /// [`Error::StepTimeout`] (a plan step hit its cap),
    /// [`Error::AttemptTimeout`] (a retry attempt hit its own timeout),
    /// [`Error::StreamStalled`] (a stream went silent past its limit) and a
    /// JavaScript error named `"TimeoutError"` (`AbortSignal.timeout`), at any
    /// depth: a [`Error::RetryFailed`] whose last attempt timed out, an
    /// [`Error::Js`] whose `cause` chain holds one of these (branded errors of
    /// any copy of the package count). Not for [`Error::InsufficientBudget`]:
    /// nothing was started (match that variant, as JavaScript's
    /// `isInsufficientBudget`), nor an abort for another reason (a client that
    /// left) or words in a message. Never fails: a value whose properties
    /// throw answers false.
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() {
    /// use edge_deadline::web::Error;
    /// assert!(Error::DeadlineExceeded { at: 5.0, late_by_ms: 1.0 }.is_timeout());
    /// let last = Some(Box::new(Error::AttemptTimeout { attempt: 3, timeout_ms: 10.0 }));
    /// let retry = Error::RetryFailed {
    ///     reason: "exhausted".into(),
    ///     message: "m".into(),
    ///     attempts: vec![],
    ///     last,
    ///     retry_after_ms: None,
    ///     remaining_ms: None,
    /// };
    /// assert!(retry.is_timeout());
    /// // A shortage is not a timeout: the step was never started.
    /// assert!(!Error::InsufficientBudget { remaining_ms: 3.0, min_ms: 10.0 }.is_timeout());
    /// # }
    /// # fn main() {}
    /// ```
    pub fn is_timeout(&self) -> bool {
        match self {
            Self::DeadlineExceeded { .. }
            | Self::StepTimeout { .. }
            | Self::AttemptTimeout { .. }
            | Self::StreamStalled { .. } => true,
            Self::RetryFailed { last, .. } => last.as_deref().is_some_and(Self::is_timeout),
            Self::Js(value) => js_is_timeout(value),
            Self::InvalidArgument { .. }
            | Self::InvalidType { .. }
            | Self::InsufficientBudget { .. }
            | Self::InvalidHeader { .. }
            | Self::CircuitOpen { .. }
            | Self::Overloaded { .. } => false,
        }
    }

    /// The parameter at fault of a bad argument (JavaScript's `.param`).
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() {
    /// use edge_deadline::web::Deadline;
    /// let err = Deadline::in_ms(-1.0).err().unwrap();
    /// assert_eq!((err.param(), err.code()), (Some("ms"), Some("NEGATIVE")));
    /// # }
    /// # fn main() {}
    /// ```
    pub fn param(&self) -> Option<&'static str> {
        match self {
            Self::InvalidArgument { param, .. } | Self::InvalidType { param, .. } => Some(param),
            _ => None,
        }
    }

    /// The fault as a stable word (JavaScript's `.code`) of a bad argument
    /// or a malformed header: `"NOT_FINITE"`, `"UNKNOWN_PLATFORM"`,
    /// `"HEADER_SIGNED"`, ….
    pub fn code(&self) -> Option<&'static str> {
        match self {
            Self::InvalidArgument { code, .. } | Self::InvalidType { code, .. } | Self::InvalidHeader { code, .. } => {
                Some(code)
            }
            _ => None,
        }
    }

    /// A bad argument without one of the core's errors behind it, so
    /// without its code ([`UNCODED`]); a core error goes through
    /// [`Error::described`], which keeps the code JavaScript reports.
    pub(crate) fn invalid(param: &'static str, message: impl Into<String>) -> Self {
        Self::InvalidArgument { param, code: UNCODED, message: message.into() }
    }

    /// The core's bad-argument error `error` as this enum: its code and
    /// message, its class (a type fault is [`Error::InvalidType`]), and
    /// `param` as this API names the parameter.
    pub(crate) fn described<E: Described + fmt::Display>(param: &'static str, error: &E) -> Self {
        let (code, message) = (error.code(), error.to_string());
        match error.kind() {
            Kind::Type => Self::InvalidType { param, code, message },
            _ => Self::InvalidArgument { param, code, message },
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The core's sentences, rendered by the core as the JS API's are (js/errors.js fills no
        // template: its messages come out of the `.wasm` rendered); the `errors.message` rows of
        // tests/conformance/cases.json pin both hosts' texts.
        match self {
            Self::InvalidArgument { message, .. } | Self::InvalidType { message, .. } => f.write_str(message),
            // The core's sentences (src/core/deadline.rs `DeadlineError`).
            Self::DeadlineExceeded { at, late_by_ms } => {
                fmt::Display::fmt(&DeadlineError::Exhausted { at: *at, late_by_ms: *late_by_ms }, f)
            }
            Self::InsufficientBudget { remaining_ms, min_ms } => {
                fmt::Display::fmt(&DeadlineError::Insufficient { remaining_ms: *remaining_ms, min_ms: *min_ms }, f)
            }
            Self::StreamStalled { phase, after_ms, chunks, bytes } => {
                crate::core::stall::stalled(phase.as_str(), *after_ms, *chunks, *bytes).fmt(f)
            }
            Self::StepTimeout { step, cap_ms } => crate::core::plan::step_timeout(step, *cap_ms).fmt(f),
            Self::InvalidHeader { message, .. } => f.write_str(message),
            Self::RetryFailed { message, .. } => f.write_str(message),
            Self::AttemptTimeout { attempt, timeout_ms } => {
                crate::core::retry::attempt_timeout(*attempt, *timeout_ms).fmt(f)
            }
            Self::CircuitOpen { key, retry_in_ms, .. } => crate::core::breaker::open_message(key, *retry_in_ms).fmt(f),
            // js/errors.js `Overloaded`, word for word.
            Self::Overloaded { limit, in_flight } => {
                f.write_str("overloaded: all ")?;
                crate::core::number::to_string(f, *limit)?;
                f.write_str(" slots are in use (")?;
                crate::core::number::to_string(f, *in_flight)?;
                f.write_str(" calls in flight), so the call was shed instead of queued")
            }
            Self::Js(value) => match value.dyn_ref::<js_sys::Error>() {
                Some(e) => write!(f, "{}: {}", String::from(e.name()), String::from(e.message())),
                None => write!(f, "{}", value.as_string().unwrap_or_else(|| format!("{value:?}"))),
            },
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::RetryFailed { last: Some(e), .. } => Some(e.as_ref()),
            _ => None,
        }
    }
}

impl From<DeadlineError> for Error {
    fn from(error: DeadlineError) -> Self {
        match error {
            DeadlineError::Exhausted { at, late_by_ms } => Self::DeadlineExceeded { at, late_by_ms },
            DeadlineError::Insufficient { remaining_ms, min_ms } => Self::InsufficientBudget { remaining_ms, min_ms },
            DeadlineError::NotFinite { param, .. }
            | DeadlineError::Negative { param, .. }
            | DeadlineError::TooLarge { param, .. }
            | DeadlineError::TooFar { param, .. } => Self::described(param, &error),
        }
    }
}

impl From<StallError> for Error {
    fn from(error: StallError) -> Self {
        Self::described(error.param(), &error)
    }
}

/// The code of an [`Error::InvalidArgument`] made without one of the core's.
const UNCODED: &str = "INVALID_ARGUMENT";

fn set(target: &Object, key: &str, value: &JsValue) {
    // Setting a property on a fresh, extensible Error cannot throw.
    let _ = Reflect::set(target, &JsValue::from_str(key), value);
}

/// `name` as js/errors.js `brand()` sets it: own, non-enumerable, writable;
/// then the enumerable brand that survives workerd's clone.
fn branded(name: &str, message: &str) -> js_sys::Error {
    let error = js_sys::Error::new(message);
    let descriptor = Object::new();
    set(&descriptor, "value", &JsValue::from_str(name));
    set(&descriptor, "configurable", &JsValue::TRUE);
    set(&descriptor, "writable", &JsValue::TRUE);
    Object::define_property(&error, &JsValue::from_str("name"), &descriptor);
    set(&error, BRAND, &JsValue::from_str(name));
    error
}

impl From<Error> for JsValue {
    fn from(error: Error) -> Self {
        let message = error.to_string();
        let num = |n: f64| JsValue::from_f64(n);
        let e = match &error {
            Error::InvalidArgument { param, code, .. } | Error::InvalidType { param, code, .. } => {
                // js/errors.js `argumentError`: own enumerable `.code` and `.param`.
                let e: js_sys::Object = match error {
                    Error::InvalidType { .. } => js_sys::TypeError::new(&message).into(),
                    _ => js_sys::RangeError::new(&message).into(),
                };
                set(&e, "code", &JsValue::from_str(code));
                set(&e, "param", &JsValue::from_str(param));
                return e.into();
            }
            Error::Js(value) => return value.clone(),
            _ => branded(error.name(), &message),
        };
        match error {
            Error::DeadlineExceeded { at, late_by_ms } => {
                set(&e, "at", &num(at));
                set(&e, "lateByMs", &num(late_by_ms));
            }
            Error::InsufficientBudget { remaining_ms, min_ms } => {
                set(&e, "remainingMs", &num(remaining_ms));
                set(&e, "minMs", &num(min_ms));
            }
            Error::StreamStalled { phase, after_ms, chunks, bytes } => {
                set(&e, "phase", &JsValue::from_str(phase.as_str()));
                set(&e, "afterMs", &num(after_ms));
                set(&e, "chunks", &num(chunks));
                set(&e, "bytes", &num(bytes));
            }
            Error::StepTimeout { step, cap_ms } => {
                set(&e, "step", &JsValue::from_str(&step));
                set(&e, "capMs", &num(cap_ms));
            }
            Error::RetryFailed { reason, attempts, last, retry_after_ms, remaining_ms, .. } => {
                set(&e, "reason", &JsValue::from_str(&reason));
                if let (Some(wait), Some(left)) = (retry_after_ms, remaining_ms) {
                    set(&e, "retryAfterMs", &num(wait));
                    set(&e, "remainingMs", &num(left));
                }
                let list = js_sys::Array::new();
                for a in attempts {
                    let o = Object::new();
                    set(&o, "attempt", &num(f64::from(a.attempt)));
                    set(&o, "startedAtMs", &num(a.started_at_ms));
                    set(&o, "elapsedMs", &num(a.elapsed_ms));
                    set(&o, "outcome", &JsValue::from_str(a.outcome));
                    list.push(&o);
                }
                set(&e, "attempts", &list);
                if let Some(last) = last {
                    set(&e, "cause", &JsValue::from(*last));
                }
            }
            Error::InvalidHeader { header, code, .. } => {
                set(&e, "header", &JsValue::from_str(header));
                set(&e, "code", &JsValue::from_str(code));
            }
            Error::AttemptTimeout { attempt, timeout_ms } => {
                set(&e, "attempt", &num(f64::from(attempt)));
                set(&e, "timeoutMs", &num(timeout_ms));
            }
            Error::CircuitOpen { key, state, retry_at, retry_in_ms } => {
                set(&e, "key", &JsValue::from_str(&key));
                set(&e, "state", &JsValue::from_str(state));
                set(&e, "retryAt", &num(retry_at));
                set(&e, "retryInMs", &num(retry_in_ms));
            }
            Error::Overloaded { limit, in_flight } => {
                set(&e, "limit", &num(limit));
                set(&e, "inFlight", &num(in_flight));
            }
            Error::InvalidArgument { .. } | Error::InvalidType { .. } | Error::Js(_) => {}
        }
        e.into()
    }
}

fn get(value: &JsValue, key: &str) -> JsValue {
    Reflect::get(value, &JsValue::from_str(key)).unwrap_or(JsValue::UNDEFINED)
}

fn get_f64(value: &JsValue, key: &str) -> Option<f64> {
    get(value, key).as_f64()
}

impl Error {
    /// What this error shows for a circuit breaker ([`crate::core::breaker::found`]
    /// flags; the core's `error_outcome` decides): a timeout, a shed call
    /// (`Overloaded`), an inner breaker's refusal (`CircuitOpen`), a caller
    /// that left (an `AbortError`), in the error or its causes (js/breaker.js
    /// `found`, pinned by the conformance rows "breaker outcome: …").
    pub(crate) fn breaker_found(&self) -> u32 {
        use crate::core::breaker::found;
        let mut flags = if self.is_timeout() { found::TIMEOUT } else { 0 };
        let mut e = self;
        // At most MAX_CAUSES errors of the chain, the JavaScript ones included.
        let mut n = 0;
        loop {
            match e {
                Self::Overloaded { .. } => flags |= found::SHED,
                Self::CircuitOpen { .. } => flags |= found::CIRCUIT_OPEN,
                Self::InsufficientBudget { .. } => flags |= found::NOT_STARTED,
                Self::RetryFailed { last: Some(last), .. } if n + 1 < crate::core::error::MAX_CAUSES => {
                    n += 1;
                    e = last;
                    continue;
                }
                Self::Js(value) => flags |= js_breaker_found(value, crate::core::error::MAX_CAUSES - n),
                _ => {}
            }
            return flags;
        }
    }
}

/// [`Error::breaker_found`] on a JavaScript value's chain, looking at `at_most` errors.
fn js_breaker_found(value: &JsValue, at_most: usize) -> u32 {
    use crate::core::breaker::found;
    let mut flags = 0;
    let mut e = value.clone();
    for _ in 0..at_most {
        if !e.is_object() {
            break;
        }
        match get(&e, BRAND).as_string().as_deref() {
            Some("Overloaded") => flags |= found::SHED,
            Some("CircuitOpen") => flags |= found::CIRCUIT_OPEN,
            Some("InsufficientBudget") => flags |= found::NOT_STARTED,
            Some(_) => {}
            None if get(&e, "name").as_string().as_deref() == Some("AbortError") => flags |= found::CALLER_LEFT,
            None => {}
        }
        e = get(&e, "cause");
    }
    flags
}

/// The brands `is_timeout` counts (js/errors.js `TIMEOUTS`).
const TIMEOUTS: [&str; 4] = ["DeadlineExceeded", "StepTimeout", "AttemptTimeout", "StreamStalled"];

/// js/errors.js `isTimeout` on a JavaScript value: a timeout brand or the
/// name `"TimeoutError"` anywhere in the `cause` chain; a cycle ends the walk,
/// a read that throws (a getter, a Proxy trap) reads as `undefined`.
fn js_is_timeout(value: &JsValue) -> bool {
    // At most MAX_CAUSES errors of the chain: that also ends a cycle.
    let mut e = value.clone();
    for _ in 0..crate::core::error::MAX_CAUSES {
        if !e.is_object() {
            break;
        }
        if get(&e, BRAND).as_string().is_some_and(|b| TIMEOUTS.contains(&b.as_str()))
            || get(&e, "name").as_string().as_deref() == Some("TimeoutError")
        {
            return true;
        }
        e = get(&e, "cause");
    }
    false
}

impl From<JsValue> for Error {
    /// Reads a branded error back into its variant (whichever copy of the
    /// package, or which runtime's clone, made it); anything else is
    /// [`Error::Js`].
    fn from(value: JsValue) -> Self {
        if !value.is_object() {
            return Self::Js(value);
        }
        let brand = get(&value, BRAND).as_string();
        let decoded = match brand.as_deref() {
            Some("DeadlineExceeded") => (|| {
                Some(Self::DeadlineExceeded { at: get_f64(&value, "at")?, late_by_ms: get_f64(&value, "lateByMs")? })
            })(),
            Some("InsufficientBudget") => (|| {
                Some(Self::InsufficientBudget {
                    remaining_ms: get_f64(&value, "remainingMs")?,
                    min_ms: get_f64(&value, "minMs")?,
                })
            })(),
            Some("StreamStalled") => (|| {
                Some(Self::StreamStalled {
                    phase: StallPhase::parse(&get(&value, "phase").as_string()?)?,
                    after_ms: get_f64(&value, "afterMs")?,
                    chunks: get_f64(&value, "chunks")?,
                    bytes: get_f64(&value, "bytes")?,
                })
            })(),
            Some("AttemptTimeout") => (|| {
                Some(Self::AttemptTimeout {
                    attempt: get_f64(&value, "attempt")? as u32,
                    timeout_ms: get_f64(&value, "timeoutMs")?,
                })
            })(),
            Some("CircuitOpen") => (|| {
                let state = match get(&value, "state").as_string()?.as_str() {
                    "half-open" => "half-open",
                    _ => "open",
                };
                Some(Self::CircuitOpen {
                    key: get(&value, "key").as_string()?,
                    state,
                    retry_at: get_f64(&value, "retryAt")?,
                    retry_in_ms: get_f64(&value, "retryInMs")?,
                })
            })(),
            Some("Overloaded") => (|| {
                Some(Self::Overloaded { limit: get_f64(&value, "limit")?, in_flight: get_f64(&value, "inFlight")? })
            })(),
            Some("StepTimeout") => (|| {
                Some(Self::StepTimeout { step: get(&value, "step").as_string()?, cap_ms: get_f64(&value, "capMs")? })
            })(),
            _ => None,
        };
        decoded.unwrap_or(Self::Js(value))
    }
}
