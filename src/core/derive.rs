//! Timeouts derived from data: `timeout = quantile(successes, q) × safety`,
//! per bucket, with the checks that keep the derivation honest.
//!
//! # Why
//! "30 s" is a number somebody typed. A timeout is a claim about a latency
//! distribution: the point past which waiting longer is worse than giving
//! up. That point is a property of the durations of *successful* calls of one
//! operation in one bucket (model, prompt size, streaming or not), so this
//! module computes it per bucket from raw durations (through
//! [`LatencySketch`]) or from Prometheus histograms ([`prom`]).
//!
//! # Rules (seed 000)
//! - `q = 0.99` for a user-facing path (abandons about 1% of good calls),
//!   `q = 0.999` for background work; `safety` 1.5–2 covers drift between
//!   reviews ([`DeriveOptions::user_facing`], [`DeriveOptions::background`]).
//! - A stall timeout comes from the inter-chunk gap distribution with a
//!   larger multiple, p99 gap × 5 ([`DeriveOptions::stall`]): gaps are
//!   scheduler noise and their tail is heavy. First-chunk timeouts are
//!   derived per prompt-size bucket (group by that label).
//!
//! # The censoring guard
//! Only successes count: timed-out and failed calls are excluded and counted
//! ([`Excluded`]). Including timeouts censors the distribution at the current
//! timeout and the next derived value comes out smaller, a ratchet that
//! tightens the timeout at every review. Excluding them is not enough when
//! many calls time out (the successes' p99 is then itself censored) or when
//! timed-out calls were logged as successes (they pile up at the timeout);
//! both raise a [`Warning`]. So do too few samples for `q`
//! (`n < 10 / (1 − q)`, i.e. fewer than 10 samples beyond the percentile) and
//! a configured timeout more than 2× away from the measured percentile
//! (drift).
//!
//! # Tail shape
//! Each raw-data bucket is checked for a gap between a fast body and a slow
//! tail ([`tail`](crate::core::tail)); when one is found, its edge, its share and a value just
//! above the body are reported next to the false-timeout rates of the usual
//! candidates (p99, 2×p99, p99.9, the configured value).
//!
//! # Files
//! The warnings and their wording are `derive/warning.rs`; the tests, `derive/tests.rs`.
//!
//! # Invariants (each is a test in `derive/tests.rs`)
//! 1. `timeout_ms = quantile_ms × safety` and `p50 <= p90 <= p99 <= p99.9`;
//!    nothing is NaN, infinite or negative.
//! 2. Only successes enter the quantiles: adding timeouts and errors changes
//!    the excluded counts and the warnings, never the percentiles.
//! 3. Grouping is exact: a bucket's result equals deriving its rows alone.
//! 4. Bad options and bad samples are errors naming the parameter; an empty
//!    bucket yields `None` values and a warning, never a zero timeout.
//! 5. From histograms, the derived percentile lies inside the bucket holding
//!    the exact percentile of the raw data (within bucket resolution).

use serde::{Deserialize, Serialize};

use crate::core::deadline::{check_ms, DeadlineError, MAX_MS};
use crate::core::error::{Described, Kind, Message};
use crate::core::prom;
use crate::core::sketch::{Bin, BoundCache, LatencySketch, SketchError, DEFAULT_RELATIVE_ERROR};

use crate::core::prom::{pairs_as_object, Histogram, PromError, Unit};
use crate::core::tail::{tail_shape, TailShape};

mod warning;
pub use warning::{msg as warning_msg, percentile, percentile_name, DerivedWarning, Warning, WarningCode};

/// The default percentile: user-facing paths.
pub const DEFAULT_Q: f64 = 0.99;
/// The percentile for background work.
pub const BACKGROUND_Q: f64 = 0.999;
/// The default safety factor.
pub const DEFAULT_SAFETY: f64 = 2.0;
/// The multiple of the p99 inter-chunk gap used for stall timeouts.
pub const STALL_MULTIPLE: f64 = 5.0;
/// The largest accepted safety factor (a typo guard).
pub const MAX_SAFETY: f64 = 100.0;
/// At most this many distinct buckets per derivation, to bound memory
/// (each holds one sketch of at most 16 KB).
pub const MAX_GROUPS: usize = 1024;
/// A configured timeout further than this factor from the measured
/// percentile is flagged as drift.
pub const DRIFT_FACTOR: f64 = 2.0;
/// Samples needed beyond the percentile for a stable estimate:
/// `n >= SAMPLES_BEYOND / (1 − q)`.
pub const SAMPLES_BEYOND: f64 = 10.0;

/// The successes a `q` percentile needs to be stable:
/// `⌈SAMPLES_BEYOND / (1 − q)⌉` (1 000 for p99); ∞ for a `q` outside `[0, 1)`
/// or NaN. Below it a derivation warns `small-sample`, the aggregator
/// reaches back further, and a `TimeoutBook` serves its caller's fallback.
pub fn samples_needed(q: f64) -> f64 {
    if (0.0..1.0).contains(&q) {
        // 1 − 0.9 is 0.09999999999999998 in binary: without the relative
        // slack a p90 would need 101 successes, not 100.
        (SAMPLES_BEYOND / (1.0 - q) * (1.0 - 1e-12)).ceil()
    } else {
        f64::INFINITY
    }
}
/// From histograms, a percentile whose bucket is wider than this share of
/// its upper bound is flagged as limited by resolution.
pub const RESOLUTION_LIMIT: f64 = 0.05;

/// How a call ended. Only successes describe healthy latency.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The call succeeded: its duration is a latency sample.
    Success,
    /// The call timed out: counted, left out of the quantiles.
    Timeout,
    /// The call failed otherwise: counted, left out of the quantiles.
    Error,
}

impl Outcome {
    /// The accepted spellings, for messages (the template [`msg::OUTCOMES`]).
    pub fn accepted() -> Message {
        Message::new(msg::OUTCOMES)
    }

    /// [`Outcome::parse`] of a row's `field`, or the error naming it.
    pub fn of_field(field: &str, value: &str) -> Result<Outcome, DeriveError> {
        Outcome::parse(value).ok_or_else(|| DeriveError::RowOutcome { field: field.into(), value: value.into() })
    }

    /// An HTTP status code as an outcome, whether it came as a number (JSON,
    /// a JS row) or as text ([`Outcome::parse`]): 2xx a success, 408 and 504
    /// timeouts, other 4xx and 5xx errors; `None` for anything else (1xx and
    /// 3xx are not a call's final outcome; a fraction is not a status).
    pub fn of_status(status: f64) -> Option<Outcome> {
        if status.fract() != 0.0 {
            return None;
        }
        match status {
            200.0..=299.0 => Some(Outcome::Success),
            408.0 | 504.0 => Some(Outcome::Timeout),
            400.0..=599.0 => Some(Outcome::Error),
            _ => None,
        }
    }

    /// Reads an outcome, case-insensitively, or an HTTP status code (2xx a
    /// success, 408 and 504 timeouts, other 4xx and 5xx errors); `None` for
    /// anything else (1xx and 3xx are not a call's final outcome).
    pub fn parse(s: &str) -> Option<Outcome> {
        let s = s.trim();
        if let &[a @ b'1'..=b'5', b @ b'0'..=b'9', c @ b'0'..=b'9'] = s.as_bytes() {
            // Three digits, by hand: a float parser costs the `.wasm` kilobytes.
            let status = [a, b, c].iter().fold(0u16, |n, d| n * 10 + u16::from(d - b'0'));
            return Outcome::of_status(f64::from(status));
        }
        let is = |w: &str| s.eq_ignore_ascii_case(w);
        if is("success") || is("ok") || is("succeeded") || is("true") {
            Some(Outcome::Success)
        } else if is("timeout") || is("timed_out") || is("timedout") || is("deadline_exceeded") {
            Some(Outcome::Timeout)
        } else if ["error", "err", "fail", "failed", "failure", "false", "cancelled", "canceled"].iter().any(|w| is(w))
        {
            Some(Outcome::Error)
        } else {
            None
        }
    }
}

/// What to derive. The defaults ([`DeriveOptions::user_facing`]) are the
/// JS API's too: `js/derive.js` reads them from [`DeriveOptions::default`]
/// through the Wasm export `deriveDefaults`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub struct DeriveOptions {
    /// The percentile the timeout is read at, strictly between 0 and 1:
    /// 0.99 for user-facing paths (the default), 0.999 for background work.
    pub q: f64,
    /// The multiple applied to it, 1 … 100 (1.5–2 covers drift; 5 for
    /// stall timeouts from chunk gaps); 2 by default.
    pub safety: f64,
    /// The sketch's relative error for raw data, 0.001 … 0.5; 0.01 by default.
    pub relative_error: f64,
    /// The timeout in force now: checks drift (> 2× away) and pile-ups at it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configured_ms: Option<f64>,
}

impl Default for DeriveOptions {
    fn default() -> Self {
        Self::user_facing()
    }
}

impl DeriveOptions {
    /// p99 × 2: a user-facing path.
    pub fn user_facing() -> Self {
        Self { q: DEFAULT_Q, safety: DEFAULT_SAFETY, relative_error: DEFAULT_RELATIVE_ERROR, configured_ms: None }
    }

    /// p99.9 × 2: background work.
    pub fn background() -> Self {
        Self { q: BACKGROUND_Q, ..Self::user_facing() }
    }

    /// p99 × 5 of inter-chunk gaps: a stall timeout.
    pub fn stall() -> Self {
        Self { safety: STALL_MULTIPLE, ..Self::user_facing() }
    }

    /// Checks every field; the derivation functions call this first.
    pub fn validate(&self) -> Result<(), DeriveError> {
        if !(self.q > 0.0 && self.q < 1.0) {
            return Err(DeriveError::Quantile { value: self.q });
        }
        if !(1.0..=MAX_SAFETY).contains(&self.safety) {
            return Err(DeriveError::Safety { value: self.safety });
        }
        LatencySketch::new(self.relative_error).map_err(DeriveError::Sketch)?;
        if let Some(c) = self.configured_ms {
            check_ms("configuredMs", c).map_err(DeriveError::Configured)?;
        }
        Ok(())
    }
}

/// Why a derivation was refused.
#[derive(Debug, Clone, PartialEq)]
pub enum DeriveError {
    /// `q` must be strictly between 0 and 1: 0.99 for p99, 0.999 for p99.9.
    Quantile {
        /// The `q` given.
        value: f64,
    },
    /// `safety` must be between 1 and [`MAX_SAFETY`]: below 1 the timeout
    /// would be shorter than the percentile it came from.
    Safety {
        /// The `safety` given.
        value: f64,
    },
    /// The configured timeout is not a valid duration.
    Configured(DeadlineError),
    /// A sample or the relative error was refused by the sketch.
    Sketch(SketchError),
    /// A row has a different number of label values than there are `by`
    /// labels.
    Labels {
        /// How many `by` labels there are.
        expected: usize,
        /// How many label values the row has.
        got: usize,
    },
    /// More than [`MAX_GROUPS`] distinct buckets: group by fewer labels.
    Groups {
        /// The most distinct buckets ([`MAX_GROUPS`]).
        limit: usize,
    },
    /// A success sample had no duration.
    MissingDuration,
    /// A histogram's outcome label has a value that is not an outcome.
    Outcome {
        /// The label's value.
        value: String,
        /// The series it was read from, for the message.
        series: String,
    },
    /// The Prometheus input was refused.
    Prom(PromError),
    /// A row's outcome field (`field`, the `outcome` option) holds a word
    /// that is not an outcome.
    RowOutcome {
        /// The row's field that holds the outcome.
        field: String,
        /// The word found.
        value: String,
    },
    /// Row `index` (0-based, of the caller's array) was refused.
    Row {
        /// The row's position, from 0.
        index: usize,
        /// Why the row was refused.
        error: Box<DeriveError>,
    },
}

impl DeriveError {
    /// This error, as the error of row `index`.
    pub fn at_row(self, index: usize) -> DeriveError {
        DeriveError::Row { index, error: Box::new(self) }
    }
}

impl Described for DeriveError {
    fn code(&self) -> &'static str {
        match self {
            Self::Quantile { .. } | Self::Safety { .. } => "OUT_OF_RANGE",
            Self::Configured(e) => e.code(),
            Self::Sketch(e) => e.code(),
            Self::Labels { .. } => "LABEL_COUNT",
            Self::Groups { .. } => "TOO_MANY_BUCKETS",
            Self::MissingDuration => "MISSING_DURATION",
            Self::Outcome { .. } | Self::RowOutcome { .. } => "UNKNOWN_OUTCOME",
            Self::Prom(e) => e.code(),
            Self::Row { error, .. } => error.code(),
        }
    }

    fn param(&self) -> Option<String> {
        Some(match self {
            Self::Quantile { .. } => "options.q".into(),
            Self::Safety { .. } => "options.safety".into(),
            Self::Configured(_) => "options.configuredMs".into(),
            Self::Sketch(SketchError::Sample { index: Some(i), .. }) => format!("data[{i}]"),
            Self::Sketch(e) => return e.param(),
            Self::Labels { .. } => "data".into(),
            Self::Groups { .. } => "options.by".into(),
            Self::MissingDuration => "ms".into(),
            Self::Outcome { .. } => "data".into(),
            Self::RowOutcome { field, .. } => field.clone(),
            Self::Prom(e) => return e.param(),
            Self::Row { index, error } => match error.param() {
                Some(field) if !matches!(**error, Self::Labels { .. }) => format!("data[{index}].{field}"),
                _ => format!("data[{index}]"),
            },
        })
    }

    fn kind(&self) -> Kind {
        match self {
            Self::Row { error, .. } => error.kind(),
            _ => Kind::Range,
        }
    }

    fn message(&self) -> Message {
        match self {
            Self::Quantile { value } => Message::new(msg::QUANTILE).arg("value", *value),
            Self::Safety { value } => Message::new(msg::SAFETY).arg("max", MAX_SAFETY).arg("value", *value),
            Self::Configured(e) => e.message(),
            Self::Sketch(e) => e.message(),
            Self::Labels { expected, got } => Message::new(msg::LABELS).arg("expected", *expected).arg("got", *got),
            Self::Groups { limit } => Message::new(msg::GROUPS).arg("limit", *limit),
            Self::MissingDuration => Message::new(msg::MISSING_DURATION),
            Self::Outcome { value, series } => Message::new(msg::OUTCOME)
                .arg("value", value.as_str())
                .arg("series", series.as_str())
                .arg("accepted", Outcome::accepted()),
            Self::Prom(e) => e.message(),
            Self::RowOutcome { field, value } => Message::new(msg::ROW_OUTCOME)
                .arg("field", field.as_str())
                .arg("accepted", Outcome::accepted())
                .arg("value", value.as_str()),
            Self::Row { index, error } => Message::new(msg::ROW).arg("index", *index).arg("error", error.message()),
        }
    }
}

/// The derivation's message templates (its warnings' are [`warning_msg`]).
pub mod msg {
    crate::templates! { "derive";
        /// [`DeriveError::Quantile`](super::DeriveError::Quantile).
        QUANTILE = "'q' must be greater than 0 and less than 1 (0.99 for p99): current value is {value}";
        /// [`DeriveError::Safety`](super::DeriveError::Safety).
        SAFETY = "'safety' must be between 1 and {max}: current value is {value}";
        /// [`DeriveError::Labels`](super::DeriveError::Labels).
        LABELS = "expected {expected} label values (one per 'by' label), got {got}";
        /// [`DeriveError::Groups`](super::DeriveError::Groups).
        GROUPS = "more than {limit} distinct buckets: group by fewer labels or coarser values";
        /// [`DeriveError::MissingDuration`](super::DeriveError::MissingDuration).
        MISSING_DURATION = "a successful call needs a duration in milliseconds";
        /// The spellings [`Outcome::parse`](super::Outcome::parse) accepts.
        OUTCOMES = "success, ok, succeeded, true, an HTTP status 2xx (successes); timeout, timed_out, deadline_exceeded, 408, 504 (timeouts); error, err, fail, failed, failure, false, cancelled, other 4xx and 5xx (errors)";
        /// [`DeriveError::Outcome`](super::DeriveError::Outcome); `accepted` is [`OUTCOMES`].
        OUTCOME = "outcome '{value}' of {series} is not one of: {accepted}";
        /// [`DeriveError::RowOutcome`](super::DeriveError::RowOutcome); `accepted` is [`OUTCOMES`].
        ROW_OUTCOME = "'{field}' must be one of {accepted}: current value is \"{value}\"";
        /// [`DeriveError::Row`](super::DeriveError::Row): the row's position and its own message.
        ROW = "row {index}: {error}";
    }
}

crate::described_error!(DeriveError);

/// Calls left out of the quantiles.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub struct Excluded {
    /// Calls that timed out.
    pub timeouts: u64,
    /// Calls that failed otherwise.
    pub errors: u64,
}

/// A candidate timeout and how many healthy calls it would have failed.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub struct Candidate {
    /// `"p99"`, `"2xp99"`, `"p99.9"`, `"configured"`, `"above body"`.
    pub name: String,
    /// The candidate timeout, in ms (`timeoutMs` in JS).
    pub timeout_ms: f64,
    /// The share of successful calls slower than `timeout_ms`, in `[0, 1]`
    /// (`falseTimeoutRate` in JS): how often the timeout would cut off a call
    /// that would have succeeded.
    pub false_timeout_rate: f64,
}

/// One bucket's derivation; `null` in JavaScript where there is no value.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify), tsify(missing_as_null, hashmap_as_object))]
pub struct BucketResult {
    /// The bucket's label values, in the order of the `by` labels (an
    /// object `{ label: value }` in JavaScript).
    #[serde(rename = "bucket", serialize_with = "pairs_as_object")]
    #[cfg_attr(feature = "typescript", tsify(type = "Record<string, string>"))]
    pub labels: Vec<(String, String)>,
    /// Successful calls the percentiles come from.
    pub n: u64,
    /// The median of the successes, in ms (`p50` in JS).
    #[serde(rename = "p50")]
    pub p50_ms: Option<f64>,
    /// The 90th percentile, in ms (`p90` in JS).
    #[serde(rename = "p90")]
    pub p90_ms: Option<f64>,
    /// The 99th percentile, in ms (`p99` in JS).
    #[serde(rename = "p99")]
    pub p99_ms: Option<f64>,
    /// The 99.9th percentile, in ms (`p999` in JS).
    #[serde(rename = "p999")]
    pub p999_ms: Option<f64>,
    /// The percentile at `q`.
    pub quantile_ms: Option<f64>,
    /// `quantile_ms × safety`; `None` without successes.
    pub timeout_ms: Option<f64>,
    /// The target quantile, in `(0, 1)`.
    pub q: f64,
    /// The factor the percentile is multiplied by, `1 ..= MAX_SAFETY`.
    pub safety: f64,
    /// Calls left out of the percentiles (timeouts and errors).
    pub excluded: Excluded,
    /// A gap between a fast body and a slow tail, when the samples show one.
    pub tail: Option<TailShape>,
    /// Timeouts worth comparing, each with its false-timeout rate.
    pub candidates: Vec<Candidate>,
    /// What the reader should know about this derivation.
    #[cfg_attr(feature = "typescript", tsify(type = "DerivedWarning[]"))]
    pub warnings: Vec<Warning>,
}

/// The distribution a bucket's percentiles are read from.
enum Dist<'a> {
    Sketch(&'a LatencySketch),
    Hist(&'a Histogram),
}

impl Dist<'_> {
    fn n(&self) -> u64 {
        match self {
            Dist::Sketch(s) => s.count(),
            Dist::Hist(h) => count_of(h.total()),
        }
    }

    fn quantile(&self, q: f64) -> Option<f64> {
        match self {
            Dist::Sketch(s) => s.quantile(q).ok().flatten(),
            Dist::Hist(h) => h.quantile(q).map(|b| b.ms),
        }
    }

    fn above(&self, t: f64) -> Option<f64> {
        match self {
            Dist::Sketch(s) => s.fraction_above(t).ok().flatten(),
            Dist::Hist(h) => h.fraction_above(t),
        }
    }
}

/// A non-negative float count as an integer (histogram counts may be
/// fractional after `increase()`); saturates instead of wrapping.
fn count_of(x: f64) -> u64 {
    if x.is_nan() || x <= 0.0 {
        0
    } else if x >= 1.8e19 {
        u64::MAX
    } else {
        x.round() as u64
    }
}

/// Counts successes within `±w` (relative) of `center` and in the band of
/// the same width just below, from the sketch's `bins`.
fn pile_up(s: &LatencySketch, bins: &[Bin], center: f64, configured: bool) -> Option<Warning> {
    let w = (3.0 * s.relative_error()).max(0.03);
    let (band_lo, band_hi) = (center / (1.0 + w), center * (1.0 + w));
    let below_lo = band_lo / ((1.0 + w) * (1.0 + w));
    let (mut band, mut below) = (0u64, 0u64);
    for b in bins {
        if b.ms >= band_lo && b.ms <= band_hi {
            band += b.count;
        } else if b.ms >= below_lo && b.ms < band_lo {
            below += b.count;
        }
    }
    let n = s.count();
    let big = band >= 5 && band as f64 >= 0.001 * n as f64 && band as f64 <= 0.5 * n as f64;
    (big && band >= 3 * (below + 1)).then(|| Warning::PileUp {
        at_ms: center,
        count: band,
        share: band as f64 / n as f64,
        configured,
    })
}

fn finish(
    labels: Vec<(String, String)>,
    dist: Option<Dist<'_>>,
    excluded: Excluded,
    opts: &DeriveOptions,
    bounds: &mut BoundCache,
) -> BucketResult {
    let mut warnings = Vec::new();
    let n = dist.as_ref().map_or(0, Dist::n);
    let at = |q: f64| dist.as_ref().and_then(|d| d.quantile(q));
    let quantile_ms = at(opts.q);
    let timeout_ms = quantile_ms.map(|v| (v * opts.safety).min(MAX_MS));
    let (p99, p999) = (at(0.99), at(0.999));

    if n == 0 {
        warnings.push(Warning::NoSuccesses);
    } else {
        let needed = samples_needed(opts.q);
        if (n as f64) < needed {
            warnings.push(Warning::SmallSample { n, needed: count_of(needed), q: opts.q });
        }
    }
    let attempted = n.saturating_add(excluded.timeouts);
    if excluded.timeouts > 0 && excluded.timeouts as f64 > (1.0 - opts.q) * attempted as f64 {
        warnings.push(Warning::Censored {
            timeouts: excluded.timeouts,
            share: excluded.timeouts as f64 / attempted as f64,
            q: opts.q,
        });
    }
    let mut tail = None;
    match &dist {
        Some(Dist::Sketch(s)) if n > 0 => {
            // Read once, through the bounds shared by the buckets derived
            // together: inverting bucket bounds is most of a derivation's work.
            let bins = s.bins_with(bounds);
            let center = opts.configured_ms.or(s.max());
            if let Some(w) =
                center.filter(|&c| c > 0.0).and_then(|c| pile_up(s, &bins, c, opts.configured_ms.is_some()))
            {
                warnings.push(w);
            }
            // Every reported percentile, not only the target one: a p50 read
            // from merged buckets is as wrong as a p99 would be.
            if let Some(below) = s.collapsed_below_ms() {
                let mut quantiles: Vec<f64> = [0.5, 0.9, 0.99, 0.999, opts.q]
                    .into_iter()
                    .filter(|&q| at(q).is_some_and(|v| v <= below))
                    .collect();
                // Short and nearly sorted; no std sort in the Wasm build for five numbers.
                prom::insertion_sort_by(&mut quantiles, |a, b| a < b);
                quantiles.dedup();
                if !quantiles.is_empty() {
                    warnings.push(Warning::Collapsed { below_ms: below, quantiles });
                }
            }
            tail = tail_shape(&bins);
        }
        Some(Dist::Hist(h)) => {
            if h.unit == Unit::Unknown {
                warnings.push(Warning::UnitAssumed { metric: h.name.clone() });
            }
            if let Some(b) = h.quantile(opts.q) {
                if b.above_largest {
                    warnings.push(Warning::AboveLargestBucket { q: opts.q, bound_ms: b.ms });
                } else if b.hi_ms - b.lo_ms > RESOLUTION_LIMIT * b.hi_ms {
                    warnings.push(Warning::Resolution { q: opts.q, lo_ms: b.lo_ms, hi_ms: b.hi_ms });
                }
            }
        }
        _ => {}
    }
    if let (Some(c), Some(m)) = (opts.configured_ms, quantile_ms) {
        if m > 0.0 {
            let ratio = c / m;
            if !(1.0 / DRIFT_FACTOR..=DRIFT_FACTOR).contains(&ratio) {
                warnings.push(Warning::Drift { configured_ms: c, measured_ms: m, ratio, q: opts.q });
            }
        }
    }

    let mut candidates = Vec::new();
    if let Some(d) = &dist {
        let mut push = |name: &str, t: Option<f64>| {
            if let Some(t) = t {
                if let Some(r) = d.above(t) {
                    candidates.push(Candidate { name: name.to_string(), timeout_ms: t, false_timeout_rate: r });
                }
            }
        };
        push("p99", p99);
        push("2xp99", p99.map(|v| (2.0 * v).min(MAX_MS)));
        push("p99.9", p999);
        push("configured", opts.configured_ms);
        push("above body", tail.map(|t: TailShape| t.recommended_ms));
    }

    BucketResult {
        labels,
        n,
        p50_ms: at(0.5),
        p90_ms: at(0.9),
        p99_ms: p99,
        p999_ms: p999,
        quantile_ms,
        timeout_ms,
        q: opts.q,
        safety: opts.safety,
        excluded,
        tail,
        candidates,
        warnings,
    }
}

/// Derives one bucket from a sketch of successful durations.
pub fn derive_sketch(
    sketch: &LatencySketch,
    excluded: Excluded,
    opts: &DeriveOptions,
) -> Result<BucketResult, DeriveError> {
    derive_sketch_with(sketch, excluded, opts, &mut BoundCache::default())
}

/// [`derive_sketch`], the sketch's bucket bounds read through `bounds` (one
/// cache for many buckets of one relative error: each bound inverted once).
pub fn derive_sketch_with(
    sketch: &LatencySketch,
    excluded: Excluded,
    opts: &DeriveOptions,
    bounds: &mut BoundCache,
) -> Result<BucketResult, DeriveError> {
    opts.validate()?;
    Ok(finish(Vec::new(), Some(Dist::Sketch(sketch)), excluded, opts, bounds))
}

/// Derives one bucket from raw successful durations (all validated; a bad
/// one is an error naming its index).
pub fn derive_samples(samples: &[f64], opts: &DeriveOptions) -> Result<BucketResult, DeriveError> {
    opts.validate()?;
    let mut s = LatencySketch::new(opts.relative_error).map_err(DeriveError::Sketch)?;
    s.add_all(samples).map_err(DeriveError::Sketch)?;
    Ok(finish(Vec::new(), Some(Dist::Sketch(&s)), Excluded::default(), opts, &mut BoundCache::default()))
}

struct Group {
    /// The label values, in the order of `by`: the sort and lookup key.
    values: Vec<String>,
    sketch: LatencySketch,
    excluded: Excluded,
}

/// Streaming derivation of raw rows, grouped by label values, in memory
/// bounded by [`MAX_GROUPS`] sketches whatever the number of rows.
pub struct Deriver {
    opts: DeriveOptions,
    by: Vec<String>,
    /// Sorted by label values (a sorted `Vec` rather than a `BTreeMap`: at most
    /// [`MAX_GROUPS`] entries, and less code in the Wasm build).
    groups: Vec<Group>,
}

impl Deriver {
    /// `by` names the labels rows are grouped by (may be empty: one bucket).
    pub fn new(opts: DeriveOptions, by: Vec<String>) -> Result<Deriver, DeriveError> {
        opts.validate()?;
        Ok(Deriver { opts, by, groups: Vec::new() })
    }

    /// The options this deriver was created with.
    pub fn options(&self) -> &DeriveOptions {
        &self.opts
    }

    /// Adds one call: `labels` in the order of `by`. A success needs a valid
    /// duration; a timeout or error is counted, and its duration (if any) is
    /// validated but not used. On error nothing is recorded.
    pub fn add(&mut self, labels: &[&str], outcome: Outcome, ms: Option<f64>) -> Result<(), DeriveError> {
        if labels.len() != self.by.len() {
            return Err(DeriveError::Labels { expected: self.by.len(), got: labels.len() });
        }
        let ms =
            match ms {
                Some(v) => Some(check_ms("ms", v).map_err(|error| {
                    DeriveError::Sketch(SketchError::Sample { root: "samples", index: None, error })
                })?),
                None if outcome == Outcome::Success => return Err(DeriveError::MissingDuration),
                None => None,
            };
        let at = match self.groups.binary_search_by(|g| g.values.iter().map(String::as_str).cmp(labels.iter().copied()))
        {
            Ok(i) => i,
            Err(i) => {
                if self.groups.len() >= MAX_GROUPS {
                    return Err(DeriveError::Groups { limit: MAX_GROUPS });
                }
                let sketch = LatencySketch::new(self.opts.relative_error).map_err(DeriveError::Sketch)?;
                let values = labels.iter().map(|l| l.to_string()).collect();
                self.groups.insert(i, Group { values, sketch, excluded: Excluded::default() });
                i
            }
        };
        let g = &mut self.groups[at];
        match (outcome, ms) {
            (Outcome::Success, Some(v)) => g.sketch.add(v).map_err(DeriveError::Sketch)?,
            (Outcome::Timeout, _) => g.excluded.timeouts += 1,
            (Outcome::Error, _) => g.excluded.errors += 1,
            (Outcome::Success, None) => {}
        }
        Ok(())
    }

    /// The number of buckets seen so far.
    pub fn buckets(&self) -> usize {
        self.groups.len()
    }

    /// One result per bucket, ordered by label values.
    pub fn results(&self) -> Vec<BucketResult> {
        let mut bounds = BoundCache::default();
        self.groups
            .iter()
            .map(|g| {
                let labels = self.by.iter().cloned().zip(g.values.iter().cloned()).collect();
                let dist = (!g.sketch.is_empty()).then_some(Dist::Sketch(&g.sketch));
                finish(labels, dist, g.excluded, &self.opts, &mut bounds)
            })
            .collect()
    }
}

/// Derives from Prometheus histogram series, summing the series of each
/// bucket (the values of the `by` labels; an absent label is `""`). With an
/// `outcome_label`, series whose value is a timeout or an error are excluded
/// and counted, and series without the label count as successes.
pub fn derive_histograms(
    hists: &[Histogram],
    by: &[&str],
    outcome_label: Option<&str>,
    opts: &DeriveOptions,
) -> Result<Vec<BucketResult>, DeriveError> {
    opts.validate()?;
    // Sorted by label values: (values, successes, timed-out count, error count).
    type Acc = (Vec<String>, Option<Histogram>, f64, f64);
    let mut groups: Vec<Acc> = Vec::new();
    for h in hists {
        let key: Vec<String> = by.iter().map(|b| h.label(b).to_string()).collect();
        let outcome = match outcome_label {
            Some(l) if h.labels.iter().any(|(k, _)| k == l) => {
                let v = h.label(l);
                Outcome::parse(v).ok_or_else(|| DeriveError::Outcome { value: v.to_string(), series: h.series() })?
            }
            _ => Outcome::Success,
        };
        let at = match groups.binary_search_by(|g| g.0.cmp(&key)) {
            Ok(i) => i,
            Err(i) => {
                if groups.len() >= MAX_GROUPS {
                    return Err(DeriveError::Groups { limit: MAX_GROUPS });
                }
                groups.insert(i, (key, None, 0.0, 0.0));
                i
            }
        };
        let g = &mut groups[at];
        match outcome {
            Outcome::Success => match &mut g.1 {
                Some(acc) => acc.merge(h).map_err(DeriveError::Prom)?,
                None => g.1 = Some(h.clone()),
            },
            Outcome::Timeout => g.2 += h.total(),
            Outcome::Error => g.3 += h.total(),
        }
    }
    Ok(groups
        .into_iter()
        .map(|(key, h, timeouts, errors)| {
            let labels = by.iter().map(|b| b.to_string()).zip(key).collect();
            let excluded = Excluded { timeouts: count_of(timeouts), errors: count_of(errors) };
            finish(labels, h.as_ref().map(Dist::Hist), excluded, opts, &mut BoundCache::default())
        })
        .collect())
}

/// Parses the text exposition format and derives from the histogram named
/// `metric` (or the only one present).
pub fn derive_exposition(
    text: &str,
    metric: Option<&str>,
    by: &[&str],
    outcome_label: Option<&str>,
    opts: &DeriveOptions,
) -> Result<Vec<BucketResult>, DeriveError> {
    opts.validate()?;
    let hists = prom::histograms_in_text(text, metric).map_err(DeriveError::Prom)?;
    derive_histograms(&hists, by, outcome_label, opts)
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests;
