//! What a derived timeout's reader should know: the [`Warning`]s of the
//! censoring guard, drift and resolution checks (see [`super`], "The
//! censoring guard"), their stable codes and their messages. A part of
//! [`super`], split out because the wording is most of it.

use core::fmt;

use serde::{Deserialize, Serialize, Serializer};

use crate::core::error::Message;

/// Something the reader of a derived timeout should know.
#[derive(Debug, Clone, PartialEq)]
pub enum Warning {
    /// No successful calls: nothing to derive from.
    NoSuccesses,
    /// Fewer than `needed` samples for `q`.
    SmallSample {
        /// The number of successful calls.
        n: u64,
        /// How many `q` needs: 10 beyond the percentile.
        needed: u64,
        /// The target quantile.
        q: f64,
    },
    /// More calls timed out than lie beyond the percentile: the successes
    /// are censored at the timeout in force.
    Censored {
        /// The number of calls that timed out.
        timeouts: u64,
        /// Their share of all attempted calls, in `[0, 1]`.
        share: f64,
        /// The target quantile.
        q: f64,
    },
    /// Successes pile up at `at_ms`, as timed-out calls logged as successes do.
    PileUp {
        /// Where the successes pile up, in ms.
        at_ms: f64,
        /// How many successes lie there.
        count: u64,
        /// Their share of the successes, in `[0, 1]`.
        share: f64,
        /// Whether `at_ms` is the configured timeout (otherwise it is the
        /// largest value).
        configured: bool,
    },
    /// The configured timeout is more than [`DRIFT_FACTOR`](super::DRIFT_FACTOR) from the
    /// measured percentile.
    Drift {
        /// The configured timeout, in ms.
        configured_ms: f64,
        /// The measured percentile, in ms.
        measured_ms: f64,
        /// `configured_ms / measured_ms`.
        ratio: f64,
        /// The target quantile.
        q: f64,
    },
    /// From buckets, the percentile is only known to lie in `lo_ms..hi_ms`.
    Resolution {
        /// The quantile.
        q: f64,
        /// The bucket's lower bound, in ms.
        lo_ms: f64,
        /// The bucket's upper bound, in ms.
        hi_ms: f64,
    },
    /// From buckets, the percentile is above the largest finite bound.
    AboveLargestBucket {
        /// The quantile.
        q: f64,
        /// The largest finite bucket bound, in ms: what is reported.
        bound_ms: f64,
    },
    /// A histogram's name has no unit suffix; values were read as ms.
    UnitAssumed {
        /// The histogram's name.
        metric: String,
    },
    /// The sketch collapsed its low buckets to bound memory, and these
    /// reported percentiles (`q` values, ascending: p50, p90, p99, p99.9 and
    /// the target `q`) lie among them: each is only an upper bound, not within
    /// the relative error.
    Collapsed {
        /// The upper bound of the collapsed buckets, in ms.
        below_ms: f64,
        /// The affected quantiles, ascending.
        quantiles: Vec<f64>,
    },
}

/// The stable identifiers of [`Warning`]s (the JS API's `warnings[i].code`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub enum WarningCode {
    /// `"no-successes"`: [`Warning::NoSuccesses`].
    NoSuccesses,
    /// `"small-sample"`: [`Warning::SmallSample`].
    SmallSample,
    /// `"censored"`: [`Warning::Censored`].
    Censored,
    /// `"pile-up"`: [`Warning::PileUp`].
    PileUp,
    /// `"drift"`: [`Warning::Drift`].
    Drift,
    /// `"resolution"`: [`Warning::Resolution`].
    Resolution,
    /// `"above-largest-bucket"`: [`Warning::AboveLargestBucket`].
    AboveLargestBucket,
    /// `"unit-assumed"`: [`Warning::UnitAssumed`].
    UnitAssumed,
    /// `"collapsed"`: [`Warning::Collapsed`].
    Collapsed,
}

/// One warning as the JS API gives it, and as a [`Warning`] serializes:
/// `{ code, message }`, the message rendered by the core.
#[derive(Serialize)]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub struct DerivedWarning {
    /// The warning's stable identifier ([`WarningCode`]'s kebab-case name).
    #[cfg_attr(feature = "typescript", tsify(type = "WarningCode"))]
    pub code: &'static str,
    /// The rendered sentence.
    pub message: String,
}

impl Serialize for Warning {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Data {
            code: &'static str,
            message: Message,
        }
        Data { code: self.code(), message: self.message() }.serialize(s)
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

    /// What the reader is told, as a template and its values.
    pub fn message(&self) -> Message {
        match self {
            Self::NoSuccesses => Message::new(msg::NO_SUCCESSES),
            Self::SmallSample { n, needed, q } => Message::new(msg::SMALL_SAMPLE)
                .arg("n", calls(*n, true))
                .arg("p", percentile(*q))
                .arg("needed", *needed as f64),
            Self::Censored { timeouts, share, q } => Message::new(msg::CENSORED)
                .arg("timeouts", calls(*timeouts, false))
                .arg("share", pct(*share))
                .arg("beyond", pct(1.0 - q))
                .arg("p", percentile(*q)),
            Self::PileUp { at_ms, count, share, configured } => {
                Message::new(msg::PILE_UP).arg("calls", calls(*count, true)).arg("share", pct(*share)).arg(
                    "at",
                    Message::new(if *configured { msg::AT_CONFIGURED } else { msg::AT_LARGEST })
                        .arg("value", ms(*at_ms)),
                )
            }
            Self::Drift { configured_ms, measured_ms, ratio, q } => {
                Message::new(if *ratio > 1.0 { msg::DRIFT_LONG } else { msg::DRIFT_SHORT })
                    .arg("configuredMs", ms(*configured_ms))
                    .arg("ratio", *ratio)
                    .arg("p", percentile(*q))
                    .arg("measuredMs", ms(*measured_ms))
            }
            Self::Resolution { q, lo_ms, hi_ms } => Message::new(msg::RESOLUTION)
                .arg("p", percentile(*q))
                .arg("loMs", ms(*lo_ms))
                .arg("hiMs", ms(*hi_ms))
                .arg("widthMs", ms(hi_ms - lo_ms)),
            Self::AboveLargestBucket { q, bound_ms } => {
                Message::new(msg::ABOVE_LARGEST_BUCKET).arg("p", percentile(*q)).arg("boundMs", ms(*bound_ms))
            }
            Self::UnitAssumed { metric } => Message::new(msg::UNIT_ASSUMED).arg("metric", metric.as_str()),
            Self::Collapsed { below_ms, quantiles } => {
                // "p50, p90, p99": each name a message, joined from the end.
                let mut names = quantiles.iter().rev().map(|&q| percentile(q));
                let last = names.next().unwrap_or_else(|| Message::text(String::new()));
                let list =
                    names.fold(last, |rest, first| Message::new(msg::LIST).arg("first", first).arg("rest", rest));
                Message::new(if quantiles.len() == 1 { msg::COLLAPSED_ONE } else { msg::COLLAPSED })
                    .arg("p", list)
                    .arg("belowMs", ms(*below_ms))
            }
        }
    }
}

/// The warnings' message templates.
pub mod msg {
    crate::templates! { "derive.warning";
        /// [`Warning::NoSuccesses`](super::Warning::NoSuccesses).
        NO_SUCCESSES = "no successful calls: nothing to derive a timeout from";
        /// [`Warning::SmallSample`](super::Warning::SmallSample); `n` is [`SUCCESS`] or [`SUCCESSES`].
        SMALL_SAMPLE = "only {n}: {p} needs at least {needed} (10 beyond the percentile) for a stable estimate";
        /// [`Warning::Censored`](super::Warning::Censored); `timeouts` is [`CALL`] or [`CALLS`].
        CENSORED = "{timeouts} ({share}%) timed out, more than the {beyond}% beyond {p}: the successes are cut off at the timeout in force, so this value is too small and re-deriving would ratchet it down; raise the timeout, measure again, then derive";
        /// [`Warning::PileUp`](super::Warning::PileUp); `at` is [`AT_CONFIGURED`] or [`AT_LARGEST`].
        PILE_UP = "{calls} ({share}%) pile up at {at}: timed-out calls may be logged as successes, which censors the data; record the outcome and exclude them";
        /// Where a pile-up is, when it is the configured timeout.
        AT_CONFIGURED = "{value} ms, the configured timeout";
        /// Where a pile-up is, when it is the largest value.
        AT_LARGEST = "{value} ms, the largest value, which looks like a timeout in force";
        /// A configured timeout more than twice the measured percentile.
        DRIFT_LONG = "the configured {configuredMs} ms is {ratio:.1}x the measured {p} ({measuredMs} ms): a hang holds the request that long and it protects nothing during an outage";
        /// A configured timeout less than half the measured percentile.
        DRIFT_SHORT = "the configured {configuredMs} ms is {ratio:.2}x the measured {p} ({measuredMs} ms): it fails healthy calls";
        /// [`Warning::Resolution`](super::Warning::Resolution).
        RESOLUTION = "{p} lies in the bucket {loMs} ms..{hiMs} ms: the interpolated value may be off by up to {widthMs} ms; add bucket bounds around it";
        /// [`Warning::AboveLargestBucket`](super::Warning::AboveLargestBucket).
        ABOVE_LARGEST_BUCKET = "{p} is above the largest finite bucket bound ({boundMs} ms): reported as that bound, a lower bound of the true value; add larger buckets";
        /// [`Warning::UnitAssumed`](super::Warning::UnitAssumed).
        UNIT_ASSUMED = "'{metric}' has no unit suffix (_seconds, _milliseconds): its values were read as milliseconds";
        /// [`Warning::Collapsed`](super::Warning::Collapsed) with one percentile.
        COLLAPSED_ONE = "{p} lies at or below {belowMs} ms, where the sketch merged its lowest buckets to bound memory: it is only an upper bound, not within 'relativeError'; use a larger 'relativeError' (the default 0.01 spans about 10^13×)";
        /// [`Warning::Collapsed`](super::Warning::Collapsed) with several; `p` is a [`LIST`].
        COLLAPSED = "{p} lie at or below {belowMs} ms, where the sketch merged its lowest buckets to bound memory: each is only an upper bound, not within 'relativeError'; use a larger 'relativeError' (the default 0.01 spans about 10^13×)";
        /// `0.99` is `p99`, `0.999` `p99.9` (`p` is the percentage).
        PERCENTILE = "p{p}";
        /// A list of percentile names: the first, then the rest.
        LIST = "{first}, {rest}";
        /// A count of one call.
        CALL = "{n} call";
        /// A count of calls other than one.
        CALLS = "{n} calls";
        /// A count of one successful call.
        SUCCESS = "{n} successful call";
        /// A count of successful calls other than one.
        SUCCESSES = "{n} successful calls";
    }
}

/// `0.99` → `p99`, `0.999` → `p99.9` (the percentage to 6 decimals).
pub fn percentile(q: f64) -> Message {
    Message::new(msg::PERCENTILE).arg("p", (q * 100.0 * 1e6).round() / 1e6)
}

/// `0.99` → `"p99"`: [`percentile`] as text, for Rust callers.
pub fn percentile_name(q: f64) -> String {
    percentile(q).to_string()
}

/// `n` calls, or `n` successful calls.
fn calls(n: u64, successful: bool) -> Message {
    let id = match (n == 1, successful) {
        (true, false) => msg::CALL,
        (false, false) => msg::CALLS,
        (true, true) => msg::SUCCESS,
        (false, true) => msg::SUCCESSES,
    };
    Message::new(id).arg("n", n as f64)
}

/// A share as a percentage, to 0.001%.
fn pct(share: f64) -> f64 {
    (share * 100.0 * 1000.0).round() / 1000.0
}

/// Milliseconds for a warning: whole from 100 ms, else to 0.01 ms.
fn ms(v: f64) -> f64 {
    if v >= 100.0 {
        v.round()
    } else {
        (v * 100.0).round() / 100.0
    }
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.message().fmt(f)
    }
}
