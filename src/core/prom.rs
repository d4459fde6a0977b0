//! Prometheus histograms: parsing the text exposition format, assembling
//! histograms from samples (the query API's result, parsed by the caller),
//! and reading quantiles from cumulative buckets.
//!
//! # Why read buckets and not `histogram_quantile`
//! A derived timeout needs more than one number: the bucket a percentile
//! falls in says how precise it is, the `outcome` label separates successes
//! from timeouts, and the false-timeout rate of a candidate needs the whole
//! cumulative curve. So the bucket series are read and everything is computed
//! here, with `histogram_quantile`'s interpolation.
//!
//! # Semantics
//! - Bucket bounds (`le`) are upper bounds of cumulative counts; the first
//!   bucket's lower bound is 0. A quantile is interpolated linearly inside the
//!   bucket where the rank `q · total` falls; a rank in the `+Inf` bucket is
//!   reported as the largest finite bound (a lower bound, flagged).
//! - Units: a family named `*_seconds` is converted to milliseconds;
//!   `*_milliseconds` and `*_ms` are taken as is; any other name is taken as
//!   milliseconds and flagged ([`Unit::Unknown`]).
//!
//! # Memory and time
//! Exposition text can be large (a high-cardinality exporter serves tens of
//! MB), and Wasm memory never shrinks: whatever a parse needs at its peak
//! stays reserved for the life of the instance. So [`histograms_in_text`]
//! streams: each line is parsed, filed under its series and dropped, and only
//! the chosen family's buckets are kept (about 40 bytes per bucket line plus
//! one copy of each series' labels). Consecutive lines of one series form a
//! run; the runs are sorted once at the end (a merge sort) and merged, so the
//! time is `O(lines + series · log series)`: one insert per new series into a
//! sorted vector made it quadratic. [`each_histogram_in_text`] hands out each
//! finished histogram at once, so they are never all held together, and
//! [`TextHistograms`] takes the text in pieces, so the host can keep it out of
//! Wasm memory. Text longer than [`MAX_TEXT_BYTES`] is refused before any
//! work starts ([`PromError::TooLarge`]).
//!
//! Invariant 4 (below) also holds for text handed to [`TextHistograms`] in
//! pieces that end at line breaks.
//!
//! # Files
//! The text format's parser (and its number parser) is `prom/text.rs`; this file
//! holds the data types, their errors and the assembly of histograms.
//!
//! # Invariants (tested in `derive/tests.rs`; the parser's own in `prom/text.rs`)
//! 1. Every [`Histogram`] has strictly increasing bounds ending in `+Inf`,
//!    at least one finite bound, and non-decreasing finite counts.
//! 2. Quantiles are monotone in `q` and lie within `[0, largest finite bound]`.
//! 3. Malformed input is an error naming the line (or result index) and the
//!    field, never a panic.
//! 4. [`histograms_in_text`] gives the same histograms (or the same error) as
//!    [`parse_text`] followed by [`histograms`].

use core::fmt;
use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

mod text;
use crate::core::error::{Described, Message};
pub use text::{each_histogram_in_text, histograms_in_text, parse_decimal, parse_text, parse_value, TextHistograms};

/// The most buckets one series may have (classic histograms have tens).
pub const MAX_SERIES_BUCKETS: usize = 4096;
/// The most labels one sample may have.
pub const MAX_LABELS: usize = 128;
/// The longest exposition text [`histograms_in_text`] accepts: 16 MiB of
/// UTF-8, which covers a 150 000-series exporter. Its parse needs up to about
/// five and a half times its size in Wasm memory at the peak (measured:
/// BENCHMARKS.md, "Memory"), and Wasm memory is never returned.
pub const MAX_TEXT_BYTES: usize = 16 << 20;

/// The indices `0..n` in the order `less` gives, stably: a bottom-up merge
/// sort in `O(n log n)`, for long inputs (std's sorts add several KB to the
/// Wasm build).
fn merge_sort_indices(n: usize, less: impl Fn(usize, usize) -> bool) -> Vec<usize> {
    let mut a: Vec<usize> = (0..n).collect();
    let mut b = vec![0; n];
    let mut width = 1;
    while width < n {
        let mut start = 0;
        while start < n {
            let mid = (start + width).min(n);
            let end = (start + 2 * width).min(n);
            let (mut l, mut r) = (start, mid);
            for slot in b.iter_mut().take(end).skip(start) {
                // Take from the right run only when strictly less: stable.
                let right = l >= mid || (r < end && less(a[r], a[l]));
                if right {
                    *slot = a[r];
                    r += 1;
                } else {
                    *slot = a[l];
                    l += 1;
                }
            }
            start = end;
        }
        core::mem::swap(&mut a, &mut b);
        width *= 2;
    }
    a
}

/// Sorts a short, usually already sorted slice; stable.
pub(crate) fn insertion_sort_by<T>(v: &mut [T], less: impl Fn(&T, &T) -> bool) {
    for i in 1..v.len() {
        let mut j = i;
        while j > 0 && less(&v[j], &v[j - 1]) {
            v.swap(j, j - 1);
            j -= 1;
        }
    }
}

/// The unit a histogram family was recorded in, from its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub enum Unit {
    /// A `_seconds` suffix: values are converted to ms.
    Seconds,
    /// A `_milliseconds` suffix: values are already ms.
    Milliseconds,
    /// No recognised suffix: values are taken as milliseconds.
    Unknown,
}

impl Unit {
    /// The unit a family name declares.
    pub fn of(family: &str) -> Unit {
        if family.ends_with("_seconds") {
            Unit::Seconds
        } else if family.ends_with("_milliseconds") || family.ends_with("_ms") {
            Unit::Milliseconds
        } else {
            Unit::Unknown
        }
    }

    /// `"seconds"`, `"milliseconds"` or `"unknown"` (the JS API's names).
    pub fn name(self) -> &'static str {
        match self {
            Unit::Seconds => "seconds",
            Unit::Milliseconds => "milliseconds",
            Unit::Unknown => "unknown",
        }
    }

    /// The inverse of [`Unit::name`].
    pub fn from_name(name: &str) -> Option<Unit> {
        match name {
            "seconds" => Some(Unit::Seconds),
            "milliseconds" => Some(Unit::Milliseconds),
            "unknown" => Some(Unit::Unknown),
            _ => None,
        }
    }

    fn to_ms(self) -> f64 {
        if self == Unit::Seconds {
            1000.0
        } else {
            1.0
        }
    }
}

/// Where a sample came from: a text line or an index in a query result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Loc {
    /// `"line"` for the text format, `"result"` for the query API.
    pub kind: &'static str,
    /// 1-based.
    pub index: usize,
}

impl Loc {
    /// "line 3", "result 2", "histogram 1".
    pub fn message(&self) -> Message {
        let id = match self.kind {
            "result" => msg::RESULT,
            "histogram" => msg::HISTOGRAM,
            _ => msg::LINE,
        };
        Message::new(id).arg("index", self.index)
    }
}

impl fmt::Display for Loc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.message().fmt(f)
    }
}

/// One sample: `name{labels} value`.
#[derive(Debug, Clone, PartialEq)]
pub struct PromSample {
    /// The metric name (`dependency_latency_seconds_bucket`).
    pub name: String,
    /// The labels, in the order written.
    pub labels: Vec<(String, String)>,
    /// The sample's value, as written (not yet converted to ms).
    pub value: f64,
    /// Where the sample was read.
    pub loc: Loc,
}

/// Why Prometheus input was refused.
#[derive(Debug, Clone, PartialEq)]
pub enum PromError {
    /// A line does not follow the text exposition format; `field` is the
    /// part that is wrong, `detail` (a [`msg`] template) how. Fix the
    /// exporter or the file.
    Syntax {
        /// Where the line is.
        loc: Loc,
        /// The part that is wrong (`name`, `labels`, `value`, `timestamp`).
        field: &'static str,
        /// How it is wrong.
        detail: Message,
    },
    /// A bucket count decreased although its bound increased. Buckets are
    /// cumulative: each `le` counts everything at or below it.
    NonMonotonic {
        /// The series, as `name{labels}`.
        series: String,
        /// Where the bucket is.
        loc: Loc,
        /// The bucket's bound, as written.
        le: f64,
        /// The bucket's count.
        count: f64,
        /// The larger count of a lower bucket.
        previous: f64,
    },
    /// The same `le` appears twice in one series.
    DuplicateBound {
        /// The series, as `name{labels}`.
        series: String,
        /// Where the second copy is.
        loc: Loc,
        /// The repeated bound, as written.
        le: f64,
    },
    /// A bucket count or `le` is negative or NaN.
    BadBucket {
        /// The series, as `name{labels}`.
        series: String,
        /// Where the bucket is.
        loc: Loc,
        /// `le` or the count.
        field: &'static str,
        /// The value refused.
        value: f64,
    },
    /// A series has more than [`MAX_SERIES_BUCKETS`] buckets.
    TooManyBuckets {
        /// The series, as `name{labels}`.
        series: String,
        /// How many buckets it has.
        count: usize,
    },
    /// The series has no `le="+Inf"` bucket, so its total is unknown.
    MissingInf {
        /// The series, as `name{labels}`.
        series: String,
    },
    /// The series has only the `+Inf` bucket: no resolution to read from.
    NoFiniteBucket {
        /// The series, as `name{labels}`.
        series: String,
    },
    /// Series being summed have different bucket bounds; only identical
    /// layouts can be added.
    BoundsDiffer {
        /// One series, as `name{labels}`.
        series: String,
        /// The series whose bounds differ from it.
        other: String,
    },
    /// No histogram (`*_bucket` samples with an `le` label) matched.
    NoHistogram {
        /// The metric asked for; `None` when none was named.
        metric: Option<String>,
        /// The histogram families present (none when `metric` is `None`).
        found: Vec<String>,
    },
    /// Several histogram families are present: pass the metric to use.
    Ambiguous {
        /// The histogram families present.
        found: Vec<String>,
    },
    /// The text is longer than [`MAX_TEXT_BYTES`]; nothing was parsed.
    /// `size` is in `unit`s: `"bytes"`, or `"characters"` when the JS API
    /// refuses a string before copying it into Wasm memory (UTF-8 is never
    /// shorter than UTF-16, so more characters than bytes allowed is too
    /// long in bytes too).
    TooLarge {
        /// The text's length, in `unit`s.
        size: usize,
        /// `"bytes"` or `"characters"`.
        unit: &'static str,
    },
    /// Query result `index` (1-based) has no `__name__` label and no
    /// `metric` option was given to name it.
    Unnamed {
        /// The result's position, from 1.
        index: usize,
    },
}

impl Described for PromError {
    fn code(&self) -> &'static str {
        match self {
            Self::Syntax { .. } => "SYNTAX",
            Self::NonMonotonic { .. } => "NOT_CUMULATIVE",
            Self::DuplicateBound { .. } => "DUPLICATE_BOUND",
            Self::BadBucket { .. } => "BAD_BUCKET",
            Self::TooManyBuckets { .. } => "TOO_MANY_BUCKETS",
            Self::MissingInf { .. } => "MISSING_INF_BUCKET",
            Self::NoFiniteBucket { .. } => "NO_FINITE_BUCKET",
            Self::BoundsDiffer { .. } => "BOUNDS_DIFFER",
            Self::NoHistogram { .. } => "NO_HISTOGRAM",
            Self::Ambiguous { .. } => "AMBIGUOUS_METRIC",
            Self::TooLarge { .. } => "TOO_LARGE",
            Self::Unnamed { .. } => "UNNAMED_RESULT",
        }
    }

    /// Where the fault is in what the caller passed: `input` (exposition
    /// text), `input.data.result[i]` (a query response), `data[i]`
    /// (histograms handed back to `deriveTimeouts`), `options.metric`.
    fn param(&self) -> Option<String> {
        let at = |loc: &Loc, field: &str| {
            let dot = if field.is_empty() { String::new() } else { format!(".{field}") };
            match loc.kind {
                "result" => format!("input.data.result[{}]{dot}", loc.index - 1),
                "histogram" => format!("data[{}]{dot}", loc.index - 1),
                _ => "input".into(),
            }
        };
        Some(match self {
            Self::Syntax { loc, field, .. } => at(loc, if loc.kind == "result" { field } else { "" }),
            Self::NonMonotonic { loc, .. } | Self::DuplicateBound { loc, .. } => {
                at(loc, if loc.kind == "histogram" { "cumulative" } else { "" })
            }
            Self::BadBucket { loc, field, .. } => at(
                loc,
                match (loc.kind, *field) {
                    ("histogram", "le") => "boundsMs",
                    ("histogram", _) => "cumulative",
                    _ => "",
                },
            ),
            Self::Unnamed { index } => format!("input.data.result[{}].metric", index - 1),
            Self::NoHistogram { metric: Some(_), .. } | Self::Ambiguous { .. } => "options.metric".into(),
            _ => "input".into(),
        })
    }

    fn message(&self) -> Message {
        let at = |id, loc: &Loc, series: &str| Message::new(id).arg("loc", loc.message()).arg("series", series);
        match self {
            Self::Syntax { loc, field, detail } => {
                Message::new(msg::SYNTAX).arg("loc", loc.message()).arg("field", *field).arg("detail", detail.clone())
            }
            Self::NonMonotonic { series, loc, le, count, previous } => {
                at(msg::NOT_CUMULATIVE, loc, series).arg("le", *le).arg("count", *count).arg("previous", *previous)
            }
            Self::DuplicateBound { series, loc, le } => at(msg::DUPLICATE_BOUND, loc, series).arg("le", *le),
            Self::BadBucket { series, loc, field, value } => {
                at(msg::BAD_BUCKET, loc, series).arg("field", *field).arg("value", *value)
            }
            Self::TooManyBuckets { series, count } => Message::new(msg::TOO_MANY_BUCKETS)
                .arg("series", series.as_str())
                .arg("count", *count)
                .arg("max", MAX_SERIES_BUCKETS),
            Self::MissingInf { series } => Message::new(msg::MISSING_INF).arg("series", series.as_str()),
            Self::NoFiniteBucket { series } => Message::new(msg::NO_FINITE_BUCKET).arg("series", series.as_str()),
            Self::BoundsDiffer { series, other } => {
                Message::new(msg::BOUNDS_DIFFER).arg("series", series.as_str()).arg("other", other.as_str())
            }
            Self::NoHistogram { metric: Some(m), found } if !found.is_empty() => {
                Message::new(msg::NO_HISTOGRAM_NAMED_PRESENT).arg("metric", m.as_str()).arg("found", list(found))
            }
            Self::NoHistogram { metric: Some(m), .. } => {
                Message::new(msg::NO_HISTOGRAM_NAMED).arg("metric", m.as_str())
            }
            Self::NoHistogram { metric: None, .. } => Message::new(msg::NO_HISTOGRAM),
            Self::Ambiguous { found } => Message::new(msg::AMBIGUOUS).arg("found", list(found)),
            Self::TooLarge { size, unit } => {
                Message::new(msg::TOO_LARGE).arg("size", *size).arg("unit", *unit).arg("max", MAX_TEXT_BYTES)
            }
            Self::Unnamed { index } => Message::new(msg::UNNAMED).arg("index", *index),
        }
    }
}

/// Prometheus input's message templates: where (`loc`), what was refused,
/// and the details of a syntax error (each follows the part's name).
pub mod msg {
    crate::templates! { "prom";
        /// A [`Loc`](super::Loc) in exposition text.
        LINE = "line {index}";
        /// A [`Loc`](super::Loc) in a query response.
        RESULT = "result {index}";
        /// A [`Loc`](super::Loc) in a list of histograms.
        HISTOGRAM = "histogram {index}";
        /// [`PromError::Syntax`](super::PromError::Syntax); the details follow.
        SYNTAX = "{loc}: {field}: {detail}";
        /// [`PromError::NonMonotonic`](super::PromError::NonMonotonic).
        NOT_CUMULATIVE = "{loc}: bucket le=\"{le}\" of {series} counts {count}, fewer than the {previous} of a lower bucket: buckets must be cumulative";
        /// [`PromError::DuplicateBound`](super::PromError::DuplicateBound).
        DUPLICATE_BOUND = "{loc}: bucket le=\"{le}\" of {series} appears twice";
        /// [`PromError::BadBucket`](super::PromError::BadBucket).
        BAD_BUCKET = "{loc}: {field} of {series} must be a number of at least 0: current value is {value}";
        /// [`PromError::TooManyBuckets`](super::PromError::TooManyBuckets).
        TOO_MANY_BUCKETS = "histogram {series} has {count} buckets: at most {max} are supported";
        /// [`PromError::MissingInf`](super::PromError::MissingInf).
        MISSING_INF = "histogram {series} has no le=\"+Inf\" bucket, so its total count is unknown";
        /// [`PromError::NoFiniteBucket`](super::PromError::NoFiniteBucket).
        NO_FINITE_BUCKET = "histogram {series} has only the le=\"+Inf\" bucket: quantiles need finite bucket bounds";
        /// [`PromError::BoundsDiffer`](super::PromError::BoundsDiffer).
        BOUNDS_DIFFER = "histograms {series} and {other} have different bucket bounds and cannot be added: group by a label that separates them";
        /// [`PromError::NoHistogram`](super::PromError::NoHistogram) for a named metric, no histogram present.
        NO_HISTOGRAM_NAMED = "no histogram named '{metric}' (with *_bucket samples and an le label) was found";
        /// [`PromError::NoHistogram`](super::PromError::NoHistogram) for a named metric, others present.
        NO_HISTOGRAM_NAMED_PRESENT = "no histogram named '{metric}' (with *_bucket samples and an le label) was found; histograms present: {found}";
        /// [`PromError::NoHistogram`](super::PromError::NoHistogram) without a metric.
        NO_HISTOGRAM = "no histogram (*_bucket samples with an le label) was found";
        /// [`PromError::Ambiguous`](super::PromError::Ambiguous).
        AMBIGUOUS = "several histograms are present ({found}): choose one with 'metric'";
        /// [`PromError::TooLarge`](super::PromError::TooLarge).
        TOO_LARGE = "'input' is {size} {unit} of exposition text: at most {max} bytes are parsed; scrape or filter one histogram family (e.g. query Prometheus for it) instead";
        /// [`PromError::Unnamed`](super::PromError::Unnamed).
        UNNAMED = "result {index} has no __name__ (as after increase()): pass the histogram's name as 'metric'";
        /// Syntax detail: a sample value that does not parse.
        NOT_A_NUMBER = "'{text}' is not a number";
        /// Syntax detail: an `le` label that does not parse.
        LE_NOT_A_NUMBER = "le=\"{text}\" is not a number";
        /// Syntax detail: a `_bucket` sample without `le`.
        NEEDS_LE = "a *_bucket sample needs an 'le' label";
        /// Syntax detail: a metric name's first character.
        NAME_START = "must start with a letter, '_' or ':'";
        /// Syntax detail: an unexpected character right after the metric name.
        AFTER_NAME = "unexpected character after '{name}'";
        /// Syntax detail: a required part (the value, a label value) is absent.
        MISSING = "missing";
        /// Syntax detail: a timestamp that is not an integer.
        TIMESTAMP = "'{text}' is not an integer number of milliseconds";
        /// Syntax detail: text after the timestamp.
        AFTER_TIMESTAMP = "unexpected '{text}' after the timestamp";
        /// Syntax detail: inside `{…}`, where a label name or `}` belongs.
        LABEL_NAME = "expected a label name or '}}'";
        /// Syntax detail: a label name not followed by `=`.
        EQUALS = "expected '=' after '{name}'";
        /// Syntax detail: a label value without its opening quote.
        UNQUOTED = "value of '{name}' must be quoted";
        /// Syntax detail: a label value that runs to the end of the line.
        UNCLOSED = "value of '{name}' has no closing quote";
        /// `escape` is `END_OF_LINE` or `ESCAPE`.
        BAD_ESCAPE = "invalid escape {escape} in '{name}' (use \\\\, \\\" or \\n)";
        /// The `escape` of [`BAD_ESCAPE`]: a `\` at the end of the line.
        END_OF_LINE = "end of line";
        /// The `escape` of [`BAD_ESCAPE`]: `\` and the character after it.
        ESCAPE = "'\\{char}'";
        /// Syntax detail: a label given twice.
        TWICE = "'{name}' appears twice";
        /// Syntax detail: more labels than a sample may have.
        TOO_MANY_LABELS = "more than {max} labels";
        /// Syntax detail: a label value followed by neither `,` nor `}`.
        AFTER_VALUE = "expected ',' or '}}' after the value of '{name}'";
    }
}

/// `a, b, c` (without `join`, which adds its own copy loop to the Wasm build).
fn list(items: &[String]) -> String {
    let mut out = String::new();
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(item);
    }
    out
}

crate::described_error!(PromError);

/// A quantile read from buckets, with the bucket it fell in.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BucketQuantile {
    /// The quantile, in ms, interpolated inside the bucket.
    pub ms: f64,
    /// The bucket the rank fell in: the value is interpolated between these.
    pub lo_ms: f64,
    /// The bucket's upper bound, in ms.
    pub hi_ms: f64,
    /// `true` when the rank fell in the `+Inf` bucket: `ms` is then the
    /// largest finite bound, a lower bound of the true quantile.
    pub above_largest: bool,
}

/// One histogram series, converted to milliseconds. In JavaScript
/// `{ kind: "histogram", metric, unit, labels, boundsMs, cumulative, sumMs,
/// count }` (`null` for an absent sum or count): what `parsePrometheus`
/// returns and `deriveTimeouts` takes back, validated again
/// ([`Histogram::validated`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename = "histogram", rename_all = "camelCase")]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify), tsify(missing_as_null, hashmap_as_object))]
pub struct Histogram {
    /// The family name, e.g. `dependency_latency_seconds`.
    #[serde(rename = "metric")]
    pub name: String,
    /// Labels other than `le`, sorted by name.
    #[serde(default, serialize_with = "pairs_as_object", deserialize_with = "object_as_pairs")]
    #[cfg_attr(feature = "typescript", tsify(type = "Record<string, string>"))]
    pub labels: Vec<(String, String)>,
    /// The unit the values were recorded in, from the name's suffix.
    pub unit: Unit,
    /// Upper bounds in ms, strictly increasing, the last one `+Inf`.
    pub bounds_ms: Vec<f64>,
    /// Cumulative counts, one per bound.
    pub cumulative: Vec<f64>,
    /// The `_sum` sample, in ms (`sumMs` in JS); `null` when absent.
    #[serde(default)]
    pub sum_ms: Option<f64>,
    /// The `_count` sample; `null` when absent.
    #[serde(default)]
    pub count: Option<f64>,
}

/// `[(k, v)]` as `{ k: v }`, in order.
pub(crate) fn pairs_as_object<S: Serializer>(pairs: &[(String, String)], s: S) -> Result<S::Ok, S::Error> {
    s.collect_map(pairs.iter().map(|(k, v)| (k, v)))
}

/// `{ k: v }` as `[(k, v)]`, sorted by name.
fn object_as_pairs<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<(String, String)>, D::Error> {
    Ok(BTreeMap::<String, String>::deserialize(d)?.into_iter().collect())
}

/// One sample of a Prometheus HTTP API instant-query response
/// (`data.result[i]` of `/api/v1/query`): its labels (with `__name__`
/// unless a function dropped it) and `[timestamp, "value"]`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub struct QueryResult {
    /// The series' labels (`metric` in the response), `__name__` included.
    #[serde(deserialize_with = "object_as_pairs")]
    #[cfg_attr(feature = "typescript", tsify(type = "Record<string, string>"))]
    pub metric: Vec<(String, String)>,
    /// `[timestamp, "value"]`: the evaluation time in seconds, and the value as
    /// a string (`"NaN"`, `"+Inf"` included).
    pub value: (f64, String),
}

/// The samples of a query response's results. A result without `__name__`
/// (as after `increase()`) is named `<metric>_bucket` when `metric` is
/// given, else refused.
pub fn query_samples(results: Vec<QueryResult>, metric: Option<&str>) -> Result<Vec<PromSample>, PromError> {
    let fallback = metric.map(|m| format!("{}_bucket", m.strip_suffix("_bucket").unwrap_or(m)));
    let mut samples = Vec::with_capacity(results.len());
    for (i, r) in results.into_iter().enumerate() {
        let loc = Loc { kind: "result", index: i + 1 };
        let text = r.value.1;
        let value = parse_value(text.trim()).ok_or_else(|| PromError::Syntax {
            loc,
            field: "value",
            detail: Message::new(msg::NOT_A_NUMBER).arg("text", text.as_str()),
        })?;
        let mut name = None;
        let mut labels = Vec::with_capacity(r.metric.len());
        for (k, v) in r.metric {
            if k == "__name__" {
                name = Some(v);
            } else {
                labels.push((k, v));
            }
        }
        let name = name.or_else(|| fallback.clone()).ok_or(PromError::Unnamed { index: i + 1 })?;
        samples.push(PromSample { name, labels, value, loc });
    }
    Ok(samples)
}

/// The refusal of text of `size` `unit`s, when it is over [`MAX_TEXT_BYTES`].
pub fn check_text_size(size: usize, unit: &'static str) -> Result<(), PromError> {
    if size > MAX_TEXT_BYTES {
        return Err(PromError::TooLarge { size, unit });
    }
    Ok(())
}

fn series_name(name: &str, labels: &[(String, String)]) -> String {
    let mut s = String::from(name);
    if !labels.is_empty() {
        s.push('{');
        for (i, (k, v)) in labels.iter().enumerate() {
            if i > 0 {
                s.push(',');
            }
            s.push_str(k);
            s.push_str("=\"");
            s.push_str(v);
            s.push('"');
        }
        s.push('}');
    }
    s
}

impl Histogram {
    /// Builds a histogram from `(le, cumulative count, where)` triples in
    /// the family's own unit, in any order, validating invariant 1.
    pub fn new(
        name: &str,
        labels: Vec<(String, String)>,
        buckets: Vec<(f64, f64, Loc)>,
    ) -> Result<Histogram, PromError> {
        let unit = Unit::of(name);
        Self::build(name, labels, unit, unit.to_ms(), buckets)
    }

    /// Like [`Histogram::new`], with bounds already in milliseconds and the
    /// unit the family was recorded in given separately (a histogram that
    /// went to JavaScript and came back).
    pub fn from_ms(
        name: &str,
        labels: Vec<(String, String)>,
        unit: Unit,
        buckets_ms: Vec<(f64, f64, Loc)>,
    ) -> Result<Histogram, PromError> {
        Self::build(name, labels, unit, 1.0, buckets_ms)
    }

    /// Histogram `index` (0-based) of what the caller handed back (from
    /// `parsePrometheus`, possibly edited), validated again as
    /// [`Histogram::from_ms`] does; errors name `data[index]`.
    pub fn validated(self, index: usize) -> Result<Histogram, PromError> {
        let loc = Loc { kind: "histogram", index: index + 1 };
        let buckets = self.bounds_ms.iter().zip(&self.cumulative).map(|(&b, &c)| (b, c, loc)).collect();
        let mut h = Self::from_ms(&self.name, self.labels, self.unit, buckets)?;
        (h.sum_ms, h.count) = (self.sum_ms, self.count);
        Ok(h)
    }

    fn build(
        name: &str,
        labels: Vec<(String, String)>,
        unit: Unit,
        scale: f64,
        mut buckets: Vec<(f64, f64, Loc)>,
    ) -> Result<Histogram, PromError> {
        let series = series_name(name, &labels);
        if buckets.len() > MAX_SERIES_BUCKETS {
            return Err(PromError::TooManyBuckets { series, count: buckets.len() });
        }
        for &(le, count, loc) in &buckets {
            if le.is_nan() || le < 0.0 {
                return Err(PromError::BadBucket { series, loc, field: "le", value: le });
            }
            if !count.is_finite() || count < 0.0 {
                return Err(PromError::BadBucket { series, loc, field: "bucket count", value: count });
            }
        }
        // Exporters write buckets in order, so this is one pass in practice
        // (and the standard sorts would add kilobytes to the Wasm build).
        insertion_sort_by(&mut buckets, |a, b| a.0 < b.0);
        for w in buckets.windows(2) {
            if w[0].0 == w[1].0 {
                return Err(PromError::DuplicateBound { series, loc: w[1].2, le: w[1].0 });
            }
            if w[1].1 < w[0].1 {
                return Err(PromError::NonMonotonic {
                    series,
                    loc: w[1].2,
                    le: w[1].0,
                    count: w[1].1,
                    previous: w[0].1,
                });
            }
        }
        match buckets.last() {
            Some(&(le, _, _)) if le == f64::INFINITY => {}
            _ => return Err(PromError::MissingInf { series }),
        }
        if buckets.len() < 2 {
            return Err(PromError::NoFiniteBucket { series });
        }
        Ok(Histogram {
            name: name.to_string(),
            labels,
            unit,
            bounds_ms: buckets.iter().map(|b| b.0 * scale).collect(),
            cumulative: buckets.iter().map(|b| b.1).collect(),
            sum_ms: None,
            count: None,
        })
    }

    /// `name{labels}`, for messages.
    pub fn series(&self) -> String {
        series_name(&self.name, &self.labels)
    }

    /// The value of label `name`, `""` when absent (Prometheus semantics).
    pub fn label(&self, name: &str) -> &str {
        self.labels.iter().find(|(k, _)| k == name).map_or("", |(_, v)| v.as_str())
    }

    /// The total count (the `+Inf` bucket); 0 for a histogram whose public
    /// fields were set to something [`Histogram::new`] would refuse.
    pub fn total(&self) -> f64 {
        if self.bounds_ms.len() < 2 || self.bounds_ms.len() != self.cumulative.len() {
            return 0.0;
        }
        self.cumulative.last().copied().unwrap_or(0.0)
    }

    /// Adds `other`'s counts into this histogram (same bounds required).
    pub fn merge(&mut self, other: &Histogram) -> Result<(), PromError> {
        if self.bounds_ms != other.bounds_ms {
            return Err(PromError::BoundsDiffer { series: self.series(), other: other.series() });
        }
        for (a, b) in self.cumulative.iter_mut().zip(&other.cumulative) {
            *a += b;
        }
        self.sum_ms = match (self.sum_ms, other.sum_ms) {
            (Some(a), Some(b)) => Some(a + b),
            _ => None,
        };
        self.count = match (self.count, other.count) {
            (Some(a), Some(b)) => Some(a + b),
            _ => None,
        };
        Ok(())
    }

    /// The `q`-quantile by linear interpolation inside the bucket holding
    /// rank `q · total` (`histogram_quantile` semantics). `None` when empty;
    /// `q` must already be validated (`0..=1`).
    pub fn quantile(&self, q: f64) -> Option<BucketQuantile> {
        let total = self.total();
        if total.is_nan() || total <= 0.0 {
            return None;
        }
        let rank = q * total;
        let i = self.cumulative.iter().position(|&c| c >= rank).unwrap_or(self.cumulative.len() - 1);
        let last = self.bounds_ms.len() - 1;
        if i == last {
            let b = self.bounds_ms[last - 1];
            return Some(BucketQuantile { ms: b, lo_ms: b, hi_ms: f64::INFINITY, above_largest: true });
        }
        let hi = self.bounds_ms[i];
        let (lo, prev) = if i == 0 { (0.0, 0.0) } else { (self.bounds_ms[i - 1], self.cumulative[i - 1]) };
        let inside = self.cumulative[i] - prev;
        let ms = if inside > 0.0 { lo + (hi - lo) * ((rank - prev) / inside).clamp(0.0, 1.0) } else { hi };
        Some(BucketQuantile { ms, lo_ms: lo, hi_ms: hi, above_largest: false })
    }

    /// The share of observations above `t_ms`, interpolating linearly inside
    /// the bucket holding `t_ms`; past the largest finite bound only the
    /// `+Inf` bucket's share is known and returned. `None` when empty.
    pub fn fraction_above(&self, t_ms: f64) -> Option<f64> {
        let total = self.total();
        if total.is_nan() || total <= 0.0 {
            return None;
        }
        let last = self.bounds_ms.len() - 1;
        let mut below = self.cumulative[last - 1];
        let mut prev = (0.0, 0.0);
        for i in 0..last {
            let (hi, c) = (self.bounds_ms[i], self.cumulative[i]);
            if t_ms <= hi {
                let width = hi - prev.0;
                let part = if width > 0.0 { ((t_ms - prev.0) / width).clamp(0.0, 1.0) } else { 1.0 };
                below = prev.1 + (c - prev.1) * part;
                break;
            }
            prev = (hi, c);
        }
        Some(((total - below) / total).clamp(0.0, 1.0))
    }
}

fn syntax(loc: Loc, field: &'static str, detail: Message) -> PromError {
    PromError::Syntax { loc, field, detail }
}

/// Assembles histograms from samples. `metric` is the family name (a
/// trailing `_bucket` is ignored); without it the samples must hold exactly
/// one histogram family. Series are returned ordered by their labels.
pub fn histograms(samples: &[PromSample], metric: Option<&str>) -> Result<Vec<Histogram>, PromError> {
    let metric = match metric {
        Some(m) => m.to_string(),
        None => {
            let mut families = Vec::new();
            for s in samples {
                note_family(&mut families, s);
            }
            only_family(families)?
        }
    };
    let mut assembler = Assembler::new(&metric);
    for s in samples {
        assembler.feed(s)?;
    }
    let mut out = Vec::new();
    assembler.finish(&mut |h| out.push(h))?;
    Ok(out)
}

/// Records the histogram family of `s` (a `*_bucket` sample with an `le`
/// label) in `families`, once, in order of appearance.
fn note_family(families: &mut Vec<String>, s: &PromSample) {
    if let Some(fam) = s.name.strip_suffix("_bucket") {
        if s.labels.iter().any(|(k, _)| k == "le") && !families.iter().any(|f| f == fam) {
            families.push(fam.to_string());
        }
    }
}

/// The one family present, or why there is not exactly one.
fn only_family(mut families: Vec<String>) -> Result<String, PromError> {
    match families.len() {
        1 => Ok(families.remove(0)),
        0 => Err(PromError::NoHistogram { metric: None, found: families }),
        _ => Err(PromError::Ambiguous { found: families }),
    }
}

/// One series being assembled: its buckets, `_sum` and `_count`.
type SeriesParts = (Vec<(f64, f64, Loc)>, Option<f64>, Option<f64>);
/// A series' labels (without `le`, sorted by name) and its parts.
type Series = (Vec<(String, String)>, SeriesParts);

/// Files the samples of one family under their series (labels without `le`,
/// sorted by name) as they come, and builds the histograms at the end.
struct Assembler {
    family: String,
    bucket_name: String,
    sum_name: String,
    count_name: String,
    /// Every histogram family seen, for the error when `family` is not one.
    families: Vec<String>,
    /// The first malformed bucket of `family`: reported after the check that
    /// the family exists, as when all samples are collected first.
    error: Option<PromError>,
    /// One entry per run of consecutive samples of one series (exporters
    /// write a series' lines together), sorted and merged at the end.
    series: Vec<Series>,
}

impl Assembler {
    fn new(metric: &str) -> Self {
        let family = metric.strip_suffix("_bucket").unwrap_or(metric).to_string();
        Self {
            bucket_name: format!("{family}_bucket"),
            sum_name: format!("{family}_sum"),
            count_name: format!("{family}_count"),
            family,
            families: Vec::new(),
            error: None,
            series: Vec::new(),
        }
    }

    fn feed(&mut self, s: &PromSample) -> Result<(), PromError> {
        note_family(&mut self.families, s);
        let kind = if s.name == self.bucket_name {
            0
        } else if s.name == self.sum_name {
            1
        } else if s.name == self.count_name {
            2
        } else {
            return Ok(());
        };
        let mut le = None;
        let mut labels: Vec<(String, String)> = Vec::with_capacity(s.labels.len() - usize::from(kind == 0));
        for (k, v) in &s.labels {
            if k == "le" && kind == 0 {
                le = Some(v.as_str());
            } else if k != "__name__" {
                labels.push((k.clone(), v.clone()));
            }
        }
        insertion_sort_by(&mut labels, |a, b| a.0 < b.0);
        let same = self.series.last().is_some_and(|(last, _)| *last == labels);
        if !same {
            self.series.push((labels, (Vec::new(), None, None)));
        }
        let Some((_, parts)) = self.series.last_mut() else { return Ok(()) };
        match kind {
            0 if self.error.is_none() => {
                let bound = match le {
                    None => Err(syntax(s.loc, "label name", Message::new(msg::NEEDS_LE))),
                    Some(text) => parse_value(text.trim()).ok_or_else(|| {
                        syntax(s.loc, "label value", Message::new(msg::LE_NOT_A_NUMBER).arg("text", text))
                    }),
                };
                match bound {
                    Ok(le) => parts.0.push((le, s.value, s.loc)),
                    Err(e) => self.error = Some(e),
                }
            }
            0 => {}
            1 => parts.1 = Some(s.value),
            _ => parts.2 = Some(s.value),
        }
        Ok(())
    }

    /// Validates and hands over every histogram, in label order. On an
    /// error, the histograms handed over so far are to be discarded.
    fn finish(self, each: &mut dyn FnMut(Histogram)) -> Result<(), PromError> {
        if !self.families.contains(&self.family) {
            return Err(PromError::NoHistogram { metric: Some(self.family), found: self.families });
        }
        if let Some(e) = self.error {
            return Err(e);
        }
        let scale = Unit::of(&self.family).to_ms();
        // Stable: runs of one series stay in the order their samples came.
        let order = merge_sort_indices(self.series.len(), |i, j| self.series[i].0 < self.series[j].0);
        let mut runs: Vec<Option<Series>> = self.series.into_iter().map(Some).collect();
        let mut series: Vec<Series> = Vec::with_capacity(runs.len());
        for (labels, (buckets, sum, count)) in order.into_iter().filter_map(|i| runs.get_mut(i).and_then(Option::take))
        {
            match series.last_mut() {
                Some((last, parts)) if *last == labels => {
                    parts.0.extend(buckets);
                    parts.1 = sum.or(parts.1);
                    parts.2 = count.or(parts.2);
                }
                _ => series.push((labels, (buckets, sum, count))),
            }
        }
        for (labels, (buckets, sum, count)) in series {
            if buckets.is_empty() {
                // A `_sum`/`_count` without buckets (a summary): not a histogram.
                continue;
            }
            let mut h = Histogram::new(&self.family, labels, buckets)?;
            h.sum_ms = sum.map(|v| v * scale);
            h.count = count;
            each(h);
        }
        Ok(())
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

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
    }
}
