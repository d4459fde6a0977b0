//! What a derived timeout's reader should know: the [`Warning`]s of the
//! censoring guard, drift and resolution checks (see [`super`], "The
//! censoring guard"), their stable codes and their messages. A part of
//! [`super`], split out because the wording is most of it.

use core::fmt;

use serde::{Deserialize, Serialize, Serializer};

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
    /// The configured timeout is more than [`DRIFT_FACTOR`](super::DRIFT_FACTOR) from the
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
