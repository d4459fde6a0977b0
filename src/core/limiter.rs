//! Adaptive concurrency: a limit on calls in flight that follows the
//! dependency's measured round-trip times.
//!
//! # Why adapt
//! A fixed limit is right for one latency only. Little's law says how many
//! calls a dependency holds at a given throughput and latency (`little`),
//! but both move: a database that slows down tenfold holds ten times as many
//! calls at the same rate, each of them waiting in its queue. A limit sized
//! for the good days then admits a queue on the bad ones; one sized for the
//! bad days wastes capacity on the good ones. An adaptive limit is measured
//! instead of sized: it grows while round-trip times stay low and shrinks
//! when they rise, so the calls in flight settle near the dependency's
//! throughput × the latency you accept.
//!
//! # The algorithms
//! Both follow Netflix's concurrency-limits, with time passed in:
//! - [`Algorithm::Aimd`] (`AIMDLimit`): additive increase, multiplicative
//!   decrease. A window whose average round trip exceeds `timeoutMs`, or in
//!   which a call was dropped, multiplies the limit by `backoffRatio`;
//!   otherwise the limit grows by one when at least half of it was in use.
//!   The latency it settles at is `timeoutMs`.
//! - [`Algorithm::Gradient2`] (`Gradient2Limit`): each window, the limit is
//!   multiplied by the gradient `tolerance × baseline / rtt` (clamped to
//!   `0.5 ..= 1`), `queueSize` is added, and the result is smoothed
//!   (`smoothing`). Netflix takes the baseline from a long average of
//!   round trips, which, under steady queueing, climbs with the queue it
//!   should detect; here the baseline is measured as Envoy's adaptive
//!   concurrency filter measures its minRTT: every `probeIntervalMs` the
//!   limit is pinned to `minLimit` until `probeSamples` calls admitted in
//!   that state have returned, and their average round trip is the
//!   baseline. The latency it settles at is about `tolerance × baseline`.
//!
//! Samples are grouped in windows as Netflix's `WindowedLimit` groups them:
//! a window closes at the first sample `windowMs` after it opened that finds
//! at least `windowSize` samples in it, and the algorithm sees the window's
//! average round trip, its highest number of calls in flight and whether a
//! call was dropped. A window, not a sample, is the unit of change: a limit
//! that backed off on every late sample would back off once for each call
//! of the queue that made them late.
//!
//! A fixed limit ([`Algorithm::Fixed`]) is the same machine without the
//! adaptation: it still measures round trips, for the queue's wait estimate.
//!
//! # Waiting for a slot
//! The host sheds (`Overloaded`) when the limit is reached, unless the
//! caller accepts a wait and fewer than `maxQueue` callers are waiting. The
//! wait for queue position `p` is estimated by Little's law: slots free up
//! at `limit / rtt` per ms, so position `p` waits about `p × rtt / limit`
//! ([`Limiter::wait_ms`], with the last window's average round trip). A
//! caller whose remaining budget is below that is shed at once. A caller
//! whose budget ran out while it waited is shed when its turn comes
//! ([`may_start`]): its function is never called, and the slot goes to the
//! next in line. No timer is armed for that; a signal ends a wait earlier.
//!
//! # Invariants (tested below)
//! 1. `min_limit <= limit() <= max_limit` after construction and after any
//!    sequence of samples and times, whatever their values (NaN and
//!    negative round trips are ignored); a fixed limit never changes.
//! 2. Between two window closes the limit does not change; a gradient
//!    probe pins it to `min_limit` and restores the estimate after.
//! 3. `wait_ms` is finite, non-negative, and grows with the position.
//! 4. Bad options are errors naming the option (`options.minLimit`…),
//!    never a panic.
//! 5. Deterministic: the same options, samples and times give the same
//!    limits on every platform.

use crate::core::deadline::MAX_MS;
use crate::core::error::{whole_code, Described, Message};
use crate::core::little::{check_slots, LittleError, MAX_SLOTS};

/// The algorithm that moves the limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    /// A fixed number of slots.
    Fixed,
    /// Additive increase, multiplicative decrease on late or dropped windows.
    Aimd,
    /// The gradient of round trips against a probed baseline.
    Gradient2,
}

impl Algorithm {
    /// The name `limit` takes in the options (`"fixed"` for a number).
    pub fn name(self) -> &'static str {
        match self {
            Self::Fixed => "fixed",
            Self::Aimd => "aimd",
            Self::Gradient2 => "gradient2",
        }
    }
}

/// `limit` as the options give it: a number of slots, or an algorithm's name.
#[derive(Debug, Clone, PartialEq)]
pub enum Limit {
    /// A fixed number of slots.
    Slots(f64),
    /// `"aimd"` or `"gradient2"`.
    Named(String),
}

impl<'de> serde::Deserialize<'de> for Limit {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Limit;
            fn expecting(&self, f: &mut core::fmt::Formatter) -> core::fmt::Result {
                f.write_str("a number of slots, \"aimd\" or \"gradient2\"")
            }
            fn visit_f64<E>(self, v: f64) -> Result<Limit, E> {
                Ok(Limit::Slots(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Limit, E> {
                Ok(Limit::Slots(v as f64))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Limit, E> {
                Ok(Limit::Slots(v as f64))
            }
            fn visit_str<E>(self, v: &str) -> Result<Limit, E> {
                Ok(Limit::Named(v.into()))
            }
            fn visit_string<E>(self, v: String) -> Result<Limit, E> {
                Ok(Limit::Named(v))
            }
        }
        d.deserialize_any(V)
    }
}

/// A concurrency limiter's options, as JavaScript passes them. Every field
/// but `limit` is optional; defaults are Netflix concurrency-limits' (and
/// Envoy's for the probe). Options of another algorithm are ignored.
#[derive(Debug, Clone, PartialEq, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub struct LimiterOptions {
    /// A whole number of slots (fixed), or `"aimd"` or `"gradient2"`.
    #[cfg_attr(feature = "typescript", tsify(type = "number | \"aimd\" | \"gradient2\""))]
    pub limit: Option<Limit>,
    /// Adaptive: the limit to start from (default: aimd 20, gradient2 100).
    #[cfg_attr(feature = "typescript", tsify(optional))]
    pub initial_limit: Option<f64>,
    /// Adaptive: the lowest limit (default: aimd 20, gradient2 4); also the gradient's probe concurrency.
    #[cfg_attr(feature = "typescript", tsify(optional))]
    pub min_limit: Option<f64>,
    /// Adaptive: the highest limit (default 200).
    #[cfg_attr(feature = "typescript", tsify(optional))]
    pub max_limit: Option<f64>,
    /// AIMD: the factor a late or dropped window multiplies the limit by, `0.5 ≤ r < 1` (default 0.9).
    #[cfg_attr(feature = "typescript", tsify(optional))]
    pub backoff_ratio: Option<f64>,
    /// AIMD: the average round trip (ms) above which a window counts as late (default 5000).
    #[cfg_attr(feature = "typescript", tsify(optional))]
    pub timeout_ms: Option<f64>,
    /// Gradient2: how many times the baseline round trip is still no queue, `1 ..= 100` (default 1.5).
    #[cfg_attr(feature = "typescript", tsify(optional))]
    pub tolerance: Option<f64>,
    /// Gradient2: the weight of each window's new limit, `0 < s ≤ 1` (default 0.2).
    #[cfg_attr(feature = "typescript", tsify(optional))]
    pub smoothing: Option<f64>,
    /// Gradient2: slots added each window, the room to grow (default 4).
    #[cfg_attr(feature = "typescript", tsify(optional))]
    pub queue_size: Option<f64>,
    /// Gradient2: ms between baseline probes (default 60000).
    #[cfg_attr(feature = "typescript", tsify(optional))]
    pub probe_interval_ms: Option<f64>,
    /// Gradient2: round trips a probe averages (default 50).
    #[cfg_attr(feature = "typescript", tsify(optional))]
    pub probe_samples: Option<f64>,
    /// Adaptive: the shortest window, ms (default: aimd 1000, gradient2 100).
    #[cfg_attr(feature = "typescript", tsify(optional))]
    pub window_ms: Option<f64>,
    /// Adaptive: the fewest samples a window needs to close (default 10).
    #[cfg_attr(feature = "typescript", tsify(optional))]
    pub window_size: Option<f64>,
    /// Callers that may wait for a slot when the limit is reached (default 0: shed at once).
    #[cfg_attr(feature = "typescript", tsify(optional))]
    pub max_queue: Option<f64>,
}

/// The defaults, by option name (`GRADIENT2_…`: gradient2's own, where
/// it differs from AIMD's).
pub mod defaults {
    /// `initialLimit` (AIMD).
    pub const INITIAL_LIMIT: f64 = 20.0;
    /// `minLimit` (AIMD).
    pub const MIN_LIMIT: f64 = 20.0;
    /// Gradient2's `initialLimit`: high, so that a healthy dependency is
    /// served unthrottled from the end of the first baseline probe; the
    /// windows after it bring the limit down if round trips say so
    /// (BENCHMARKS.md, "Limiter under load").
    pub const GRADIENT2_INITIAL_LIMIT: f64 = 100.0;
    /// Gradient2's `minLimit` (its probe concurrency too): low, so that a
    /// dependency that slows down tenfold holds few calls, as Envoy's
    /// `min_concurrency`.
    pub const GRADIENT2_MIN_LIMIT: f64 = 4.0;
    /// Gradient2's `windowMs`: Envoy's concurrency update interval, so the
    /// limit follows round trips within seconds (growth and backoff alike).
    pub const GRADIENT2_WINDOW_MS: f64 = 100.0;
    /// `maxLimit`.
    pub const MAX_LIMIT: f64 = 200.0;
    /// `backoffRatio`.
    pub const BACKOFF_RATIO: f64 = 0.9;
    /// `timeoutMs`.
    pub const TIMEOUT_MS: f64 = 5_000.0;
    /// `tolerance`.
    pub const TOLERANCE: f64 = 1.5;
    /// `smoothing`.
    pub const SMOOTHING: f64 = 0.2;
    /// `queueSize`.
    pub const QUEUE_SIZE: f64 = 4.0;
    /// `probeIntervalMs`.
    pub const PROBE_INTERVAL_MS: f64 = 60_000.0;
    /// `probeSamples`.
    pub const PROBE_SAMPLES: f64 = 50.0;
    /// `windowMs` (AIMD).
    pub const WINDOW_MS: f64 = 1_000.0;
    /// `windowSize`.
    pub const WINDOW_SIZE: f64 = 10.0;
    /// `maxQueue`.
    pub const MAX_QUEUE: f64 = 0.0;
}

/// The most samples a window or a probe may ask for.
pub const MAX_SAMPLES: f64 = 1e6;
/// The largest `tolerance`.
pub const MAX_TOLERANCE: f64 = 100.0;

/// Why a limiter's options were refused.
#[derive(Debug, Clone, PartialEq)]
pub enum LimiterError {
    /// `limit` is a number but not a valid count of slots.
    Slots(LittleError),
    /// `limit` is missing or a name that is no algorithm.
    Algorithm {
        /// The name given (empty when missing).
        value: String,
    },
    /// A whole-number option out of its range.
    Whole {
        /// The option's JS name.
        param: &'static str,
        /// The value given.
        value: f64,
        /// The lowest accepted value.
        min: f64,
        /// The highest accepted value.
        max: f64,
    },
    /// A number option out of its range.
    Range {
        /// The option's JS name.
        param: &'static str,
        /// The value given.
        value: f64,
        /// The range, as words (`"at least 0.5 and below 1"`).
        range: &'static str,
    },
    /// `minLimit ≤ initialLimit ≤ maxLimit` does not hold.
    Order {
        /// The option at fault (`initialLimit` or `minLimit`).
        param: &'static str,
        /// The value given.
        value: f64,
        /// `minLimit`.
        min: f64,
        /// `maxLimit`.
        max: f64,
    },
}

/// The limiter's message templates.
pub mod msg {
    crate::templates! { "limiter";
        /// [`LimiterError::Algorithm`](super::LimiterError::Algorithm).
        ALGORITHM = "'limit' must be a whole number of slots, \"aimd\" or \"gradient2\": current value is '{value}'";
        /// [`LimiterError::Whole`](super::LimiterError::Whole).
        WHOLE = "'{param}' must be a whole number between {min} and {max}: current value is {value}";
        /// [`LimiterError::Range`](super::LimiterError::Range).
        RANGE = "'{param}' must be {range}: current value is {value}";
        /// [`LimiterError::Order`](super::LimiterError::Order).
        ORDER = "'{param}' must be between minLimit ({min}) and maxLimit ({max}): current value is {value}";
    }
}

crate::described_error!(LimiterError);

impl Described for LimiterError {
    fn code(&self) -> &'static str {
        match self {
            Self::Slots(e) => e.code(),
            Self::Algorithm { .. } => "UNKNOWN_VALUE",
            Self::Whole { value, min, max, .. } => whole_code(*value, *min, *max),
            Self::Range { value, .. } if !value.is_finite() => "NOT_FINITE",
            Self::Range { .. } | Self::Order { .. } => "OUT_OF_RANGE",
        }
    }

    fn param(&self) -> Option<String> {
        match self {
            Self::Slots(e) => e.param(),
            Self::Algorithm { .. } => Some("options.limit".into()),
            Self::Whole { param, .. } | Self::Range { param, .. } | Self::Order { param, .. } => {
                Some(format!("options.{param}"))
            }
        }
    }

    fn message(&self) -> Message {
        match self {
            Self::Slots(e) => e.message(),
            Self::Algorithm { value } => Message::new(msg::ALGORITHM).arg("value", value.as_str()),
            &Self::Whole { param, value, min, max } => {
                Message::new(msg::WHOLE).arg("param", param).arg("min", min).arg("max", max).arg("value", value)
            }
            &Self::Range { param, value, range } => {
                Message::new(msg::RANGE).arg("param", param).arg("range", range).arg("value", value)
            }
            &Self::Order { param, value, min, max } => {
                Message::new(msg::ORDER).arg("param", param).arg("min", min).arg("max", max).arg("value", value)
            }
        }
    }
}

/// Validated options ([`Config::new`]): every field set.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Config {
    /// The algorithm.
    pub algorithm: Algorithm,
    /// The first limit (the slots, when fixed).
    pub initial_limit: f64,
    /// The lowest limit (the slots, when fixed).
    pub min_limit: f64,
    /// The highest limit (the slots, when fixed).
    pub max_limit: f64,
    /// AIMD's multiplicative decrease.
    pub backoff_ratio: f64,
    /// AIMD's latency threshold, ms.
    pub timeout_ms: f64,
    /// Gradient2's tolerance.
    pub tolerance: f64,
    /// Gradient2's smoothing.
    pub smoothing: f64,
    /// Gradient2's growth per window.
    pub queue_size: f64,
    /// Gradient2's ms between probes.
    pub probe_interval_ms: f64,
    /// Gradient2's samples per probe.
    pub probe_samples: f64,
    /// The shortest window, ms.
    pub window_ms: f64,
    /// The fewest samples per window.
    pub window_size: f64,
    /// Callers that may wait.
    pub max_queue: f64,
}

fn whole(param: &'static str, v: Option<f64>, default: f64, min: f64, max: f64) -> Result<f64, LimiterError> {
    let value = v.unwrap_or(default);
    if !(min..=max).contains(&value) || value.fract() != 0.0 {
        return Err(LimiterError::Whole { param, value, min, max });
    }
    Ok(value + 0.0)
}

fn ranged(
    param: &'static str,
    v: Option<f64>,
    default: f64,
    ok: impl Fn(f64) -> bool,
    range: &'static str,
) -> Result<f64, LimiterError> {
    let value = v.unwrap_or(default);
    if !value.is_finite() || !ok(value) {
        return Err(LimiterError::Range { param, value, range });
    }
    Ok(value + 0.0)
}

impl Config {
    /// Validates `options`, filling in the defaults.
    pub fn new(options: &LimiterOptions) -> Result<Self, LimiterError> {
        use defaults as d;
        let o = options;
        let max_queue = whole("maxQueue", o.max_queue, d::MAX_QUEUE, 0.0, MAX_SLOTS)?;
        let algorithm = match &o.limit {
            Some(Limit::Slots(n)) => {
                let n = check_slots(*n).map_err(LimiterError::Slots)?;
                return Ok(Self::fixed(n, max_queue));
            }
            Some(Limit::Named(name)) if name == "aimd" => Algorithm::Aimd,
            Some(Limit::Named(name)) if name == "gradient2" => Algorithm::Gradient2,
            Some(Limit::Named(name)) => return Err(LimiterError::Algorithm { value: name.clone() }),
            None => return Err(LimiterError::Algorithm { value: String::new() }),
        };
        let (d_initial, d_min, d_window_ms) = match algorithm {
            Algorithm::Gradient2 => (d::GRADIENT2_INITIAL_LIMIT, d::GRADIENT2_MIN_LIMIT, d::GRADIENT2_WINDOW_MS),
            _ => (d::INITIAL_LIMIT, d::MIN_LIMIT, d::WINDOW_MS),
        };
        let min_limit = whole("minLimit", o.min_limit, d_min, 1.0, MAX_SLOTS)?;
        let max_limit = whole("maxLimit", o.max_limit, d::MAX_LIMIT.max(min_limit), 1.0, MAX_SLOTS)?;
        if min_limit > max_limit {
            return Err(LimiterError::Order { param: "minLimit", value: min_limit, min: min_limit, max: max_limit });
        }
        let initial = o.initial_limit.unwrap_or(within(d_initial, min_limit, max_limit));
        let initial_limit = whole("initialLimit", Some(initial), 0.0, 1.0, MAX_SLOTS)?;
        if !(min_limit..=max_limit).contains(&initial_limit) {
            return Err(LimiterError::Order {
                param: "initialLimit",
                value: initial_limit,
                min: min_limit,
                max: max_limit,
            });
        }
        Ok(Self {
            algorithm,
            initial_limit,
            min_limit,
            max_limit,
            backoff_ratio: ranged(
                "backoffRatio",
                o.backoff_ratio,
                d::BACKOFF_RATIO,
                |r| (0.5..1.0).contains(&r),
                "at least 0.5 and below 1",
            )?,
            timeout_ms: ranged(
                "timeoutMs",
                o.timeout_ms,
                d::TIMEOUT_MS,
                |t| t > 0.0 && t <= MAX_MS,
                "a number of ms above 0",
            )?,
            tolerance: ranged(
                "tolerance",
                o.tolerance,
                d::TOLERANCE,
                |t| (1.0..=MAX_TOLERANCE).contains(&t),
                "between 1 and 100",
            )?,
            smoothing: ranged(
                "smoothing",
                o.smoothing,
                d::SMOOTHING,
                |s| s > 0.0 && s <= 1.0,
                "above 0 and at most 1",
            )?,
            queue_size: whole("queueSize", o.queue_size, d::QUEUE_SIZE, 0.0, MAX_SLOTS)?,
            probe_interval_ms: ranged(
                "probeIntervalMs",
                o.probe_interval_ms,
                d::PROBE_INTERVAL_MS,
                |t| t > 0.0 && t <= MAX_MS,
                "a number of ms above 0",
            )?,
            probe_samples: whole("probeSamples", o.probe_samples, d::PROBE_SAMPLES, 1.0, MAX_SAMPLES)?,
            window_ms: ranged(
                "windowMs",
                o.window_ms,
                d_window_ms,
                |t| (0.0..=MAX_MS).contains(&t),
                "a number of ms, 0 or more",
            )?,
            window_size: whole("windowSize", o.window_size, d::WINDOW_SIZE, 1.0, MAX_SAMPLES)?,
            max_queue,
        })
    }

    /// A fixed limit of `slots` (already checked) with the default window.
    fn fixed(slots: f64, max_queue: f64) -> Self {
        use defaults as d;
        Self {
            algorithm: Algorithm::Fixed,
            initial_limit: slots,
            min_limit: slots,
            max_limit: slots,
            backoff_ratio: d::BACKOFF_RATIO,
            timeout_ms: d::TIMEOUT_MS,
            tolerance: d::TOLERANCE,
            smoothing: d::SMOOTHING,
            queue_size: d::QUEUE_SIZE,
            probe_interval_ms: d::PROBE_INTERVAL_MS,
            probe_samples: d::PROBE_SAMPLES,
            window_ms: d::WINDOW_MS,
            window_size: d::WINDOW_SIZE,
            max_queue,
        }
    }
}

/// `x` within `lo ..= hi` (`lo <= hi`), NaN as `lo`. Not `f64::clamp`:
/// its assertion formats floats with Rust's `Debug`, which put Rust's float
/// printing into the derive `.wasm` (BENCHMARKS.md, "Concurrency limiter").
fn within(x: f64, lo: f64, hi: f64) -> f64 {
    x.max(lo).min(hi)
}

/// The samples of the window being filled.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Window {
    count: f64,
    sum_ms: f64,
    max_in_flight: f64,
    dropped: bool,
}

const EMPTY: Window = Window { count: 0.0, sum_ms: 0.0, max_in_flight: 0.0, dropped: false };

/// A gradient probe in progress: the baseline being measured.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Probe {
    since_ms: f64,
    count: f64,
    sum_ms: f64,
}

/// The limiter's machine: round-trip samples and time go in, the limit and
/// the estimated wait come out. Holds no calls: the host counts them.
#[derive(Debug, Clone, PartialEq)]
pub struct Limiter {
    cfg: Config,
    /// The algorithm's estimate (fractional for gradient2).
    estimate: f64,
    window: Window,
    /// The window closes at the first sample at or after this instant.
    window_end_ms: f64,
    /// The last closed window's average round trip (NaN until one closed).
    rtt_ms: f64,
    /// Gradient2's baseline round trip (NaN until probed).
    baseline_ms: f64,
    probe: Option<Probe>,
    next_probe_ms: f64,
    /// Windows closed so far.
    windows: u64,
}

impl Limiter {
    /// A limiter with validated options, starting at `now_ms`. A gradient
    /// limiter starts with a probe of its baseline.
    pub fn new(options: &LimiterOptions, now_ms: f64) -> Result<Self, LimiterError> {
        Ok(Self::with_config(Config::new(options)?, now_ms))
    }

    /// A limiter from options already validated.
    pub fn with_config(cfg: Config, now_ms: f64) -> Self {
        let now = if now_ms.is_finite() { now_ms } else { 0.0 };
        let probe = (cfg.algorithm == Algorithm::Gradient2).then_some(Probe { since_ms: now, count: 0.0, sum_ms: 0.0 });
        Self {
            cfg,
            estimate: cfg.initial_limit,
            window: EMPTY,
            window_end_ms: now + cfg.window_ms,
            rtt_ms: f64::NAN,
            baseline_ms: f64::NAN,
            probe,
            next_probe_ms: f64::INFINITY,
            windows: 0,
        }
    }

    /// The validated options.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// How many calls may be in flight now: a whole number,
    /// `min_limit ..= max_limit`.
    pub fn limit(&self) -> f64 {
        if self.probe.is_some() {
            return self.cfg.min_limit;
        }
        within(self.estimate.floor(), self.cfg.min_limit, self.cfg.max_limit)
    }

    /// The last closed window's average round trip, ms (NaN before the first).
    pub fn rtt_ms(&self) -> f64 {
        self.rtt_ms
    }

    /// Gradient2's probed baseline round trip, ms (NaN before the first probe
    /// ended, and for the other algorithms).
    pub fn baseline_ms(&self) -> f64 {
        self.baseline_ms
    }

    /// Whether a gradient probe is pinning the limit to `min_limit`.
    pub fn probing(&self) -> bool {
        self.probe.is_some()
    }

    /// Windows closed so far.
    pub fn windows(&self) -> u64 {
        self.windows
    }

    /// A call returned at `now_ms` after `rtt_ms`; `in_flight` calls were in
    /// flight when it started (itself included); `dropped` when it failed
    /// from overload (a timeout, a shed answer). Answers the limit.
    ///
    /// A round trip that is NaN, negative or infinite is ignored.
    pub fn sample(&mut self, now_ms: f64, rtt_ms: f64, in_flight: f64, dropped: bool) -> f64 {
        if !(0.0..f64::INFINITY).contains(&rtt_ms) || !now_ms.is_finite() {
            return self.limit();
        }
        if self.cfg.algorithm == Algorithm::Gradient2 && self.probe.is_none() && now_ms >= self.next_probe_ms {
            self.probe = Some(Probe { since_ms: now_ms, count: 0.0, sum_ms: 0.0 });
        }
        if let Some(p) = &mut self.probe {
            // Only calls admitted during the probe ran at the probe's concurrency.
            if now_ms - rtt_ms >= p.since_ms {
                p.count += 1.0;
                p.sum_ms += rtt_ms;
                if p.count >= self.cfg.probe_samples {
                    self.baseline_ms = p.sum_ms / p.count;
                    self.probe = None;
                    self.next_probe_ms = now_ms + self.cfg.probe_interval_ms;
                    self.window = EMPTY;
                    self.window_end_ms = now_ms + self.cfg.window_ms;
                }
            }
            return self.limit();
        }
        let w = &mut self.window;
        w.count += 1.0;
        w.sum_ms += rtt_ms;
        w.max_in_flight = w.max_in_flight.max(if in_flight.is_finite() { in_flight } else { 0.0 });
        w.dropped |= dropped;
        if now_ms >= self.window_end_ms && w.count >= self.cfg.window_size {
            let w = core::mem::replace(&mut self.window, EMPTY);
            self.window_end_ms = now_ms + self.cfg.window_ms;
            self.close(w);
        }
        self.limit()
    }

    fn close(&mut self, w: Window) {
        let rtt = w.sum_ms / w.count;
        self.rtt_ms = rtt;
        self.windows += 1;
        let c = &self.cfg;
        let next = match c.algorithm {
            Algorithm::Fixed => return,
            Algorithm::Aimd => {
                if w.dropped || rtt > c.timeout_ms {
                    (self.estimate * c.backoff_ratio).floor()
                } else if w.max_in_flight * 2.0 >= self.estimate {
                    self.estimate + 1.0
                } else {
                    self.estimate
                }
            }
            Algorithm::Gradient2 => {
                if self.baseline_ms.is_nan() {
                    return;
                }
                let gradient = if rtt > 0.0 { within(c.tolerance * self.baseline_ms / rtt, 0.5, 1.0) } else { 1.0 };
                // Application-limited (less than half in use): no evidence
                // that more calls would be served as fast, so no growth; but
                // late round trips are evidence to shrink, whatever is in use
                // (callers whose number is fixed never fill a limit above it).
                if w.max_in_flight < self.estimate / 2.0 && gradient >= 1.0 {
                    return;
                }
                let target = self.estimate * gradient + c.queue_size;
                self.estimate * (1.0 - c.smoothing) + target * c.smoothing
            }
        };
        self.estimate = within(next, c.min_limit, c.max_limit);
    }

    /// The estimated wait, ms, of the caller at queue position `position`
    /// (1 for the next slot): `position × rtt / limit` (Little's law), with
    /// the last window's average round trip, or the current window's before
    /// one closed; 0 before any round trip was measured.
    pub fn wait_ms(&self, position: f64) -> f64 {
        let rtt = if self.rtt_ms.is_finite() {
            self.rtt_ms
        } else if self.window.count > 0.0 {
            self.window.sum_ms / self.window.count
        } else if let Some(p) = self.probe.filter(|p| p.count > 0.0) {
            p.sum_ms / p.count
        } else {
            0.0
        };
        let p = if position.is_finite() && position > 0.0 { position } else { 0.0 };
        let w = p * rtt / self.limit();
        if w.is_finite() {
            w.min(MAX_MS)
        } else {
            MAX_MS
        }
    }
}

/// Whether a queued caller whose budget ends at `ends_at_ms` (the instant
/// it queued plus its remaining time; ∞ without a budget) may take the slot
/// its turn brings at `now_ms`: not once that instant has come, when nobody
/// waits for the call any more (the host sheds it, `Overloaded`).
pub fn may_start(now_ms: f64, ends_at_ms: f64) -> bool {
    now_ms < ends_at_ms || now_ms.is_nan() || ends_at_ms.is_nan()
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use crate::core::rng::SplitMix64;
    use proptest::prelude::*;
    use std::cmp::Reverse;
    use std::collections::{BinaryHeap, VecDeque};

    fn opts(limit: &str) -> LimiterOptions {
        LimiterOptions { limit: Some(Limit::Named(limit.into())), ..Default::default() }
    }

    #[test]
    fn defaults_are_netflix_and_envoy() {
        let a = Config::new(&opts("aimd")).unwrap();
        assert_eq!((a.initial_limit, a.min_limit, a.max_limit), (20.0, 20.0, 200.0));
        assert_eq!(
            (a.backoff_ratio, a.timeout_ms, a.window_ms, a.window_size, a.max_queue),
            (0.9, 5_000.0, 1_000.0, 10.0, 0.0)
        );
        let g = Config::new(&opts("gradient2")).unwrap();
        assert_eq!(
            (g.initial_limit, g.min_limit, g.max_limit, g.window_ms, g.window_size),
            (100.0, 4.0, 200.0, 100.0, 10.0)
        );
        assert_eq!((g.tolerance, g.smoothing, g.queue_size), (1.5, 0.2, 4.0));
        assert_eq!((g.probe_interval_ms, g.probe_samples), (60_000.0, 50.0));
        let f = Config::new(&LimiterOptions { limit: Some(Limit::Slots(8.0)), ..Default::default() }).unwrap();
        assert_eq!((f.algorithm, f.min_limit, f.max_limit), (Algorithm::Fixed, 8.0, 8.0));
        // A lower maxLimit alone brings the default initial limit down with it.
        let small =
            Config::new(&LimiterOptions { min_limit: Some(2.0), max_limit: Some(10.0), ..opts("aimd") }).unwrap();
        assert_eq!(small.initial_limit, 10.0);
    }

    #[test]
    fn bad_options_name_the_option() {
        let cases: Vec<(LimiterOptions, &str, &str)> = vec![
            (LimiterOptions::default(), "options.limit", "UNKNOWN_VALUE"),
            (opts("vegas"), "options.limit", "UNKNOWN_VALUE"),
            (LimiterOptions { limit: Some(Limit::Slots(1.5)), ..Default::default() }, "options.limit", "NOT_WHOLE"),
            (LimiterOptions { min_limit: Some(0.0), ..opts("aimd") }, "options.minLimit", "OUT_OF_RANGE"),
            (
                LimiterOptions { min_limit: Some(30.0), max_limit: Some(10.0), ..opts("aimd") },
                "options.minLimit",
                "OUT_OF_RANGE",
            ),
            (LimiterOptions { initial_limit: Some(500.0), ..opts("aimd") }, "options.initialLimit", "OUT_OF_RANGE"),
            (LimiterOptions { max_limit: Some(f64::NAN), ..opts("aimd") }, "options.maxLimit", "NOT_FINITE"),
            (LimiterOptions { backoff_ratio: Some(1.0), ..opts("aimd") }, "options.backoffRatio", "OUT_OF_RANGE"),
            (LimiterOptions { timeout_ms: Some(0.0), ..opts("aimd") }, "options.timeoutMs", "OUT_OF_RANGE"),
            (LimiterOptions { tolerance: Some(0.9), ..opts("gradient2") }, "options.tolerance", "OUT_OF_RANGE"),
            (LimiterOptions { smoothing: Some(f64::INFINITY), ..opts("gradient2") }, "options.smoothing", "NOT_FINITE"),
            (LimiterOptions { queue_size: Some(-1.0), ..opts("gradient2") }, "options.queueSize", "OUT_OF_RANGE"),
            (
                LimiterOptions { probe_interval_ms: Some(-1.0), ..opts("gradient2") },
                "options.probeIntervalMs",
                "OUT_OF_RANGE",
            ),
            (LimiterOptions { probe_samples: Some(2.5), ..opts("gradient2") }, "options.probeSamples", "NOT_WHOLE"),
            (LimiterOptions { window_ms: Some(-1.0), ..opts("gradient2") }, "options.windowMs", "OUT_OF_RANGE"),
            (LimiterOptions { window_size: Some(0.0), ..opts("gradient2") }, "options.windowSize", "OUT_OF_RANGE"),
            (LimiterOptions { max_queue: Some(-1.0), ..opts("aimd") }, "options.maxQueue", "OUT_OF_RANGE"),
        ];
        for (o, param, code) in cases {
            let e = Config::new(&o).unwrap_err();
            assert_eq!((e.param().as_deref(), e.code()), (Some(param), code), "{o:?}");
            crate::core::error::assert_filled(&e.message());
        }
        assert_eq!(
            Config::new(&opts("vegas")).unwrap_err().to_string(),
            "'limit' must be a whole number of slots, \"aimd\" or \"gradient2\": current value is 'vegas'"
        );
        assert_eq!(
            Config::new(&LimiterOptions { backoff_ratio: Some(1.0), ..opts("aimd") }).unwrap_err().to_string(),
            "'backoffRatio' must be at least 0.5 and below 1: current value is 1"
        );
        assert_eq!(
            Config::new(&LimiterOptions { initial_limit: Some(5.0), ..opts("aimd") }).unwrap_err().to_string(),
            "'initialLimit' must be between minLimit (20) and maxLimit (200): current value is 5"
        );
        // A fixed limit's message is Little's, as before.
        assert_eq!(
            Config::new(&LimiterOptions { limit: Some(Limit::Slots(0.5)), ..Default::default() })
                .unwrap_err()
                .to_string(),
            "'limit' must be a whole number between 1 and 4294967295: current value is 0.5"
        );
    }

    #[test]
    fn aimd_grows_by_one_per_busy_window_and_backs_off_on_late_or_dropped() {
        let o =
            LimiterOptions { min_limit: Some(5.0), timeout_ms: Some(100.0), window_size: Some(2.0), ..opts("aimd") };
        let mut l = Limiter::new(&o, 0.0).unwrap();
        assert_eq!(l.limit(), 20.0);
        // Not closed before windowMs, nor with fewer than windowSize samples.
        assert_eq!(l.sample(500.0, 10.0, 20.0, false), 20.0);
        assert_eq!(l.sample(999.0, 10.0, 20.0, false), 20.0);
        assert_eq!(l.sample(1_000.0, 10.0, 20.0, false), 21.0);
        assert_eq!(l.sample(2_000.0, 10.0, 21.0, false), 21.0, "one sample is not a window");
        assert_eq!(l.sample(2_001.0, 10.0, 2.0, false), 22.0, "the window's highest in-flight counts");
        // Application-limited: under half in use, no growth.
        l.sample(3_001.0, 10.0, 3.0, false);
        assert_eq!(l.sample(3_002.0, 10.0, 3.0, false), 22.0);
        // Late: 22 × 0.9 = 19.8 → 19.
        l.sample(4_002.0, 150.0, 22.0, false);
        assert_eq!(l.sample(4_003.0, 100.0, 22.0, false), 19.0);
        // A drop backs off whatever the latency.
        l.sample(5_003.0, 1.0, 19.0, true);
        assert_eq!(l.sample(5_004.0, 1.0, 19.0, false), 17.0);
        assert_eq!(l.windows(), 5);
        for t in 0..100 {
            l.sample(6_000.0 + 1_000.0 * f64::from(t), 500.0, 20.0, false);
            l.sample(6_000.5 + 1_000.0 * f64::from(t), 500.0, 20.0, false);
        }
        assert_eq!(l.limit(), 5.0, "never below minLimit");
    }

    #[test]
    fn gradient2_probes_its_baseline_at_min_limit_then_follows_the_gradient() {
        let o = LimiterOptions {
            initial_limit: Some(20.0),
            min_limit: Some(4.0),
            max_limit: Some(1_000.0),
            probe_samples: Some(3.0),
            window_ms: Some(1_000.0),
            window_size: Some(1.0),
            ..opts("gradient2")
        };
        let mut l = Limiter::new(&o, 0.0).unwrap();
        assert!(l.probing());
        assert_eq!(l.limit(), 4.0, "pinned to minLimit while probing");
        // A call admitted before the probe is not a sample of it.
        l.sample(50.0, 60.0, 4.0, false);
        l.sample(60.0, 10.0, 4.0, false);
        l.sample(70.0, 10.0, 4.0, false);
        assert!(l.probing());
        assert_eq!(l.sample(80.0, 13.0, 4.0, false), 20.0, "the estimate is back after the probe");
        assert_eq!(l.baseline_ms(), 11.0);
        // At the baseline: gradient 1, +queueSize × smoothing = +0.8 a window.
        assert_eq!(l.sample(1_080.0, 11.0, 20.0, false), 20.0);
        assert_eq!(l.estimate, 20.8);
        l.sample(2_080.0, 11.0, 20.0, false);
        assert_eq!(l.limit(), 21.0);
        // Ten times the baseline: the gradient is clamped to 0.5.
        let before = l.estimate;
        l.sample(3_080.0, 110.0, 21.0, false);
        assert!((l.estimate - (before * 0.8 + (before * 0.5 + 4.0) * 0.2)).abs() < 1e-9);
        // The next probe comes probeIntervalMs after the last one ended.
        l.sample(60_079.0, 11.0, 21.0, false);
        assert!(!l.probing());
        l.sample(60_080.0, 11.0, 21.0, false);
        assert!(l.probing());
        assert_eq!(l.limit(), 4.0);
    }

    /// A closed loop on fake time: `demand` callers each call again as soon
    /// as their call returns, after `rtt` ms; at most `limit()` calls run
    /// (the rest are shed). Runs until `until`; answers the limit after each
    /// round trip and the most calls that ran at once.
    fn closed_loop(l: &mut Limiter, now: &mut f64, until: f64, demand: f64, rtt: f64) -> (Vec<f64>, f64) {
        let (mut limits, mut most) = (Vec::new(), 0.0f64);
        while *now < until {
            let running = demand.min(l.limit());
            most = most.max(running);
            *now += rtt;
            for _ in 0..running as u32 {
                l.sample(*now, rtt, running, false);
            }
            limits.push(l.limit());
        }
        (limits, most)
    }

    /// The options the gradient2 defaults were before (they held a healthy
    /// dependency at 20 calls in flight and could not go below 20).
    fn old_gradient2() -> LimiterOptions {
        LimiterOptions {
            initial_limit: Some(20.0),
            min_limit: Some(20.0),
            window_ms: Some(1_000.0),
            ..opts("gradient2")
        }
    }

    #[test]
    fn gradient2_defaults_serve_a_healthy_dependency_after_the_first_probe() {
        // 64 callers, a 20 ms dependency that does not slow down with them.
        let mut l = Limiter::new(&opts("gradient2"), 0.0).unwrap();
        let mut now = 0.0;
        let (limits, _) = closed_loop(&mut l, &mut now, 300.0, 64.0, 20.0);
        assert!(!l.probing(), "the probe ends after probeSamples round trips: {limits:?}");
        assert_eq!(
            limits.iter().filter(|&&x| x == 4.0).count(),
            12,
            "50 samples at 4 in flight: the 13th round trip ends it"
        );
        assert!(limits.last().is_some_and(|&x| x >= 64.0), "{limits:?}");
        let (limits, _) = closed_loop(&mut l, &mut now, 10_000.0, 64.0, 20.0);
        assert!(limits.iter().all(|&x| x >= 64.0), "never below the 64 callers");
        // The old defaults: pinned at 20, growing 0.8 a one-second window.
        let mut old = Limiter::new(&old_gradient2(), 0.0).unwrap();
        let mut now = 0.0;
        let (limits, _) = closed_loop(&mut old, &mut now, 10_000.0, 64.0, 20.0);
        assert!(limits.last().is_some_and(|&x| x < 30.0), "{:?}", limits.last());
    }

    #[test]
    fn gradient2_defaults_fall_below_the_old_min_limit_when_the_dependency_slows_tenfold() {
        let mut l = Limiter::new(&opts("gradient2"), 0.0).unwrap();
        let mut now = 0.0;
        closed_loop(&mut l, &mut now, 10_000.0, 64.0, 20.0);
        let (limits, most) = closed_loop(&mut l, &mut now, 15_000.0, 64.0, 200.0);
        // Against the 20 ms baseline the gradient is 0.5 each window (one a
        // round trip here, the samples of a round trip coming together): the
        // limit heads for queueSize / (1 − 0.5) = 8, below 20 within 5 s, though
        // 64 callers never fill the 128 it had grown to.
        assert_eq!(most, 64.0, "the first slow round trips were admitted at the healthy limit");
        assert!(limits.last().is_some_and(|&x| (4.0..20.0).contains(&x)), "{limits:?}");
        let (limits, most) = closed_loop(&mut l, &mut now, 20_000.0, 64.0, 200.0);
        assert!(most < 20.0, "calls in flight stay capped: {most} {limits:?}");
        assert!(limits.last().is_some_and(|&x| x <= 9.0), "and settle near 8: {limits:?}");
        // The old defaults cannot go below their minLimit.
        let mut old = Limiter::new(&old_gradient2(), 0.0).unwrap();
        let mut now = 0.0;
        closed_loop(&mut old, &mut now, 10_000.0, 64.0, 20.0);
        let (_, most) = closed_loop(&mut old, &mut now, 20_000.0, 64.0, 200.0);
        assert!(most >= 20.0);
    }

    #[test]
    fn wait_grows_with_position_by_littles_law() {
        let mut l =
            Limiter::new(&LimiterOptions { limit: Some(Limit::Slots(4.0)), ..Default::default() }, 0.0).unwrap();
        assert_eq!(l.wait_ms(3.0), 0.0, "nothing measured yet");
        l.sample(10.0, 40.0, 1.0, false);
        assert_eq!(l.wait_ms(1.0), 10.0, "the open window's average before one closed");
        for i in 0..10 {
            assert_eq!(l.sample(1_000.0 + f64::from(i), 80.0, 4.0, false), 4.0);
        }
        assert_eq!(l.rtt_ms(), (40.0 + 9.0 * 80.0) / 10.0);
        assert_eq!(l.wait_ms(2.0), 2.0 * 76.0 / 4.0);
        assert_eq!(l.wait_ms(f64::NAN), 0.0);
    }

    /// A dependency with `servers` servers and a FIFO queue in front of
    /// them; service times are exponential with mean `service_ms`. Calls
    /// arrive as a Poisson process at `rate` per ms; the limiter admits or
    /// sheds each. Returns the limit at the end of each second.
    struct Sim {
        rng: SplitMix64,
        now: f64,
        servers: usize,
        busy: BinaryHeap<Reverse<(u64, usize)>>, // (finish µs, call id)
        queue: VecDeque<usize>,
        calls: Vec<(f64, f64)>, // (start, in flight at start)
        in_flight: usize,
        next_arrival: f64,
    }

    impl Sim {
        fn new(seed: u64, servers: usize) -> Self {
            Self {
                rng: SplitMix64::new(seed),
                now: 0.0,
                servers,
                busy: BinaryHeap::new(),
                queue: VecDeque::new(),
                calls: Vec::new(),
                in_flight: 0,
                next_arrival: 0.0,
            }
        }

        fn exp(&mut self, mean: f64) -> f64 {
            -mean * self.rng.next_f64_nonzero().ln()
        }

        fn serve(&mut self, id: usize, service_ms: f64) {
            let finish = self.now + self.exp(service_ms);
            self.busy.push(Reverse(((finish * 1_000.0) as u64, id)));
        }

        /// Runs until `until` ms; answers the limit every 1 000 ms.
        fn run(&mut self, l: &mut Limiter, until: f64, rate: f64, service_ms: f64) -> Vec<f64> {
            let mut out = Vec::new();
            let mut tick = (self.now / 1_000.0).floor() * 1_000.0 + 1_000.0;
            while self.now < until {
                let finish = self.busy.peek().map_or(f64::INFINITY, |Reverse((f, _))| *f as f64 / 1_000.0);
                let next = finish.min(self.next_arrival).min(tick);
                self.now = next;
                if next == tick {
                    out.push(l.limit());
                    tick += 1_000.0;
                } else if next == finish {
                    let Reverse((_, id)) = self.busy.pop().unwrap();
                    let (start, at_start) = self.calls[id];
                    self.in_flight -= 1;
                    l.sample(self.now, self.now - start, at_start, false);
                    if let Some(q) = self.queue.pop_front() {
                        self.serve(q, service_ms);
                    }
                } else {
                    self.next_arrival = self.now + self.exp(1.0 / rate);
                    if (self.in_flight as f64) < l.limit() {
                        self.in_flight += 1;
                        let id = self.calls.len();
                        self.calls.push((self.now, self.in_flight as f64));
                        if self.busy.len() < self.servers {
                            self.serve(id, service_ms);
                        } else {
                            self.queue.push_back(id);
                        }
                    }
                }
            }
            out
        }
    }

    fn mean(xs: &[f64]) -> f64 {
        xs.iter().sum::<f64>() / xs.len() as f64
    }

    // Demand 3 calls/ms against at most 2 calls/ms (40 servers of 20 ms, or
    // 10 of 5 ms). Little's law at a target latency T: limit = 2 calls/ms × T.

    #[test]
    fn aimd_settles_near_littles_bound_for_its_timeout_and_backs_off_after_a_10x_step() {
        for seed in [1, 2, 3] {
            let o = LimiterOptions {
                min_limit: Some(5.0),
                max_limit: Some(1_000.0),
                timeout_ms: Some(100.0),
                ..opts("aimd")
            };
            let mut l = Limiter::new(&o, 0.0).unwrap();
            let mut sim = Sim::new(seed, 10);
            let limits = sim.run(&mut l, 400_000.0, 3.0, 5.0);
            let bound = 2.0 * 100.0;
            let settled = mean(&limits[300..]);
            assert!((settled - bound).abs() <= 0.2 * bound, "seed {seed}: {settled} vs {bound}");
            assert!(limits.iter().all(|&x| (5.0..=1_000.0).contains(&x)));
            // Ten times slower: the bound is 0.2 calls/ms × 100 ms = 20.
            let after = sim.run(&mut l, 440_000.0, 3.0, 50.0);
            let windows = after.iter().position(|&x| x <= 1.2 * 20.0).expect("came down");
            // 0.9^k × 200 ≤ 24 takes k = 21 windows of backoff.
            assert!(windows <= 25, "seed {seed}: {windows} windows");
            assert!(after.iter().all(|&x| x >= 5.0));
            let settled = mean(&after[30..]);
            assert!((settled - 20.0).abs() <= 0.2 * 20.0, "seed {seed}: {settled}");
        }
    }

    #[test]
    fn aimd_with_backoff_half_comes_down_in_a_few_windows() {
        let o = LimiterOptions {
            min_limit: Some(5.0),
            max_limit: Some(1_000.0),
            timeout_ms: Some(100.0),
            backoff_ratio: Some(0.5),
            ..opts("aimd")
        };
        let mut l = Limiter::new(&o, 0.0).unwrap();
        let mut sim = Sim::new(7, 10);
        sim.run(&mut l, 300_000.0, 3.0, 5.0);
        let after = sim.run(&mut l, 320_000.0, 3.0, 50.0);
        let windows = after.iter().position(|&x| x <= 1.2 * 20.0).expect("came down");
        assert!(windows <= 5, "{windows} windows: {after:?}");
    }

    #[test]
    fn gradient2_settles_near_littles_bound_for_tolerance_times_baseline_and_comes_down_after_a_10x_step() {
        for seed in [1, 2, 3] {
            let o = LimiterOptions { min_limit: Some(10.0), max_limit: Some(1_000.0), ..opts("gradient2") };
            let mut l = Limiter::new(&o, 0.0).unwrap();
            let mut sim = Sim::new(seed, 40);
            let limits = sim.run(&mut l, 300_000.0, 3.0, 20.0);
            // Target latency 1.5 × 20 ms: 2 calls/ms × 30 ms = 60.
            let bound = 60.0;
            let settled: Vec<f64> = limits[150..].iter().copied().filter(|&x| x > 10.0).collect();
            let settled = mean(&settled);
            assert!((settled - bound).abs() <= 0.2 * bound, "seed {seed}: {settled} vs {bound}");
            assert!(limits.iter().all(|&x| (10.0..=1_000.0).contains(&x)));
            let before = l.limit();
            assert!(!l.probing());
            // Ten times slower: against the old baseline the gradient is
            // 0.5, and the limit comes down before the next probe.
            let after = sim.run(&mut l, 310_000.0, 3.0, 200.0);
            let windows = after.iter().position(|&x| x <= before / 2.0).expect("came down");
            assert!(windows <= 10, "seed {seed}: {windows} windows {after:?}");
            // The next probe measures the new baseline: the latency target
            // is 1.5 × 200 ms and the bound 0.2 calls/ms × 300 ms, 60 again.
            let later = sim.run(&mut l, 600_000.0, 3.0, 200.0);
            let settled: Vec<f64> = later[150..].iter().copied().filter(|&x| x > 10.0).collect();
            let settled = mean(&settled);
            assert!((settled - bound).abs() <= 0.2 * bound, "seed {seed}: {settled} after the step");
        }
    }

    proptest! {
        #[test]
        fn limit_stays_within_min_and_max(
            algo in prop_oneof![Just("aimd"), Just("gradient2")],
            min in 1.0..50.0f64,
            span in 0.0..300.0f64,
            samples in prop::collection::vec((0.0..5_000.0f64, any::<f64>(), 0.0..400.0f64, any::<bool>()), 0..300),
        ) {
            let (min, max) = (min.floor(), (min + span).floor());
            let o = LimiterOptions { min_limit: Some(min), max_limit: Some(max), initial_limit: Some(min), probe_samples: Some(3.0), window_size: Some(2.0), ..opts(algo) };
            let mut l = Limiter::new(&o, 0.0).unwrap();
            let mut now = 0.0;
            for (dt, rtt, in_flight, dropped) in samples {
                now += dt;
                let limit = l.sample(now, rtt, in_flight, dropped);
                prop_assert!((min..=max).contains(&limit) && limit.fract() == 0.0, "{limit}");
                let (w1, w2) = (l.wait_ms(1.0), l.wait_ms(2.0));
                prop_assert!(w1.is_finite() && w1 >= 0.0 && w2 >= w1);
            }
        }

        #[test]
        fn a_fixed_limit_never_changes(samples in prop::collection::vec((0.0..5_000.0f64, any::<f64>(), any::<bool>()), 0..100)) {
            let mut l = Limiter::new(&LimiterOptions { limit: Some(Limit::Slots(7.0)), ..Default::default() }, 0.0).unwrap();
            let mut now = 0.0;
            for (dt, rtt, dropped) in samples {
                now += dt;
                prop_assert_eq!(l.sample(now, rtt, 7.0, dropped), 7.0);
            }
        }

        #[test]
        fn options_never_panic(a in any::<f64>(), b in any::<f64>(), c in any::<f64>(), d in any::<f64>()) {
            for algo in ["aimd", "gradient2"] {
                let o = LimiterOptions { min_limit: Some(a.abs().min(1e3).floor().max(1.0)), max_limit: Some(b), initial_limit: Some(c), smoothing: Some(d), backoff_ratio: Some(d), ..opts(algo) };
                if let Ok(mut l) = Limiter::new(&o, a) {
                    let x = l.sample(b, c, d, true);
                    prop_assert!(x >= 1.0);
                }
            }
        }
    }

    #[test]
    fn a_waiter_may_start_only_before_its_budget_ends() {
        assert!(may_start(100.0, 150.0));
        assert!(!may_start(150.0, 150.0), "a budget spent to the last ms covers no call");
        assert!(!may_start(510.0, 150.0));
        assert!(may_start(1e15, f64::INFINITY), "no budget: always");
        assert!(may_start(f64::NAN, 150.0), "an unknown now starts it, as before");
    }
}
