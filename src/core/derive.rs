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
//! tail ([`tail`]); when one is found, its edge, its share and a value just
//! above the body are reported next to the false-timeout rates of the usual
//! candidates (p99, 2×p99, p99.9, the configured value).
//!
//! # Invariants (each is a test below)
//! 1. `timeout_ms = quantile_ms × safety` and `p50 <= p90 <= p99 <= p99.9`;
//!    nothing is NaN, infinite or negative.
//! 2. Only successes enter the quantiles: adding timeouts and errors changes
//!    the excluded counts and the warnings, never the percentiles.
//! 3. Grouping is exact: a bucket's result equals deriving its rows alone.
//! 4. Bad options and bad samples are errors naming the parameter; an empty
//!    bucket yields `None` values and a warning, never a zero timeout.
//! 5. From histograms, the derived percentile lies inside the bucket holding
//!    the exact percentile of the raw data (within bucket resolution).

use core::fmt;

use serde::{Deserialize, Serialize, Serializer};

use crate::core::deadline::{check_ms, DeadlineError, MAX_MS};
use crate::core::error::{Described, Kind};
use crate::core::prom;
use crate::core::sketch::{LatencySketch, SketchError, DEFAULT_RELATIVE_ERROR};

use crate::core::prom::{Histogram, PromError, Unit};
use crate::core::tail::{tail_shape, TailShape};

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
/// From histograms, a percentile whose bucket is wider than this share of
/// its upper bound is flagged as limited by resolution.
pub const RESOLUTION_LIMIT: f64 = 0.05;

/// How a call ended. Only successes describe healthy latency.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Success,
    Timeout,
    Error,
}

impl Outcome {
    /// The accepted spellings, for messages.
    pub const ACCEPTED: &'static str =
        "success, ok, succeeded, true (successes); timeout, timed_out, deadline_exceeded (timeouts); error, err, fail, failed, failure, false, cancelled (errors)";

    /// [`Outcome::parse`] of a row's `field`, or the error naming it.
    pub fn of_field(field: &str, value: &str) -> Result<Outcome, DeriveError> {
        Outcome::parse(value).ok_or_else(|| DeriveError::RowOutcome { field: field.into(), value: value.into() })
    }

    /// Reads an outcome, case-insensitively; `None` for anything else.
    pub fn parse(s: &str) -> Option<Outcome> {
        let s = s.trim();
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
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
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
    Quantile { value: f64 },
    /// `safety` must be between 1 and [`MAX_SAFETY`]: below 1 the timeout
    /// would be shorter than the percentile it came from.
    Safety { value: f64 },
    /// The configured timeout is not a valid duration.
    Configured(DeadlineError),
    /// A sample or the relative error was refused by the sketch.
    Sketch(SketchError),
    /// A row has a different number of label values than there are `by`
    /// labels.
    Labels { expected: usize, got: usize },
    /// More than [`MAX_GROUPS`] distinct buckets: group by fewer labels.
    Groups { limit: usize },
    /// A success sample had no duration.
    MissingDuration,
    /// A histogram's outcome label has a value that is not an outcome.
    Outcome { value: String, series: String },
    /// The Prometheus input was refused.
    Prom(PromError),
    /// A row's outcome field (`field`, the `outcome` option) holds a word
    /// that is not an outcome.
    RowOutcome { field: String, value: String },
    /// Row `index` (0-based, of the caller's array) was refused.
    Row { index: usize, error: Box<DeriveError> },
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
}

impl fmt::Display for DeriveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Quantile { value } => {
                write!(f, "'q' must be greater than 0 and less than 1 (0.99 for p99): current value is {value}")
            }
            Self::Safety { value } => {
                write!(f, "'safety' must be between 1 and {MAX_SAFETY}: current value is {value}")
            }
            Self::Configured(e) => write!(f, "{e}"),
            Self::Sketch(e) => write!(f, "{e}"),
            Self::Labels { expected, got } => {
                write!(f, "expected {expected} label values (one per 'by' label), got {got}")
            }
            Self::Groups { limit } => {
                write!(f, "more than {limit} distinct buckets: group by fewer labels or coarser values")
            }
            Self::MissingDuration => write!(f, "a successful call needs a duration in milliseconds"),
            Self::Outcome { value, series } => {
                write!(f, "outcome '{value}' of {series} is not one of: {}", Outcome::ACCEPTED)
            }
            Self::Prom(e) => write!(f, "{e}"),
            Self::RowOutcome { field, value } => {
                write!(f, "'{field}' must be one of {}: current value is \"{value}\"", Outcome::ACCEPTED)
            }
            Self::Row { index, error } => write!(f, "row {index}: {error}"),
        }
    }
}

impl std::error::Error for DeriveError {}

/// Calls left out of the quantiles.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub struct Excluded {
    pub timeouts: u64,
    pub errors: u64,
}

/// Something the reader of a derived timeout should know.
#[derive(Debug, Clone, PartialEq)]
pub enum Warning {
    /// No successful calls: nothing to derive from.
    NoSuccesses,
    /// Fewer than `needed` samples for `q`.
    SmallSample { n: u64, needed: u64, q: f64 },
    /// More calls timed out than lie beyond the percentile: the successes
    /// are censored at the timeout in force.
    Censored { timeouts: u64, share: f64, q: f64 },
    /// Successes pile up at `at_ms`, as timed-out calls logged as successes do.
    PileUp { at_ms: f64, count: u64, share: f64, configured: bool },
    /// The configured timeout is more than [`DRIFT_FACTOR`] from the
    /// measured percentile.
    Drift { configured_ms: f64, measured_ms: f64, ratio: f64, q: f64 },
    /// From buckets, the percentile is only known to lie in `lo_ms..hi_ms`.
    Resolution { q: f64, lo_ms: f64, hi_ms: f64 },
    /// From buckets, the percentile is above the largest finite bound.
    AboveLargestBucket { q: f64, bound_ms: f64 },
    /// A histogram's name has no unit suffix; values were read as ms.
    UnitAssumed { metric: String },
    /// The sketch collapsed its low buckets to bound memory, and these
    /// reported percentiles (`q` values, ascending: p50, p90, p99, p99.9 and
    /// the target `q`) lie among them: each is only an upper bound, not within
    /// the relative error.
    Collapsed { below_ms: f64, quantiles: Vec<f64> },
}

/// The stable identifiers of [`Warning`]s (the JS API's `warnings[i].code`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub enum WarningCode {
    NoSuccesses,
    SmallSample,
    Censored,
    PileUp,
    Drift,
    Resolution,
    AboveLargestBucket,
    UnitAssumed,
    Collapsed,
}

/// One warning as the JS API gives it: `{ code, message }`.
#[derive(Serialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub struct DerivedWarning {
    #[cfg_attr(target_arch = "wasm32", tsify(type = "WarningCode"))]
    pub code: &'static str,
    pub message: String,
}

impl Serialize for Warning {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        DerivedWarning { code: self.code(), message: self.to_string() }.serialize(s)
    }
}

impl Warning {
    /// A stable identifier, for programs (a [`WarningCode`]'s serde name).
    pub fn code(&self) -> &'static str {
        match self {
            Self::NoSuccesses => "no-successes",
            Self::SmallSample { .. } => "small-sample",
            Self::Censored { .. } => "censored",
            Self::PileUp { .. } => "pile-up",
            Self::Drift { .. } => "drift",
            Self::Resolution { .. } => "resolution",
            Self::AboveLargestBucket { .. } => "above-largest-bucket",
            Self::UnitAssumed { .. } => "unit-assumed",
            Self::Collapsed { .. } => "collapsed",
        }
    }
}

/// `0.99` → `"p99"`, `0.999` → `"p99.9"`.
pub fn percentile_name(q: f64) -> String {
    format!("p{}", (q * 100.0 * 1e6).round() / 1e6)
}

fn calls(n: u64, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "call" } else { "calls" })
}

fn pct(share: f64) -> String {
    format!("{}%", (share * 100.0 * 1000.0).round() / 1000.0)
}

fn ms(v: f64) -> String {
    let r = if v >= 100.0 { v.round() } else { (v * 100.0).round() / 100.0 };
    format!("{r} ms")
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoSuccesses => write!(f, "no successful calls: nothing to derive a timeout from"),
            Self::SmallSample { n, needed, q } => write!(
                f,
                "only {}: {} needs at least {needed} (10 beyond the percentile) for a stable estimate",
                calls(*n, "successful "),
                percentile_name(*q)
            ),
            Self::Censored { timeouts, share, q } => write!(
                f,
                "{} ({}) timed out, more than the {} beyond {}: the successes are cut off at the timeout in force, so this value is too small and re-deriving would ratchet it down; raise the timeout, measure again, then derive",
                calls(*timeouts, ""),
                pct(*share),
                pct(1.0 - q),
                percentile_name(*q)
            ),
            Self::PileUp { at_ms, count, share, configured } => write!(
                f,
                "{} ({}) pile up at {}{}: timed-out calls may be logged as successes, which censors the data; record the outcome and exclude them",
                calls(*count, "successful "),
                pct(*share),
                ms(*at_ms),
                if *configured { ", the configured timeout" } else { ", the largest value, which looks like a timeout in force" }
            ),
            Self::Drift { configured_ms, measured_ms, ratio, q } => {
                let p = percentile_name(*q);
                if *ratio > 1.0 {
                    write!(f, "the configured {} is {:.1}x the measured {p} ({}): a hang holds the request that long and it protects nothing during an outage", ms(*configured_ms), ratio, ms(*measured_ms))
                } else {
                    write!(f, "the configured {} is {:.2}x the measured {p} ({}): it fails healthy calls", ms(*configured_ms), ratio, ms(*measured_ms))
                }
            }
            Self::Resolution { q, lo_ms, hi_ms } => write!(
                f,
                "{} lies in the bucket {}..{}: the interpolated value may be off by up to {}; add bucket bounds around it",
                percentile_name(*q),
                ms(*lo_ms),
                ms(*hi_ms),
                ms(hi_ms - lo_ms)
            ),
            Self::AboveLargestBucket { q, bound_ms } => write!(
                f,
                "{} is above the largest finite bucket bound ({}): reported as that bound, a lower bound of the true value; add larger buckets",
                percentile_name(*q),
                ms(*bound_ms)
            ),
            Self::UnitAssumed { metric } => write!(
                f,
                "'{metric}' has no unit suffix (_seconds, _milliseconds): its values were read as milliseconds"
            ),
            Self::Collapsed { below_ms, quantiles } => {
                for (i, &q) in quantiles.iter().enumerate() {
                    write!(f, "{}{}", if i > 0 { ", " } else { "" }, percentile_name(q))?;
                }
                let one = quantiles.len() == 1;
                write!(
                    f,
                    " {} at or below {}, where the sketch merged its lowest buckets to bound memory: {} only an upper bound, not within 'relativeError'; use a larger 'relativeError' (the default 0.01 spans about 10^13×)",
                    if one { "lies" } else { "lie" },
                    ms(*below_ms),
                    if one { "it is" } else { "each is" }
                )
            }
        }
    }
}

/// A candidate timeout and how many healthy calls it would have failed.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub struct Candidate {
    /// `"p99"`, `"2xp99"`, `"p99.9"`, `"configured"`, `"above body"`.
    pub name: String,
    pub timeout_ms: f64,
    pub false_timeout_rate: f64,
}

/// One bucket's derivation; `null` in JavaScript where there is no value.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify), tsify(missing_as_null, hashmap_as_object))]
pub struct BucketResult {
    /// The bucket's label values, in the order of the `by` labels (an
    /// object `{ label: value }` in JavaScript).
    #[serde(rename = "bucket", serialize_with = "pairs_as_object")]
    #[cfg_attr(target_arch = "wasm32", tsify(type = "Record<string, string>"))]
    pub labels: Vec<(String, String)>,
    /// Successful calls the percentiles come from.
    pub n: u64,
    #[serde(rename = "p50")]
    pub p50_ms: Option<f64>,
    #[serde(rename = "p90")]
    pub p90_ms: Option<f64>,
    #[serde(rename = "p99")]
    pub p99_ms: Option<f64>,
    #[serde(rename = "p999")]
    pub p999_ms: Option<f64>,
    /// The percentile at `q`.
    pub quantile_ms: Option<f64>,
    /// `quantile_ms × safety`; `None` without successes.
    pub timeout_ms: Option<f64>,
    pub q: f64,
    pub safety: f64,
    pub excluded: Excluded,
    pub tail: Option<TailShape>,
    pub candidates: Vec<Candidate>,
    #[cfg_attr(target_arch = "wasm32", tsify(type = "DerivedWarning[]"))]
    pub warnings: Vec<Warning>,
}

/// `[(k, v)]` as `{ k: v }`, in order.
pub(crate) fn pairs_as_object<S: Serializer>(pairs: &[(String, String)], s: S) -> Result<S::Ok, S::Error> {
    s.collect_map(pairs.iter().map(|(k, v)| (k, v)))
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
/// the same width just below, from sketch bins.
fn pile_up(s: &LatencySketch, center: f64, configured: bool) -> Option<Warning> {
    let w = (3.0 * s.relative_error()).max(0.03);
    let (band_lo, band_hi) = (center / (1.0 + w), center * (1.0 + w));
    let below_lo = band_lo / ((1.0 + w) * (1.0 + w));
    let (mut band, mut below) = (0u64, 0u64);
    for b in s.bins() {
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
        let needed = (SAMPLES_BEYOND / (1.0 - opts.q)).ceil();
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
            let center = opts.configured_ms.or(s.max());
            if let Some(w) = center.filter(|&c| c > 0.0).and_then(|c| pile_up(s, c, opts.configured_ms.is_some())) {
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
            tail = tail_shape(&s.bins());
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
    opts.validate()?;
    Ok(finish(Vec::new(), Some(Dist::Sketch(sketch)), excluded, opts))
}

/// Derives one bucket from raw successful durations (all validated; a bad
/// one is an error naming its index).
pub fn derive_samples(samples: &[f64], opts: &DeriveOptions) -> Result<BucketResult, DeriveError> {
    opts.validate()?;
    let mut s = LatencySketch::new(opts.relative_error).map_err(DeriveError::Sketch)?;
    s.add_all(samples).map_err(DeriveError::Sketch)?;
    Ok(finish(Vec::new(), Some(Dist::Sketch(&s)), Excluded::default(), opts))
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
        self.groups
            .iter()
            .map(|g| {
                let labels = self.by.iter().cloned().zip(g.values.iter().cloned()).collect();
                let dist = (!g.sketch.is_empty()).then_some(Dist::Sketch(&g.sketch));
                finish(labels, dist, g.excluded, &self.opts)
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
            finish(labels, h.as_ref().map(Dist::Hist), excluded, opts)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::prom::{histograms, histograms_in_text, parse_text, Loc, TextHistograms, MAX_TEXT_BYTES};
    use crate::core::simulate::{Sampler, Scenario};
    use crate::core::sketch::tests::Gen;
    use crate::core::sketch::{rank_index, Bin};
    use crate::core::tail::{self, false_timeout_rate, tail_shape, tail_shape_of};
    use proptest::prelude::*;

    fn lognormal(n: usize, seed: u64, sigma: f64) -> Vec<f64> {
        let mut g = Gen(seed);
        (0..n).map(|_| 40.0 * (sigma * g.normal()).exp()).collect()
    }

    fn seed_003(n: usize) -> Vec<f64> {
        let s = Sampler::new(&Scenario::seed_003()).unwrap();
        (0..n as u64).map(|i| s.draw(i, 0)).collect()
    }

    fn has(r: &BucketResult, code: &str) -> bool {
        r.warnings.iter().any(|w| w.code() == code)
    }

    #[test]
    fn warning_codes_are_the_serde_names_of_warning_code() {
        // WarningCode's TypeScript union comes from its serde names (kebab-case).
        let kebab = |c: WarningCode| {
            let mut out = String::new();
            for (i, ch) in format!("{c:?}").chars().enumerate() {
                if ch.is_ascii_uppercase() && i > 0 {
                    out.push('-');
                }
                out.push(ch.to_ascii_lowercase());
            }
            out
        };
        let pairs = [
            (WarningCode::NoSuccesses, Warning::NoSuccesses),
            (WarningCode::SmallSample, Warning::SmallSample { n: 1, needed: 2, q: 0.99 }),
            (WarningCode::Censored, Warning::Censored { timeouts: 1, share: 0.5, q: 0.99 }),
            (WarningCode::PileUp, Warning::PileUp { at_ms: 1.0, count: 1, share: 0.1, configured: true }),
            (WarningCode::Drift, Warning::Drift { configured_ms: 1.0, measured_ms: 3.0, ratio: 3.0, q: 0.99 }),
            (WarningCode::Resolution, Warning::Resolution { q: 0.99, lo_ms: 1.0, hi_ms: 2.0 }),
            (WarningCode::AboveLargestBucket, Warning::AboveLargestBucket { q: 0.99, bound_ms: 1.0 }),
            (WarningCode::UnitAssumed, Warning::UnitAssumed { metric: "m".into() }),
            (WarningCode::Collapsed, Warning::Collapsed { below_ms: 1.0, quantiles: vec![0.5] }),
        ];
        for (code, w) in pairs {
            assert_eq!(kebab(code), w.code());
        }
    }

    #[test]
    fn errors_name_the_parameter_as_the_js_caller_wrote_it() {
        let opts = |f: fn(&mut DeriveOptions)| {
            let mut o = DeriveOptions::default();
            f(&mut o);
            o.validate().unwrap_err()
        };
        let q = opts(|o| o.q = 1.0);
        assert_eq!((q.code(), q.param().as_deref()), ("OUT_OF_RANGE", Some("options.q")));
        let c = opts(|o| o.configured_ms = Some(-1.0));
        assert_eq!((c.code(), c.param().as_deref()), ("NEGATIVE", Some("options.configuredMs")));
        let r = opts(|o| o.relative_error = 0.0);
        assert_eq!(r.param().as_deref(), Some("options.relativeError"));

        let mut d = Deriver::new(DeriveOptions::default(), vec!["model".into()]).unwrap();
        let e = d.add(&["a"], Outcome::Timeout, Some(f64::NAN)).unwrap_err().at_row(3);
        assert_eq!((e.code(), e.param().as_deref()), ("NOT_FINITE", Some("data[3].ms")));
        assert!(e.to_string().starts_with("row 3: 'ms' must be a finite number"), "{e}");
        let e = Outcome::of_field("result", "maybe").unwrap_err().at_row(7);
        assert_eq!((e.code(), e.param().as_deref()), ("UNKNOWN_OUTCOME", Some("data[7].result")));
        let e = d.add(&[], Outcome::Success, Some(1.0)).unwrap_err().at_row(0);
        assert_eq!((e.code(), e.param().as_deref()), ("LABEL_COUNT", Some("data[0]")));
        let e = derive_samples(&[1.0, -1.0], &DeriveOptions::default()).unwrap_err();
        assert_eq!((e.code(), e.param().as_deref()), ("NEGATIVE", Some("data[1]")));
        assert_eq!(e.kind(), Kind::Range);
    }

    #[test]
    fn known_answer_exact_and_sketched() {
        // 1..=100 ms: p99 is the 99th value (rank 98), exactly, below 256 samples.
        let xs: Vec<f64> = (1..=100).map(f64::from).collect();
        let r = derive_samples(&xs, &DeriveOptions::default()).unwrap();
        assert_eq!(
            (r.p50_ms, r.p99_ms, r.quantile_ms, r.timeout_ms),
            (Some(50.0), Some(99.0), Some(99.0), Some(198.0))
        );
        assert!(has(&r, "small-sample"), "{:?}", r.warnings);
        assert!(r.warnings[0].to_string().contains("p99 needs at least 1000"), "{}", r.warnings[0]);
        // 1..=10 000 ms: p99.9 ≈ 9990 within 1%, timeout = that × 1.5.
        let xs: Vec<f64> = (1..=10_000).map(f64::from).collect();
        let opts = DeriveOptions { safety: 1.5, ..DeriveOptions::background() };
        let r = derive_samples(&xs, &opts).unwrap();
        let q = r.quantile_ms.unwrap();
        assert!((q - 9990.0).abs() <= 99.9, "{q}");
        assert_eq!(r.timeout_ms, Some(q * 1.5));
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    }

    #[test]
    fn every_reported_percentile_is_accurate_or_flagged_as_collapsed() {
        // At α = 0.001 the sketch spans only about 21× before it merges its
        // lowest buckets; seed 003's durations span far more, so the median
        // lands among the merged ones.
        let xs = seed_003(20_000);
        let mut sorted = xs.clone();
        sorted.sort_by(f64::total_cmp);
        let exact = |q: f64| sorted[rank_index(q, sorted.len())];
        let opts = DeriveOptions { relative_error: 0.001, ..DeriveOptions::default() };
        let r = derive_samples(&xs, &opts).unwrap();
        let flagged: Vec<f64> = r
            .warnings
            .iter()
            .filter_map(|w| match w {
                Warning::Collapsed { quantiles, .. } => Some(quantiles.clone()),
                _ => None,
            })
            .flatten()
            .collect();
        let mut wrong = 0;
        for (q, v) in [(0.5, r.p50_ms), (0.9, r.p90_ms), (0.99, r.p99_ms), (0.999, r.p999_ms)] {
            let (v, x) = (v.unwrap(), exact(q));
            if (v - x).abs() > 0.001 * x + 1e-6 {
                wrong += 1;
                assert!(flagged.contains(&q), "p{q}: {v} for an exact {x}, not flagged: {:?}", r.warnings);
            }
        }
        assert!(wrong > 0, "the data no longer makes the sketch collapse: pick a wider range");
        let text = r.warnings.iter().find(|w| w.code() == "collapsed").unwrap().to_string();
        assert!(text.starts_with("p50"), "{text}");
        assert!(text.contains("relativeError"), "{text}");
    }

    #[test]
    fn stall_preset_is_p99_gap_times_five() {
        let gaps: Vec<f64> = (1..=100).map(|i| f64::from(i) * 18.0).collect();
        let r = derive_samples(&gaps, &DeriveOptions::stall()).unwrap();
        assert_eq!(r.timeout_ms, Some(99.0 * 18.0 * 5.0));
    }

    #[test]
    fn rejects_bad_options_and_samples() {
        let e = |o: DeriveOptions| derive_samples(&[1.0], &o).unwrap_err().to_string();
        let d = DeriveOptions::default();
        assert_eq!(
            e(DeriveOptions { q: 1.0, ..d }),
            "'q' must be greater than 0 and less than 1 (0.99 for p99): current value is 1"
        );
        assert!(e(DeriveOptions { q: f64::NAN, ..d }).starts_with("'q' must be greater than 0"));
        assert!(e(DeriveOptions { q: 0.0, ..d }).starts_with("'q'"));
        assert_eq!(e(DeriveOptions { safety: 0.5, ..d }), "'safety' must be between 1 and 100: current value is 0.5");
        assert!(e(DeriveOptions { safety: f64::NAN, ..d }).starts_with("'safety'"));
        assert!(e(DeriveOptions { configured_ms: Some(-5.0), ..d }).starts_with("'configuredMs'"));
        assert!(e(DeriveOptions { relative_error: 0.9, ..d }).starts_with("'relativeError'"));
        let bad = derive_samples(&[1.0, f64::NAN], &d).unwrap_err().to_string();
        assert!(bad.starts_with("sample 1: 'ms'"), "{bad}");
        let mut dv = Deriver::new(d, vec!["model".into()]).unwrap();
        assert_eq!(dv.add(&[], Outcome::Success, Some(1.0)), Err(DeriveError::Labels { expected: 1, got: 0 }));
        assert_eq!(dv.add(&["a"], Outcome::Success, None), Err(DeriveError::MissingDuration));
        assert!(dv.add(&["a"], Outcome::Timeout, Some(-1.0)).is_err());
        assert_eq!(dv.buckets(), 0);
    }

    #[test]
    fn empty_and_all_failures_give_none_and_a_warning() {
        let r = derive_samples(&[], &DeriveOptions::default()).unwrap();
        assert_eq!((r.n, r.timeout_ms, r.p99_ms), (0, None, None));
        assert!(has(&r, "no-successes"));
        let mut d = Deriver::new(DeriveOptions::default(), vec![]).unwrap();
        for _ in 0..10 {
            d.add(&[], Outcome::Timeout, Some(5000.0)).unwrap();
            d.add(&[], Outcome::Error, None).unwrap();
        }
        let r = &d.results()[0];
        assert_eq!((r.n, r.timeout_ms, r.excluded), (0, None, Excluded { timeouts: 10, errors: 10 }));
        assert!(has(r, "no-successes") && has(r, "censored"));
    }

    #[test]
    fn only_successes_count_and_grouping_is_exact() {
        let a = lognormal(5000, 1, 0.35);
        let b: Vec<f64> = lognormal(3000, 2, 0.5).iter().map(|x| x * 3.0).collect();
        let mut d = Deriver::new(DeriveOptions::default(), vec!["model".into(), "size".into()]).unwrap();
        for &x in &a {
            d.add(&["m1", "short"], Outcome::Success, Some(x)).unwrap();
            d.add(&["m1", "short"], Outcome::Error, Some(x * 0.1)).unwrap();
        }
        for &x in &b {
            d.add(&["m1", "long"], Outcome::Success, Some(x)).unwrap();
        }
        for _ in 0..20 {
            d.add(&["m1", "long"], Outcome::Timeout, Some(2000.0)).unwrap();
        }
        let rs = d.results();
        assert_eq!(rs.len(), 2);
        // Ordered by label values: (m1, long) < (m1, short).
        let (long, short) = (&rs[0], &rs[1]);
        assert_eq!(long.labels, vec![("model".into(), "m1".into()), ("size".into(), "long".into())]);
        let alone_a = derive_samples(&a, &DeriveOptions::default()).unwrap();
        let alone_b = derive_samples(&b, &DeriveOptions::default()).unwrap();
        assert_eq!((short.p99_ms, short.timeout_ms, short.n), (alone_a.p99_ms, alone_a.timeout_ms, alone_a.n));
        assert_eq!((long.p99_ms, long.timeout_ms, long.n), (alone_b.p99_ms, alone_b.timeout_ms, alone_b.n));
        assert_eq!(short.excluded, Excluded { timeouts: 0, errors: 5000 });
        assert_eq!(long.excluded, Excluded { timeouts: 20, errors: 0 });
        // 20 timeouts of 3020 calls is 0.66%: under the 1% beyond p99, no censoring warning.
        assert!(!has(long, "censored"), "{:?}", long.warnings);
    }

    #[test]
    fn censoring_warnings() {
        // Many labelled timeouts: the successes are cut off at the timeout.
        let mut d = Deriver::new(DeriveOptions::default(), vec![]).unwrap();
        for x in lognormal(2000, 3, 0.35) {
            d.add(&[], Outcome::Success, Some(x.min(100.0))).unwrap();
        }
        for _ in 0..60 {
            d.add(&[], Outcome::Timeout, Some(100.0)).unwrap();
        }
        let r = &d.results()[0];
        let w = r.warnings.iter().find(|w| w.code() == "censored").expect("censored");
        assert!(w.to_string().starts_with("60 calls (2.913%) timed out, more than the 1% beyond p99"), "{w}");

        // Unlabelled timeouts: successes pile up at the configured timeout.
        let mut xs = lognormal(10_000, 4, 0.35);
        xs.iter_mut().take(300).for_each(|x| *x = 250.0);
        let opts = DeriveOptions { configured_ms: Some(250.0), ..DeriveOptions::default() };
        let r = derive_samples(&xs, &opts).unwrap();
        let w = r.warnings.iter().find(|w| w.code() == "pile-up").expect("pile-up");
        assert!(w.to_string().contains("pile up at 250 ms, the configured timeout"), "{w}");
        // ... and at the maximum when nothing is configured.
        let r = derive_samples(&xs, &DeriveOptions::default()).unwrap();
        assert!(has(&r, "pile-up"));
        // No pile-up on clean data of any shape, nor on constant data.
        for clean in
            [lognormal(10_000, 5, 0.35), seed_003(50_000), vec![42.0; 5000], (1..=5000).map(f64::from).collect()]
        {
            let r = derive_samples(&clean, &DeriveOptions::default()).unwrap();
            assert!(!has(&r, "pile-up"), "{:?}", r.warnings);
        }
    }

    #[test]
    fn drift_is_flagged_beyond_two_x() {
        let xs = seed_003(20_000);
        for (configured, flagged) in [(30_000.0, true), (150.0, false), (60.0, false), (40.0, true)] {
            let r = derive_samples(&xs, &DeriveOptions { configured_ms: Some(configured), ..DeriveOptions::default() })
                .unwrap();
            assert_eq!(has(&r, "drift"), flagged, "{configured}: {:?}", r.warnings);
        }
        let r =
            derive_samples(&xs, &DeriveOptions { configured_ms: Some(30_000.0), ..DeriveOptions::default() }).unwrap();
        let text = r.warnings.iter().find(|w| w.code() == "drift").unwrap().to_string();
        assert!(text.starts_with("the configured 30000 ms is 3"), "{text}");
        let c = r.candidates.iter().find(|c| c.name == "configured").unwrap();
        assert_eq!(c.false_timeout_rate, 0.0);
    }

    #[test]
    fn seed_003_tail_shape_and_candidates() {
        // At a million calls the body's extremes reach into the gap: a few
        // stragglers are set aside rather than hiding it.
        for n in [10_000usize, 200_000, 1_000_000] {
            let xs = seed_003(n);
            let r = derive_samples(&xs, &DeriveOptions::default()).unwrap();
            let t = r.tail.expect("the seed's mixture has a gap");
            assert!(t.body_edge_ms > 120.0 && t.body_edge_ms < 215.0, "{t:?}");
            assert!(t.tail_start_ms >= 297.0 && t.tail_start_ms < 330.0, "{t:?}");
            assert!((t.tail_share - 0.005).abs() < 0.0015, "{t:?}");
            assert!(t.body_edge_ms < t.recommended_ms && t.recommended_ms < t.tail_start_ms);
            let rate = |name: &str| r.candidates.iter().find(|c| c.name == name).unwrap().false_timeout_rate;
            assert!((rate("p99") - 0.01).abs() < 0.0015, "{}", rate("p99"));
            assert!((rate("2xp99") - 0.005).abs() < 0.0015);
            assert!((rate("p99.9") - 0.001).abs() < 0.0006);
            let extra = rate("above body") - t.tail_share;
            assert!(extra > -1e-12 && extra <= t.stragglers as f64 / n as f64 + 1e-12, "{extra} {t:?}");
            assert!(t.stragglers as f64 <= n as f64 * tail::STRAGGLERS_PER_SAMPLE);
            // The raw-sample path agrees with the sketch path.
            let raw = tail_shape_of(&xs).unwrap().unwrap();
            assert!((raw.tail_share - t.tail_share).abs() < 0.0005);
            assert_eq!(false_timeout_rate(&xs, 1e9).unwrap(), Some(0.0));
        }
    }

    #[test]
    fn unimodal_data_has_no_gap() {
        for seed in 1..=5u64 {
            let sizes: &[usize] = if seed <= 2 { &[1_000, 100_000, 1_000_000] } else { &[1_000, 100_000] };
            for &n in sizes {
                let mut g = Gen(seed * 1000 + n as u64);
                let sets: Vec<Vec<f64>> = vec![
                    vec![42.0; n],
                    (0..n).map(|_| 1.0 + 999.0 * g.unit()).collect(),
                    (0..n).map(|_| (200.0 + 30.0 * g.normal()).max(0.0)).collect(),
                    lognormal(n, seed, 0.35),
                    lognormal(n, seed + 10, 1.0),
                ];
                for xs in sets {
                    assert_eq!(tail_shape_of(&xs).unwrap(), None, "seed {seed} n {n}");
                    let r = derive_samples(&xs, &DeriveOptions::default()).unwrap();
                    assert_eq!(r.tail, None);
                }
            }
        }
        assert!(tail_shape_of(&[1.0, f64::NAN]).is_err());
        assert!(false_timeout_rate(&[1.0], -1.0).is_err());
        assert_eq!(false_timeout_rate(&[], 1.0), Ok(None));
        assert_eq!(
            tail_shape(&[Bin { ms: 1.0, count: 1000 }, Bin { ms: 100.0, count: 10 }]).map(|t| t.recommended_ms),
            Some(1.1)
        );
    }

    const EXPOSITION: &str = r#"# HELP dependency_latency_seconds Latency of calls to dependencies
# TYPE dependency_latency_seconds histogram
dependency_latency_seconds_bucket{dependency="search",operation="query",outcome="ok",le="0.025"} 100
dependency_latency_seconds_bucket{dependency="search",operation="query",outcome="ok",le="0.05"} 600
dependency_latency_seconds_bucket{dependency="search",operation="query",outcome="ok",le="0.1"} 990
dependency_latency_seconds_bucket{dependency="search",operation="query",outcome="ok",le="+Inf"} 1000
dependency_latency_seconds_sum{dependency="search",operation="query",outcome="ok"} 50.5
dependency_latency_seconds_count{dependency="search",operation="query",outcome="ok"} 1000
dependency_latency_seconds_bucket{dependency="search",operation="query",outcome="timeout",le="0.025"} 0
dependency_latency_seconds_bucket{dependency="search",operation="query",outcome="timeout",le="0.05"} 0
dependency_latency_seconds_bucket{dependency="search",operation="query",outcome="timeout",le="0.1"} 0
dependency_latency_seconds_bucket{dependency="search",operation="query",outcome="timeout",le="+Inf"} 7 1700000000000
other_metric{a="x\"y\\z\n"} 3
"#;

    #[test]
    fn prometheus_text_with_outcomes_and_units() {
        let rs =
            derive_exposition(EXPOSITION, None, &["dependency"], Some("outcome"), &DeriveOptions::default()).unwrap();
        assert_eq!(rs.len(), 1);
        let r = &rs[0];
        assert_eq!(r.labels, vec![("dependency".to_string(), "search".to_string())]);
        assert_eq!((r.n, r.excluded), (1000, Excluded { timeouts: 7, errors: 0 }));
        // rank 990 is the top of the 0.05..0.1 s bucket: 100 ms exactly.
        assert_eq!(r.p99_ms, Some(100.0));
        // p50: rank 500 in 25..50 ms holding 100..600: 25 + 25 × 400/500 = 45.
        assert_eq!(r.p50_ms, Some(45.0));
        // p99.9 falls in +Inf: reported as the largest bound and flagged.
        assert_eq!(r.p999_ms, Some(100.0));
        assert!(has(r, "resolution"), "{:?}", r.warnings);
        assert!(r.warnings.iter().any(|w| w.to_string() == "p99 lies in the bucket 50 ms..100 ms: the interpolated value may be off by up to 50 ms; add bucket bounds around it"), "{:?}", r.warnings);
        let bg = derive_exposition(
            EXPOSITION,
            Some("dependency_latency_seconds_bucket"),
            &[],
            None,
            &DeriveOptions::background(),
        )
        .unwrap();
        // Without the outcome label the timeouts series counts: 1007 calls.
        assert_eq!(bg[0].n, 1007);
        assert!(has(&bg[0], "above-largest-bucket"));
        let samples = parse_text(EXPOSITION).unwrap();
        let other = samples.iter().find(|s| s.name == "other_metric").unwrap();
        assert_eq!(other.labels, vec![("a".to_string(), "x\"y\\z\n".to_string())]);
        let h = &histograms(&samples, None).unwrap()[0];
        assert_eq!((h.unit, h.sum_ms, h.count), (Unit::Seconds, Some(50_500.0), Some(1000.0)));
        assert_eq!(h.bounds_ms, vec![25.0, 50.0, 100.0, f64::INFINITY]);
        // A histogram assembled by hand past `Histogram::new` answers None, never panics.
        let broken = Histogram { bounds_ms: vec![1.0], cumulative: vec![5.0, 6.0], ..h.clone() };
        assert_eq!((broken.quantile(0.5), broken.fraction_above(1.0)), (None, None));
        // Unknown units are read as ms and flagged.
        let text = "req_latency_bucket{le=\"10\"} 5\nreq_latency_bucket{le=\"+Inf\"} 5\n";
        let r = &derive_exposition(text, None, &[], None, &DeriveOptions::default()).unwrap()[0];
        assert!(has(r, "unit-assumed") && r.p50_ms.unwrap() <= 10.0);
    }

    #[test]
    fn streaming_exposition_parse_equals_collecting_every_sample() {
        let texts = [
            EXPOSITION,
            "x_bucket{le=\"1\"} 5\nx_bucket{le=\"2\"} 3\nx_bucket{le=\"+Inf\"} 9\n",
            "x_bucket{le=\"1\"} 5\n",
            "x_bucket{le=\"abc\"} 5\n",
            "x_bucket{k=\"1\"} 5\nx_bucket{le=\"1\"} 5\nx_bucket{le=\"+Inf\"} 5\n",
            "a_bucket{le=\"1\"} 1\nb_bucket{le=\"1\"} 1\n",
            "up 1\n\n# c\nx_sum 3\nx_count 2\n",
            "x_bucket{le=\"1\"} 5\n9x 1\n",
        ];
        // Series in descending label order: each new one sorts first.
        let mut many = String::new();
        for i in (0..500).rev() {
            many.push_str(&format!(
                "y_bucket{{id=\"{i:04}\",le=\"1\"}} {i}\ny_bucket{{id=\"{i:04}\",le=\"+Inf\"}} {}\n",
                i + 1
            ));
        }
        // In pieces of `k` lines each, as js/derive.js hands text over.
        let in_pieces = |text: &str, metric: Option<&str>, k: usize| {
            let lines: Vec<&str> = text.split_inclusive('\n').collect();
            let pieces: Vec<String> = lines.chunks(k).map(|c| c.concat()).collect();
            let mut parse = TextHistograms::new(metric);
            let mut out = Vec::new();
            if metric.is_none() {
                pieces.iter().try_for_each(|p| parse.scan(p))?;
            }
            pieces.iter().try_for_each(|p| parse.feed(p))?;
            parse.finish(&mut |h| out.push(h)).map(|()| out)
        };
        for text in texts.iter().copied().chain([many.as_str()]) {
            for metric in [None, Some("x"), Some("x_bucket"), Some("a"), Some("y"), Some("zzz")] {
                let collected = parse_text(text).and_then(|s| histograms(&s, metric));
                assert_eq!(histograms_in_text(text, metric), collected, "{metric:?} of {text:?}");
                for k in [1, 2, 7] {
                    assert_eq!(in_pieces(text, metric, k), collected, "pieces of {k} lines, {metric:?} of {text:?}");
                }
            }
        }
        let hs = histograms_in_text(&many, None).unwrap();
        assert_eq!(hs.len(), 500);
        assert!(hs.windows(2).all(|w| w[0].labels < w[1].labels));
        // Too long: refused before any parsing (the text need not even be valid).
        let long = "#".repeat(MAX_TEXT_BYTES + 1);
        let e = histograms_in_text(&long, None).unwrap_err();
        assert_eq!(e, PromError::TooLarge { size: MAX_TEXT_BYTES + 1, unit: "bytes" });
        assert!(e.to_string().starts_with("'input' is 16777217 bytes of exposition text: at most 16777216"), "{e}");
        assert!(histograms_in_text(&long[1..], None).unwrap_err().to_string().starts_with("no histogram"));
    }

    #[test]
    fn prometheus_errors_name_line_and_field() {
        let err = |t: &str| derive_exposition(t, None, &[], None, &DeriveOptions::default()).unwrap_err().to_string();
        assert_eq!(
            err("x_bucket{le=\"1\"} 5\nx_bucket{le=\"2\"} 3\nx_bucket{le=\"+Inf\"} 9\n"),
            "line 2: bucket le=\"2\" of x counts 3, fewer than the 5 of a lower bucket: buckets must be cumulative"
        );
        assert_eq!(
            err("x_bucket{le=\"1\"} 5\n"),
            "histogram x has no le=\"+Inf\" bucket, so its total count is unknown"
        );
        assert!(err("x_bucket{le=\"+Inf\"} 5\n").contains("only the le=\"+Inf\" bucket"));
        assert_eq!(err("\n\nx_bucket{le=\"1} 5\n"), "line 3: label value: value of 'le' has no closing quote");
        assert_eq!(err("x_bucket{le=\"1\"} five\n"), "line 1: value: 'five' is not a number");
        assert_eq!(err("x_bucket{le=1} 5\n"), "line 1: label value: value of 'le' must be quoted");
        assert_eq!(
            err("x_bucket{le=\"1\"} 5 12.5\n"),
            "line 1: timestamp: '12.5' is not an integer number of milliseconds"
        );
        assert!(err("x_bucket{a=\"\\t\"} 5\n").starts_with("line 1: label value: invalid escape '\\t'"));
        assert!(err("9x 5\n").starts_with("line 1: metric name"));
        assert!(err("x_bucket{le=\"abc\"} 5\n").starts_with("line 1: label value: le=\"abc\""));
        assert!(
            err("x_bucket{le=\"1\"} -5\nx_bucket{le=\"+Inf\"} 9\n").starts_with("line 1: bucket count of x must be")
        );
        assert!(
            err("x_bucket{le=\"1\"} 5\nx_bucket{le=\"1.0\"} 5\nx_bucket{le=\"+Inf\"} 5\n").contains("appears twice")
        );
        assert_eq!(
            err("a_bucket{le=\"1\"} 1\nb_bucket{le=\"1\"} 1\n"),
            "several histograms are present (a, b): choose one with 'metric'"
        );
        let e =
            derive_exposition("a_bucket{le=\"1\"} 1\n", Some("zzz"), &[], None, &DeriveOptions::default()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "no histogram named 'zzz' (with *_bucket samples and an le label) was found; histograms present: a"
        );
        assert!(err("up 1\n").starts_with("no histogram"));
        let t = "x_bucket{k=\"a\",le=\"1\"} 1\nx_bucket{k=\"a\",le=\"+Inf\"} 1\nx_bucket{k=\"b\",le=\"2\"} 1\nx_bucket{k=\"b\",le=\"+Inf\"} 1\n";
        assert!(err(t).contains("different bucket bounds"));
        let bad_outcome = "x_bucket{outcome=\"maybe\",le=\"1\"} 1\nx_bucket{outcome=\"maybe\",le=\"+Inf\"} 1\n";
        let e = derive_exposition(bad_outcome, None, &[], Some("outcome"), &DeriveOptions::default()).unwrap_err();
        assert!(e.to_string().starts_with("outcome 'maybe' of x{outcome=\"maybe\"} is not one of"), "{e}");
    }

    #[test]
    fn histogram_agrees_with_raw_within_bucket_resolution() {
        let xs = seed_003(100_000);
        let bounds = [5.0, 10.0, 25.0, 50.0, 75.0, 100.0, 150.0, 250.0, 500.0, 1000.0, 2500.0, 5000.0, 10000.0];
        let mut buckets: Vec<(f64, f64, Loc)> = bounds
            .iter()
            .map(|&b| (b / 1000.0, xs.iter().filter(|&&x| x <= b).count() as f64, Loc { kind: "line", index: 1 }))
            .collect();
        buckets.push((f64::INFINITY, xs.len() as f64, Loc { kind: "line", index: 1 }));
        let h = Histogram::new("lat_seconds", vec![], buckets).unwrap();
        let mut sorted = xs.clone();
        sorted.sort_by(f64::total_cmp);
        let from_h =
            derive_histograms(std::slice::from_ref(&h), &[], None, &DeriveOptions::default()).unwrap().remove(0);
        for (q, got) in [(0.5, from_h.p50_ms), (0.9, from_h.p90_ms), (0.99, from_h.p99_ms), (0.999, from_h.p999_ms)] {
            let exact = sorted[rank_index(q, sorted.len())];
            let b = h.quantile(q).unwrap();
            assert!(exact > b.lo_ms && exact <= b.hi_ms, "q={q}: exact {exact} outside {}..{}", b.lo_ms, b.hi_ms);
            let got = got.unwrap();
            assert!(got >= b.lo_ms && got <= b.hi_ms);
        }
        // false-timeout rates from buckets agree at bucket bounds exactly.
        let above = h.fraction_above(250.0).unwrap();
        assert_eq!(above, xs.iter().filter(|&&x| x > 250.0).count() as f64 / xs.len() as f64);
    }

    #[test]
    fn decimal_parser_matches_std() {
        for t in [
            "0",
            "-0",
            "0.005",
            "0.025",
            ".5",
            "5.",
            "1e3",
            "2.5E-3",
            "+Inf",
            "17",
            "123456789012345678901234",
            "1e-400",
            "1e400",
            "0.1",
            "0.3",
            "1262.75",
            "9007199254740993",
        ] {
            let want: f64 = t.parse().unwrap();
            let got = prom::parse_value(t).unwrap();
            assert!(got == want || (got - want).abs() <= want.abs() * 1e-15, "{t}: {got} vs {want}");
        }
        for bad in ["", ".", "-", "e5", "1e", "1.2.3", "0x10", "1 ", "five", "1e+"] {
            assert_eq!(prom::parse_value(bad), None, "{bad}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        #[test]
        fn decimal_parser_is_exact_on_the_fast_path(m in 0u64..(1 << 53), e in -22i32..=22, neg in any::<bool>()) {
            let t = format!("{}{m}e{e}", if neg { "-" } else { "" });
            prop_assert_eq!(prom::parse_decimal(&t), t.parse::<f64>().ok());
            let d = format!("{}.{:03}", m / 1000, m % 1000);
            prop_assert_eq!(prom::parse_decimal(&d), d.parse::<f64>().ok());
        }

        #[test]
        fn decimal_parser_is_close_elsewhere(x in any::<f64>()) {
            prop_assume!(x.is_finite() && (x == 0.0 || x.abs() > 1e-300));
            let t = format!("{x:e}");
            let got = prom::parse_decimal(&t).unwrap();
            prop_assert!(got == x || ((got - x) / x).abs() <= 1e-14, "{t}: {got} vs {x}");
        }

        #[test]
        fn derived_values_are_consistent(xs in prop::collection::vec(0.0..1e6f64, 0..400),
                                         q in 0.001..0.999f64, safety in 1.0..10.0f64,
                                         configured in prop::option::of(0.0..1e6f64)) {
            let opts = DeriveOptions { q, safety, configured_ms: configured, ..DeriveOptions::default() };
            let r = derive_samples(&xs, &opts).unwrap();
            prop_assert_eq!(r.n, xs.len() as u64);
            match (r.quantile_ms, r.timeout_ms) {
                (Some(v), Some(t)) => prop_assert_eq!(t, v * safety),
                (None, None) => prop_assert!(xs.is_empty()),
                other => prop_assert!(false, "{other:?}"),
            }
            let ps = [r.p50_ms, r.p90_ms, r.p99_ms, r.p999_ms];
            for w in ps.windows(2) {
                prop_assert!(w[0] <= w[1]);
            }
            for v in ps.iter().flatten().chain(r.candidates.iter().map(|c| &c.timeout_ms)) {
                prop_assert!(v.is_finite() && *v >= 0.0);
            }
            for c in &r.candidates {
                prop_assert!((0.0..=1.0).contains(&c.false_timeout_rate));
            }
            if let Some(t) = r.tail {
                prop_assert!(t.body_edge_ms < t.recommended_ms && t.recommended_ms < t.tail_start_ms);
                prop_assert!(t.tail_share > 0.0 && t.tail_share <= tail::MAX_TAIL_SHARE);
            }
        }

        #[test]
        fn histogram_quantiles_monotone_and_bounded(mut counts in prop::collection::vec(0.0..1e6f64, 1..12), q1 in 0.0..=1.0f64, q2 in 0.0..=1.0f64) {
            counts.sort_by(f64::total_cmp);
            let total = counts[counts.len() - 1];
            let mut buckets: Vec<(f64, f64, Loc)> = counts.iter().enumerate().map(|(i, &c)| ((i + 1) as f64, c, Loc { kind: "line", index: i + 1 })).collect();
            buckets.push((f64::INFINITY, total + 1.0, Loc { kind: "line", index: 99 }));
            let h = Histogram::new("h_ms", vec![], buckets).unwrap();
            let (lo, hi) = if q1 <= q2 { (q1, q2) } else { (q2, q1) };
            let (a, b) = (h.quantile(lo).unwrap().ms, h.quantile(hi).unwrap().ms);
            prop_assert!(a <= b && a >= 0.0 && b <= counts.len() as f64);
            let f = h.fraction_above(a).unwrap();
            prop_assert!((0.0..=1.0).contains(&f));
        }

        #[test]
        fn parser_never_panics(text in "[a-z_{}=\",.+#\\\\ 0-9\n]{0,200}") {
            let _ = derive_exposition(&text, None, &["a"], Some("outcome"), &DeriveOptions::default());
        }
    }
}
