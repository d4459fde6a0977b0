//! Circuit breaker: stop sending calls to a dependency that is failing, and
//! find out that it recovered with a few probes instead of the whole traffic.
//!
//! # Why a breaker next to deadlines
//! A dependency that fails or hangs costs every caller its whole timeout
//! before the fallback runs, and the retries of every caller add load to the
//! dependency that is already failing. A breaker that has seen enough
//! failures answers at once, so the caller's time goes to the fallback. It
//! also knows when it will let a probe through ([`Admit::Refused`] carries
//! that instant): a caller whose deadline reaches past it can wait for the
//! probe, and any other fails fast (the retry loop makes that choice).
//!
//! # States, per key
//! One breaker guards many upstreams: each key (an upstream's name) has its
//! own state, window and counters.
//! - **closed**: every call goes through. Its outcome is counted: the breaker
//!   opens after `consecutiveFailures` failures in a row, or when the window
//!   (the last `windowSize` calls, or the calls of the last `windowMs`) holds
//!   at least `minimumCalls` calls and the share of failures reaches
//!   `failureRate`, or the share of slow calls reaches `slowCallRate`. A call
//!   is slow when it took longer than its step's timeout (passed with its
//!   outcome) or than `slowCallMs`.
//! - **open**: every call is refused until `openMs` after opening.
//! - **half-open**: entered by the first call at or after that instant (no
//!   timer: time is an argument). Up to `probes` calls go through at once; a
//!   probe that fails or is slow opens the breaker again, and `probes`
//!   successes close it. A probe whose outcome is not recorded within
//!   `openMs` of the last admission frees its permit, so a caller that
//!   vanished cannot wedge a key half-open.
//!
//! # Invariants (tests below)
//! 1. Closed admits every call. Open admits none before its half-open
//!    instant, and the refusal carries an instant after `now`.
//! 2. Half-open never has more than `probes` probes outstanding.
//! 3. Only outcomes of calls admitted while closed are counted in the window,
//!    and only probes' outcomes move a half-open key; an outcome that arrives
//!    in another state changes nothing.
//! 4. A key that opens or closes starts with an empty window and no
//!    consecutive failures.
//! 5. At most `maxKeys` keys are held; a new key beyond that replaces the
//!    least recently used one.
//! 6. Imported bytes are validated whole before anything changes; bytes
//!    that are refused change nothing. An import only opens keys (a breaker
//!    keeps its own evidence that a dependency is failing): it never closes,
//!    evicts or shortens a key open or half-open here.
//! 7. Nothing here panics, whatever the numbers (NaN times included).

use serde::{Deserialize, Serialize};

use crate::core::deadline::{check_ms, DeadlineError};
use crate::core::error::{whole_code, Described, Message};

/// Buckets of a time window (`windowMs`), as in a retry budget.
pub const TIME_BUCKETS: usize = 10;
/// The largest count window, in calls.
pub const MAX_WINDOW_SIZE: f64 = 100_000.0;
/// The most keys one breaker may hold.
pub const MAX_KEYS: f64 = 1_000_000.0;
/// The most probes half-open may let through at once.
pub const MAX_PROBES: f64 = 1_000_000.0;
/// The longest window or open time: one day.
pub const MAX_BREAKER_MS: f64 = 86_400_000.0;
/// The largest exported state accepted by [`Breaker::import`].
pub const MAX_IMPORT_BYTES: usize = 1 << 24;

const MAGIC: &[u8; 4] = b"EDCB";
const VERSION: u8 = 1;

/// Why a breaker's setting or an import was refused.
#[derive(Debug, Clone, PartialEq)]
pub enum BreakerError {
    /// A count option is not a whole number in its range.
    Count {
        /// The option's name as JavaScript writes it.
        param: &'static str,
        /// The value given.
        value: f64,
        /// The smallest accepted value.
        min: f64,
        /// The largest accepted value.
        max: f64,
    },
    /// A rate option is outside `(0, 1]`.
    Rate {
        /// The option's name as JavaScript writes it.
        param: &'static str,
        /// The value given.
        value: f64,
    },
    /// A duration option is not a valid number of milliseconds.
    Time(DeadlineError),
    /// A duration option is valid but outside `1 ..= MAX_BREAKER_MS`.
    Duration {
        /// The option's name as JavaScript writes it.
        param: &'static str,
        /// The value given.
        value: f64,
    },
    /// Both `windowSize` and `windowMs` were given.
    BothWindows,
    /// The bytes given to [`Breaker::import`] are not an exported state.
    Bytes {
        /// What is wrong with them.
        detail: &'static str,
    },
}

/// The breaker's message templates.
pub mod msg {
    crate::templates! { "breaker";
        /// [`BreakerError::Count`](super::BreakerError::Count).
        COUNT = "'{param}' must be a whole number between {min} and {max}: current value is {value}";
        /// [`BreakerError::Rate`](super::BreakerError::Rate).
        RATE = "'{param}' must be greater than 0 and at most 1 (a share of the calls): current value is {value}";
        /// [`BreakerError::Duration`](super::BreakerError::Duration).
        DURATION = "'{param}' must be between 1 and {max} milliseconds: current value is {value}";
        /// [`BreakerError::BothWindows`](super::BreakerError::BothWindows).
        BOTH_WINDOWS = "give 'windowSize' (the last N calls) or 'windowMs' (the calls of the last N ms), not both";
        /// [`BreakerError::Bytes`](super::BreakerError::Bytes).
        BYTES = "'bytes' is not a circuit breaker's exported state ({detail}); pass what exportState() returned";
        /// The message of a call refused by an open breaker (`CircuitOpen`).
        OPEN = "circuit '{key}' is open: calls fail at once until it lets a probe through in {inMs:ms} ms";
    }
}

crate::described_error!(BreakerError);

impl Described for BreakerError {
    fn code(&self) -> &'static str {
        match self {
            Self::Count { value, min, max, .. } => whole_code(*value, *min, *max),
            Self::Rate { value, .. } if !value.is_finite() => "NOT_FINITE",
            Self::Rate { .. } | Self::Duration { .. } => "OUT_OF_RANGE",
            Self::Time(e) => e.code(),
            Self::BothWindows => "CONFLICT",
            Self::Bytes { .. } => "BAD_STATE",
        }
    }

    /// Names inside [`BreakerOptions`] (the binding prefixes the argument),
    /// or `bytes`.
    fn param(&self) -> Option<String> {
        Some(
            match self {
                Self::Count { param, .. } | Self::Rate { param, .. } | Self::Duration { param, .. } => param,
                Self::Time(e) => return Described::param(e),
                Self::BothWindows => "windowMs",
                Self::Bytes { .. } => "bytes",
            }
            .into(),
        )
    }

    fn kind(&self) -> crate::core::error::Kind {
        match self {
            Self::Time(e) => e.kind(),
            _ => crate::core::error::Kind::Range,
        }
    }

    fn message(&self) -> Message {
        match *self {
            Self::Count { param, value, min, max } => {
                Message::new(msg::COUNT).arg("param", param).arg("min", min).arg("max", max).arg("value", value)
            }
            Self::Rate { param, value } => Message::new(msg::RATE).arg("param", param).arg("value", value),
            Self::Duration { param, value } => {
                Message::new(msg::DURATION).arg("param", param).arg("max", MAX_BREAKER_MS).arg("value", value)
            }
            Self::Time(ref e) => e.message(),
            Self::BothWindows => Message::new(msg::BOTH_WINDOWS),
            Self::Bytes { detail } => Message::new(msg::BYTES).arg("detail", detail),
        }
    }
}

/// The message of a call refused by an open breaker: `key` lets a probe
/// through in `in_ms`.
pub fn open_message(key: &str, in_ms: f64) -> Message {
    Message::new(msg::OPEN).arg("key", key.to_owned()).arg("inMs", in_ms)
}

/// A breaker's settings as the caller writes them, every field optional.
/// The defaults: open after 5 failures in a row, or when half of the last
/// 100 calls failed (once 20 were seen); slow calls open it only when every
/// call in the window was slow; open for 10 s, then 1 probe; 1 000 keys.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub struct BreakerOptions {
    /// Failures in a row that open the breaker, `0 ..= 1 000 000`; 0 turns
    /// the rule off (default 5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "typescript", tsify(optional))]
    pub consecutive_failures: Option<f64>,
    /// The share of failed calls in the window that opens it, `(0, 1]` (default 0.5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "typescript", tsify(optional))]
    pub failure_rate: Option<f64>,
    /// The share of slow calls in the window that opens it, `(0, 1]` (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "typescript", tsify(optional))]
    pub slow_call_rate: Option<f64>,
    /// A call longer than this is slow, when its step gave no timeout of its
    /// own (default: only a step's timeout makes a call slow).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "typescript", tsify(optional))]
    pub slow_call_ms: Option<f64>,
    /// A count window: the last N calls, `1 ..= 100 000` (default 100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "typescript", tsify(optional))]
    pub window_size: Option<f64>,
    /// A time window instead: the calls of the last N ms, `1 ..= 86 400 000`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "typescript", tsify(optional))]
    pub window_ms: Option<f64>,
    /// Calls the window must hold before a rate can open it (default 20).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "typescript", tsify(optional))]
    pub minimum_calls: Option<f64>,
    /// How long it stays open before a probe may go (default 10 000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "typescript", tsify(optional))]
    pub open_ms: Option<f64>,
    /// Probes half-open lets through at once, and the successes that close
    /// it (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "typescript", tsify(optional))]
    pub probes: Option<f64>,
    /// The most keys held; beyond it the least recently used is forgotten
    /// (default 1 000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "typescript", tsify(optional))]
    pub max_keys: Option<f64>,
}

/// A key's state, as hosts name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub enum CircuitState {
    /// Calls go through and are counted.
    Closed,
    /// Calls are refused.
    Open,
    /// A few probes go through.
    HalfOpen,
}

/// Why a key opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub enum OpenReason {
    /// `consecutiveFailures` failures in a row.
    ConsecutiveFailures,
    /// The window's failure share reached `failureRate`.
    FailureRate,
    /// The window's slow share reached `slowCallRate`.
    SlowCallRate,
    /// A half-open probe failed or was slow.
    ProbeFailed,
    /// Another breaker's exported state said so ([`Breaker::import`]).
    Imported,
}

/// A change of a key's state, for the host's `onStateChange`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// Closed or half-open → open.
    Opened(OpenReason),
    /// Open → half-open (the first call after `openMs`).
    HalfOpened,
    /// Half-open → closed (`probes` probes succeeded).
    Closed,
}

impl Change {
    /// The states before and after.
    pub fn states(self) -> (CircuitState, CircuitState) {
        match self {
            Self::Opened(OpenReason::ProbeFailed) => (CircuitState::HalfOpen, CircuitState::Open),
            Self::Opened(_) => (CircuitState::Closed, CircuitState::Open),
            Self::HalfOpened => (CircuitState::Open, CircuitState::HalfOpen),
            Self::Closed => (CircuitState::HalfOpen, CircuitState::Closed),
        }
    }
}

/// How a call admitted by [`Breaker::check`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// It answered.
    Success,
    /// It failed.
    Failure,
    /// It was cut at its timeout: a failure, and slow.
    Timeout,
    /// Not the dependency's outcome: the caller gave up on it (a client that
    /// left), a limiter shed it, or an inner breaker refused it. Nothing is
    /// counted (neither a failure nor a success: a half-open key is not
    /// closed by it) and a probe's permit is freed.
    Cancelled,
}

/// What a host found in the error a call ended with (its `.cause` chain, at
/// most [`MAX_CAUSES`](crate::core::error::MAX_CAUSES) errors, and the
/// caller's signal), as flags for [`error_outcome`].
pub mod found {
    /// A timeout: the error or a cause is one (`isTimeout`).
    pub const TIMEOUT: u32 = 1;
    /// A limiter shed the call (`Overloaded`): the dependency never saw it.
    pub const SHED: u32 = 2;
    /// An inner breaker refused the call (`CircuitOpen`): the dependency
    /// never saw it, and another key's evidence is not this key's.
    pub const CIRCUIT_OPEN: u32 = 4;
    /// The caller stopped waiting, not for time: an `AbortError` in the
    /// chain, or the caller's signal aborted with a reason that is not a
    /// timeout (a client that left).
    pub const CALLER_LEFT: u32 = 8;
    /// The call was refused for time before it reached the dependency
    /// (`InsufficientBudget`: the caller's deadline left less than the
    /// step's minimum). Short deadlines are the callers', not the
    /// dependency's evidence.
    pub const NOT_STARTED: u32 = 16;
}

/// How a call that ended with an error counts, from what the host
/// [`found`] in it. A timeout is a [`Outcome::Timeout`] first (the dependency
/// was too slow for the caller's time, whatever else the chain holds);
/// otherwise a shed call, an inner breaker's refusal, a call refused for time
/// or a caller that left is [`Outcome::Cancelled`] (not the dependency's
/// outcome); anything else
/// is the dependency's [`Outcome::Failure`] (a host's `isFailure` may still
/// call it a success). Unknown flags are ignored.
pub fn error_outcome(flags: u32) -> Outcome {
    if flags & found::TIMEOUT != 0 {
        Outcome::Timeout
    } else if flags & (found::SHED | found::CIRCUIT_OPEN | found::CALLER_LEFT | found::NOT_STARTED) != 0 {
        Outcome::Cancelled
    } else {
        Outcome::Failure
    }
}

/// The answer to [`Breaker::check`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Admit {
    /// Closed: the call goes through and its outcome is counted.
    Closed,
    /// Half-open: the call goes through as a probe; `half_opened` when this
    /// check moved the key from open to half-open.
    Probe {
        /// This check moved the key from open to half-open.
        half_opened: bool,
    },
    /// Refused: no call goes through before `until` (ms, the caller's clock).
    Refused {
        /// The instant a probe may go at the latest.
        until: f64,
    },
}

/// A key's counters, for logs and dashboards ([`Breaker::stats`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub struct CircuitStats {
    /// The state a call made now would meet (open past its instant reads
    /// half-open).
    pub state: CircuitState,
    /// When open or half-open with every probe out: the instant a call may
    /// go at the latest; otherwise `null`.
    pub retry_at: Option<f64>,
    /// Failures in a row while closed.
    pub consecutive_failures: u32,
    /// Calls in the window.
    pub calls: u32,
    /// Failed calls in the window.
    pub failures: u32,
    /// Slow calls in the window.
    pub slow_calls: u32,
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct Settings {
    consecutive: u32,
    failure_rate: f64,
    slow_rate: f64,
    slow_ms: f64,
    window_size: usize,
    window_ms: f64,
    minimum: u32,
    open_ms: f64,
    probes: u32,
    max_keys: usize,
}

fn count(param: &'static str, value: Option<f64>, default: f64, min: f64, max: f64) -> Result<f64, BreakerError> {
    let v = value.unwrap_or(default);
    if !(min..=max).contains(&v) || v.fract() != 0.0 {
        return Err(BreakerError::Count { param, value: v, min, max });
    }
    Ok(v)
}

fn rate(param: &'static str, value: Option<f64>, default: f64) -> Result<f64, BreakerError> {
    let v = value.unwrap_or(default);
    if !(v > 0.0 && v <= 1.0) {
        return Err(BreakerError::Rate { param, value: v });
    }
    Ok(v)
}

fn duration(param: &'static str, value: f64) -> Result<f64, BreakerError> {
    let v = check_ms(param, value).map_err(BreakerError::Time)?;
    if !(1.0..=MAX_BREAKER_MS).contains(&v) {
        return Err(BreakerError::Duration { param, value: v });
    }
    Ok(v)
}

impl Settings {
    fn new(o: &BreakerOptions) -> Result<Self, BreakerError> {
        if o.window_size.is_some() && o.window_ms.is_some() {
            return Err(BreakerError::BothWindows);
        }
        Ok(Self {
            consecutive: count("consecutiveFailures", o.consecutive_failures, 5.0, 0.0, 1e6)? as u32,
            failure_rate: rate("failureRate", o.failure_rate, 0.5)?,
            slow_rate: rate("slowCallRate", o.slow_call_rate, 1.0)?,
            slow_ms: match o.slow_call_ms {
                Some(v) => check_ms("slowCallMs", v).map_err(BreakerError::Time)?,
                None => f64::INFINITY,
            },
            window_size: count("windowSize", o.window_size, 100.0, 1.0, MAX_WINDOW_SIZE)? as usize,
            window_ms: match o.window_ms {
                Some(v) => duration("windowMs", v)?,
                None => 0.0,
            },
            minimum: count("minimumCalls", o.minimum_calls, 20.0, 1.0, 1e9)? as u32,
            open_ms: duration("openMs", o.open_ms.unwrap_or(10_000.0))?,
            probes: count("probes", o.probes, 1.0, 1.0, MAX_PROBES)? as u32,
            max_keys: count("maxKeys", o.max_keys, 1_000.0, 1.0, MAX_KEYS)? as usize,
        })
    }
}

const FAILED: u8 = 1;
const SLOW: u8 = 2;

/// The outcomes counted while closed.
#[derive(Debug, Clone, PartialEq)]
enum Window {
    /// The last `ring.len()` calls' flags; `len` of them are filled.
    Count { ring: Vec<u8>, next: usize, len: usize, failures: u32, slow: u32 },
    /// Buckets of `bucket_ms`; `head` is the absolute index of the newest.
    Time {
        bucket_ms: f64,
        calls: [u32; TIME_BUCKETS],
        failures: [u32; TIME_BUCKETS],
        slow: [u32; TIME_BUCKETS],
        head: Option<u64>,
    },
}

impl Window {
    fn new(s: &Settings) -> Self {
        if s.window_ms > 0.0 {
            Self::Time {
                bucket_ms: s.window_ms / TIME_BUCKETS as f64,
                calls: [0; TIME_BUCKETS],
                failures: [0; TIME_BUCKETS],
                slow: [0; TIME_BUCKETS],
                head: None,
            }
        } else {
            // The ring grows as calls come (a key that sees 3 calls holds 3 bytes).
            Self::Count { ring: Vec::new(), next: 0, len: s.window_size, failures: 0, slow: 0 }
        }
    }

    fn clear(&mut self) {
        match self {
            Self::Count { ring, next, failures, slow, .. } => {
                ring.clear();
                *next = 0;
                *failures = 0;
                *slow = 0;
            }
            Self::Time { calls, failures, slow, head, .. } => {
                *calls = [0; TIME_BUCKETS];
                *failures = [0; TIME_BUCKETS];
                *slow = [0; TIME_BUCKETS];
                *head = None;
            }
        }
    }

    /// Moves a time window to `now`, clearing the buckets it left; the slot of `now`.
    fn advance(bucket_ms: f64, head: &mut Option<u64>, cols: [&mut [u32; TIME_BUCKETS]; 3], now: f64) -> usize {
        // `as` saturates: NaN → 0, huge → u64::MAX; neither panics.
        let at = (now / bucket_ms) as u64;
        let n = TIME_BUCKETS as u64;
        match *head {
            Some(h) if at <= h => {}
            Some(h) => {
                let mut cols = cols;
                for k in 1..=(at - h).min(n) {
                    let i = ((h + k) % n) as usize;
                    for col in cols.iter_mut() {
                        col[i] = 0;
                    }
                }
                *head = Some(at);
            }
            None => *head = Some(at),
        }
        (head.unwrap_or(0) % n) as usize
    }

    fn push(&mut self, now: f64, flags: u8) {
        match self {
            Self::Count { ring, next, len, failures, slow } => {
                if ring.len() < *len {
                    ring.push(flags);
                } else if let Some(old) = ring.get_mut(*next) {
                    *failures -= u32::from(*old & FAILED);
                    *slow -= u32::from(*old & SLOW != 0);
                    *old = flags;
                    *next = (*next + 1) % *len;
                }
                *failures += u32::from(flags & FAILED);
                *slow += u32::from(flags & SLOW != 0);
            }
            Self::Time { bucket_ms, calls, failures, slow, head } => {
                let i = Self::advance(*bucket_ms, head, [calls, failures, slow], now);
                calls[i] = calls[i].saturating_add(1);
                failures[i] = failures[i].saturating_add(u32::from(flags & FAILED));
                slow[i] = slow[i].saturating_add(u32::from(flags & SLOW != 0));
            }
        }
    }

    /// `(calls, failures, slow)` in the window ending at `now`.
    fn sums(&mut self, now: f64) -> (u32, u32, u32) {
        match self {
            Self::Count { ring, failures, slow, .. } => (ring.len() as u32, *failures, *slow),
            Self::Time { bucket_ms, calls, failures, slow, head } => {
                if head.is_some() {
                    Self::advance(*bucket_ms, head, [calls, failures, slow], now);
                }
                let sum = |c: &[u32; TIME_BUCKETS]| c.iter().fold(0u32, |a, &b| a.saturating_add(b));
                (sum(calls), sum(failures), sum(slow))
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum State {
    Closed,
    Open {
        until: f64,
    },
    /// `out` probes admitted and not recorded, `ok` succeeded, the last admitted at `since`.
    HalfOpen {
        out: u32,
        ok: u32,
        since: f64,
    },
}

#[derive(Debug, Clone, PartialEq)]
struct Key {
    name: String,
    state: State,
    consecutive: u32,
    window: Window,
    used: f64,
}

/// A keyed circuit breaker (see the module docs). Keys are addressed by a
/// slot number ([`Breaker::key`]) so that a host can cache the lookup and
/// cross the Wasm boundary with numbers only.
#[derive(Debug, Clone, PartialEq)]
pub struct Breaker {
    s: Settings,
    /// By slot. Found by name with a linear scan: hosts cache a key's slot,
    /// so the scan runs once per key (a map measured larger in the `.wasm`).
    keys: Vec<Key>,
}

/// Where [`Breaker::key`] put a key.
#[derive(Debug, Clone, PartialEq)]
pub struct Slot {
    /// The key's slot number.
    pub index: usize,
    /// The key this one replaced in that slot (the least recently used), if any.
    pub evicted: Option<String>,
}

impl Breaker {
    /// A breaker from the caller's options (errors name the option).
    pub fn new(options: &BreakerOptions) -> Result<Self, BreakerError> {
        Ok(Self { s: Settings::new(options)?, keys: Vec::new() })
    }

    /// How long an open key stays open (`openMs`).
    pub fn open_ms(&self) -> f64 {
        self.s.open_ms
    }

    /// The slot of key `name`, made (closed, empty) if it is new; a new key
    /// beyond `maxKeys` replaces the least recently used one.
    pub fn key(&mut self, name: &str, now_ms: f64) -> Slot {
        if let Some(index) = self.keys.iter().position(|k| k.name == name) {
            return Slot { index, evicted: None };
        }
        let fresh = Key {
            name: name.to_owned(),
            state: State::Closed,
            consecutive: 0,
            window: Window::new(&self.s),
            used: now_ms,
        };
        if self.keys.len() < self.s.max_keys {
            self.keys.push(fresh);
            return Slot { index: self.keys.len() - 1, evicted: None };
        }
        // `total_cmp`: a NaN `used` never panics; it sorts above every number.
        let index = self.keys.iter().enumerate().min_by(|a, b| a.1.used.total_cmp(&b.1.used)).map_or(0, |(i, _)| i);
        let old = self.keys.get_mut(index).map(|k| std::mem::replace(k, fresh));
        Slot { index, evicted: old.map(|k| k.name) }
    }

    /// The keys' names by slot.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.keys.iter().map(|k| k.name.as_str())
    }

    /// May a call on `slot` go now? A slot never handed out is closed.
    pub fn check(&mut self, slot: usize, now_ms: f64) -> Admit {
        let (open_ms, probes) = (self.s.open_ms, self.s.probes);
        let Some(key) = self.keys.get_mut(slot) else { return Admit::Closed };
        key.used = now_ms;
        match key.state {
            State::Closed => Admit::Closed,
            State::Open { until } if now_ms >= until => {
                key.state = State::HalfOpen { out: 1, ok: 0, since: now_ms };
                Admit::Probe { half_opened: true }
            }
            State::Open { until } => Admit::Refused { until },
            State::HalfOpen { out, ok, since } => {
                // A probe unrecorded for `openMs` frees its permit (a vanished caller).
                let out = if now_ms - since >= open_ms { 0 } else { out };
                if out + ok < probes {
                    key.state = State::HalfOpen { out: out + 1, ok, since: now_ms };
                    Admit::Probe { half_opened: false }
                } else {
                    Admit::Refused { until: since + open_ms }
                }
            }
        }
    }

    /// Whether `slot` is half-open now (a refusal there means every probe is out).
    pub fn half_open(&self, slot: usize) -> bool {
        matches!(self.keys.get(slot), Some(Key { state: State::HalfOpen { .. }, .. }))
    }

    /// Records how a call [`check`](Self::check) admitted ended: `probe`
    /// when it was admitted as one, its [`Outcome`], and how long it took. A
    /// success or failure is slow when `duration_ms` is over `slow_ms` (the
    /// step's timeout) or, when that is NaN or ∞, over `slowCallMs`; a timeout
    /// is a slow failure; a cancelled call (the caller left) counts nothing and
    /// frees its probe permit. Answers the change it caused, if any.
    pub fn record(
        &mut self,
        slot: usize,
        now_ms: f64,
        probe: bool,
        outcome: Outcome,
        duration_ms: f64,
        slow_ms: f64,
    ) -> Option<Change> {
        let s = self.s;
        let key = self.keys.get_mut(slot)?;
        // A host that knows a key is closed may skip `check` (nothing but a
        // record or an import closes or opens a key), so recency is kept here too.
        key.used = now_ms;
        let limit = if slow_ms.is_finite() { slow_ms } else { s.slow_ms };
        let (failed, slow) = match outcome {
            Outcome::Success => (false, duration_ms > limit),
            Outcome::Failure => (true, duration_ms > limit),
            Outcome::Timeout => (true, true),
            Outcome::Cancelled => {
                if let (State::HalfOpen { out, ok, since }, true) = (key.state, probe) {
                    key.state = State::HalfOpen { out: out.saturating_sub(1), ok, since };
                }
                return None;
            }
        };
        let change = match (key.state, probe) {
            (State::Closed, false) => {
                key.consecutive = if failed { key.consecutive.saturating_add(1) } else { 0 };
                key.window.push(now_ms, if failed { FAILED } else { 0 } | if slow { SLOW } else { 0 });
                let (calls, failures, slows) = key.window.sums(now_ms);
                let share = |n: u32| f64::from(n) / f64::from(calls.max(1));
                if s.consecutive > 0 && key.consecutive >= s.consecutive {
                    Some(OpenReason::ConsecutiveFailures)
                } else if calls >= s.minimum && share(failures) >= s.failure_rate {
                    Some(OpenReason::FailureRate)
                } else if calls >= s.minimum && share(slows) >= s.slow_rate {
                    Some(OpenReason::SlowCallRate)
                } else {
                    None
                }
                .map(Change::Opened)
            }
            (State::HalfOpen { out, ok, since }, true) => {
                if failed || slow {
                    Some(Change::Opened(OpenReason::ProbeFailed))
                } else if ok + 1 >= s.probes {
                    Some(Change::Closed)
                } else {
                    key.state = State::HalfOpen { out: out.saturating_sub(1), ok: ok + 1, since };
                    None
                }
            }
            _ => None,
        };
        match change {
            Some(Change::Opened(_)) => Self::reset(key, State::Open { until: now_ms + s.open_ms }),
            Some(Change::Closed) => Self::reset(key, State::Closed),
            _ => {}
        }
        change
    }

    fn reset(key: &mut Key, state: State) {
        key.state = state;
        key.consecutive = 0;
        key.window.clear();
    }

    /// The counters of `slot` at `now_ms` (a slot never handed out reads closed and empty).
    pub fn stats(&mut self, slot: usize, now_ms: f64) -> CircuitStats {
        let open_ms = self.s.open_ms;
        let probes = self.s.probes;
        let Some(key) = self.keys.get_mut(slot) else {
            return CircuitStats {
                state: CircuitState::Closed,
                retry_at: None,
                consecutive_failures: 0,
                calls: 0,
                failures: 0,
                slow_calls: 0,
            };
        };
        let (state, retry_at) = match key.state {
            State::Closed => (CircuitState::Closed, None),
            State::Open { until } if now_ms >= until => (CircuitState::HalfOpen, None),
            State::Open { until } => (CircuitState::Open, Some(until)),
            State::HalfOpen { out, ok, since } => {
                let busy = now_ms - since < open_ms && out + ok >= probes;
                (CircuitState::HalfOpen, busy.then_some(since + open_ms))
            }
        };
        let (calls, failures, slow_calls) = key.window.sums(now_ms);
        CircuitStats { state, retry_at, consecutive_failures: key.consecutive, calls, failures, slow_calls }
    }

    /// The keys' states as bytes, for another breaker's [`import`](Self::import)
    /// (through storage): for each key its name, its state, its failures in a
    /// row and, when open, the ms left until a probe. `wall_ms` is the
    /// wall clock now (ms since the epoch), so that an import later can take
    /// off the time the bytes spent in storage.
    pub fn export(&self, now_ms: f64, wall_ms: f64) -> Vec<u8> {
        let mut out = Vec::with_capacity(17 + self.keys.len() * 24);
        out.extend_from_slice(MAGIC);
        out.push(VERSION);
        out.extend_from_slice(&wall_ms.to_le_bytes());
        out.extend_from_slice(&(self.keys.len() as u32).to_le_bytes());
        for key in &self.keys {
            let name = key.name.as_bytes();
            let name = name.get(..usize::from(u16::MAX)).unwrap_or(name);
            out.extend_from_slice(&(name.len() as u16).to_le_bytes());
            out.extend_from_slice(name);
            let (state, left) = match key.state {
                State::Closed => (0u8, 0.0),
                State::Open { until } => (1, (until - now_ms).max(0.0)),
                State::HalfOpen { .. } => (2, 0.0),
            };
            out.push(state);
            out.extend_from_slice(&key.consecutive.to_le_bytes());
            out.extend_from_slice(&left.to_le_bytes());
        }
        out
    }

    /// Takes in another breaker's [`export`](Self::export): a key open there
    /// with time left (less the time since it was exported, by the wall
    /// clocks, and at most this breaker's `openMs`) opens here until then, unless it is open here already. Keys
    /// closed or half-open there change nothing here: this breaker keeps its
    /// own evidence. A key new here takes a free slot or, when `maxKeys` are
    /// held, the slot of the least recently used key that is closed here;
    /// when none is left it is not held. An import never closes, evicts or
    /// shortens a key open or half-open here. Answers the slots that opened,
    /// each once. The bytes are checked whole first (at most
    /// [`MAX_IMPORT_BYTES`]); refused bytes change nothing. The work is
    /// linear in the keys held and imported, up to a sort of each.
    pub fn import(&mut self, bytes: &[u8], now_ms: f64, wall_ms: f64) -> Result<Vec<usize>, BreakerError> {
        let (exported_at, mut entries) = parse(bytes)?;
        let aged = if (wall_ms - exported_at).is_finite() { (wall_ms - exported_at).max(0.0) } else { 0.0 };
        entries.retain_mut(|(_, left)| {
            *left -= aged;
            *left > 0.0
        });
        // By name hash (a radix sort, linear): one entry per name (the longest
        // time left, so a name counted twice opens one key), and this breaker's
        // slots, to find each imported name without a scan.
        let mut order: Vec<(u64, usize)> = entries.iter().enumerate().map(|(i, (n, _))| (name_hash(n), i)).collect();
        radix_sort(&mut order);
        let entry = |i: usize| entries.get(i).map_or(("", 0.0), |(n, l)| (n.as_str(), *l));
        let mut keep: Vec<usize> = Vec::with_capacity(order.len());
        let mut run_start = 0;
        let mut run_hash = None;
        for &(h, i) in &order {
            if run_hash != Some(h) {
                (run_start, run_hash) = (keep.len(), Some(h));
            }
            // Names of one hash are compared with the distinct names kept for it so far.
            let (name, left) = entry(i);
            match keep.get_mut(run_start..).and_then(|kept| kept.iter_mut().find(|k| entry(**k).0 == name)) {
                Some(k) if entry(*k).1 < left => *k = i,
                Some(_) => {}
                None => keep.push(i),
            }
        }
        let mut by_hash: Vec<(u64, usize)> =
            self.keys.iter().enumerate().map(|(i, k)| (name_hash(&k.name), i)).collect();
        radix_sort(&mut by_hash);
        let mut opened = Vec::new();
        let mut fresh = Vec::new();
        let mut entries: Vec<Option<(String, f64)>> = entries.into_iter().map(Some).collect();
        for i in keep {
            let Some((name, left)) = entries.get_mut(i).and_then(Option::take) else { continue };
            let h = name_hash(&name);
            let from = by_hash.partition_point(|&(g, _)| g < h);
            let found = by_hash
                .iter()
                .skip(from)
                .take_while(|&&(g, _)| g == h)
                .map(|&(_, s)| s)
                .find(|&s| self.name_at(s) == name);
            let Some(slot) = found else {
                fresh.push((name, left));
                continue;
            };
            let Some(key) = self.keys.get_mut(slot) else { continue };
            if matches!(key.state, State::Closed) {
                key.used = now_ms;
                Self::reset(key, State::Open { until: now_ms + left.min(self.s.open_ms) });
                opened.push(slot);
            }
        }
        // Names new here: free slots first, then closed keys, least recently used first.
        let mut closed: Vec<(u64, usize)> =
            (0..self.keys.len()).filter(|&i| self.closed_at(i)).map(|i| (order_bits(self.used_at(i)), i)).collect();
        radix_sort(&mut closed);
        let mut closed = closed.into_iter().map(|(_, i)| i);
        for (name, left) in fresh {
            let key = Key {
                name,
                state: State::Open { until: now_ms + left.min(self.s.open_ms) },
                consecutive: 0,
                window: Window::new(&self.s),
                used: now_ms,
            };
            if self.keys.len() < self.s.max_keys {
                self.keys.push(key);
                opened.push(self.keys.len() - 1);
            } else if let Some(slot) = closed.next() {
                if let Some(old) = self.keys.get_mut(slot) {
                    *old = key;
                    opened.push(slot);
                }
            } else {
                break;
            }
        }
        Ok(opened)
    }

    fn name_at(&self, slot: usize) -> &str {
        self.keys.get(slot).map_or("", |k| k.name.as_str())
    }

    fn closed_at(&self, slot: usize) -> bool {
        matches!(self.keys.get(slot), Some(Key { state: State::Closed, .. }))
    }

    fn used_at(&self, slot: usize) -> f64 {
        self.keys.get(slot).map_or(f64::NAN, |k| k.used)
    }
}

/// A key name's FNV-1a hash, to sort and find names by.
fn name_hash(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}

/// An `f64`'s bits, ordered as [`f64::total_cmp`] orders the numbers.
fn order_bits(v: f64) -> u64 {
    let b = v.to_bits();
    if b >> 63 == 1 {
        !b
    } else {
        b | 1 << 63
    }
}

/// Sorts pairs by their `u64`, stably: an LSD radix sort, one byte per pass,
/// skipping bytes every pair shares. Linear, and a few hundred bytes of Wasm
/// where std's sorts add kilobytes for each use.
fn radix_sort(v: &mut Vec<(u64, usize)>) {
    let n = v.len();
    let mut scratch = vec![(0u64, 0usize); n];
    for d in 0..8 {
        let byte = |x: u64| ((x >> (8 * d)) & 0xFF) as usize;
        let mut counts = [0usize; 256];
        for &(x, _) in v.iter() {
            if let Some(c) = counts.get_mut(byte(x)) {
                *c += 1;
            }
        }
        if counts.contains(&n) {
            continue;
        }
        let mut at = 0;
        for k in counts.iter_mut() {
            (*k, at) = (at, at + *k);
        }
        for &pair in v.iter() {
            if let Some(c) = counts.get_mut(byte(pair.0)) {
                if let Some(slot) = scratch.get_mut(*c) {
                    *slot = pair;
                }
                *c += 1;
            }
        }
        core::mem::swap(v, &mut scratch);
    }
}

type Parsed = (f64, Vec<(String, f64)>);

/// Reads exported bytes: the wall time and the open keys with their ms left.
fn parse(bytes: &[u8]) -> Result<Parsed, BreakerError> {
    let bad = |detail| BreakerError::Bytes { detail };
    if bytes.len() > MAX_IMPORT_BYTES {
        return Err(bad("larger than 16 MiB"));
    }
    let mut r = Reader(bytes);
    if r.take(4)? != MAGIC {
        return Err(bad("it does not start with the breaker's marker"));
    }
    if r.take(1)? != [VERSION] {
        return Err(bad("another version of the format"));
    }
    let wall = f64::from_le_bytes(r.array()?);
    if !wall.is_finite() {
        return Err(bad("its time is not a finite number"));
    }
    let n = u32::from_le_bytes(r.array()?);
    // Each entry takes at least 15 bytes: a count beyond what is left is a lie.
    if n as usize > r.0.len() / 15 {
        return Err(bad("it counts more keys than it holds"));
    }
    let mut open = Vec::new();
    for _ in 0..n {
        let len = u16::from_le_bytes(r.array()?);
        let name = std::str::from_utf8(r.take(usize::from(len))?).map_err(|_| bad("a key is not UTF-8"))?;
        let state = r.take(1)?.first().copied().unwrap_or(u8::MAX);
        let _consecutive = u32::from_le_bytes(r.array()?);
        let left = f64::from_le_bytes(r.array()?);
        if state > 2 {
            return Err(bad("a key's state is unknown"));
        }
        if !(0.0..=MAX_BREAKER_MS).contains(&left) {
            return Err(bad("a key's time left is out of range"));
        }
        if state == 1 && left > 0.0 {
            open.push((name.to_owned(), left));
        }
    }
    if !r.0.is_empty() {
        return Err(bad("bytes follow the last key"));
    }
    Ok((wall, open))
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], BreakerError> {
        let Some((head, rest)) = self.0.split_at_checked(n) else {
            return Err(BreakerError::Bytes { detail: "it ends too early" });
        };
        self.0 = rest;
        Ok(head)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], BreakerError> {
        let mut a = [0; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests;
