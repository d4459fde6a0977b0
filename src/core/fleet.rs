//! The fleet's aggregator: flushes of latency sketches from many isolates,
//! merged into a sliding window of per-bucket sketches, and the timeout
//! table derived from them.
//!
//! # Why
//! One isolate sees a sliver of the traffic and forgets it at eviction; a
//! timeout derived from its own samples is noisy and starts from nothing at
//! every cold start. Sketches merge exactly (merging is adding counters), so
//! one aggregator (a Durable Object, or a Deno KV key range) can hold the
//! fleet's distribution and serve one table back to every isolate. This
//! module is that aggregator as a machine: flush bytes and the time go in,
//! windows (as bytes, for storage) and the table come out. It reads no clock
//! and does no I/O; `js/durable.js` stores its windows and answers HTTP.
//!
//! # Windows
//! Time is cut into windows of `windowMs` (an hour by default); a flush is
//! merged into the window holding its arrival time, and only the newest
//! `windows` (24 by default) are kept: older traffic ages out whole. Each
//! window is stored as its own value ([`Aggregator::window_bytes`]), so a
//! flush rewrites one window, never the whole history.
//!
//! # The table
//! A bucket's row is derived ([`derive_sketch_with`]) from its *span*: the
//! current window and the one before it, extended back one window at a time
//! while the span holds fewer than `10 / (1 − q)` successes. A busy bucket
//! therefore follows a shift within two windows (the span is then all new
//! traffic), and a quiet one still gets a value from older windows.
//! `timeouts`, `errors`, the in-force value (for the drift check) and the
//! floor come from the same span.
//!
//! # The table kept up to date
//! A row depends only on the cells of its span, and a span holds every cell
//! of its bucket from its oldest window on: [`Aggregator::table`] keeps each
//! row it derived with that window's index. A merge forgets the rows of the
//! buckets it merged, a window loaded those of the buckets whose cells
//! differ from the ones it replaces, a window dropped those of its buckets.
//! A read derives again the rows missing and, when the current window is
//! not the last read's, walks each kept row's span again (counts only, no
//! merge) and derives again the rows whose oldest window moved: a busy
//! bucket's at each new window (its span is the current window and the one
//! before), a quiet one's only when it reaches back further or less far. So
//! the first read after a flush costs the flush's buckets, and the first in
//! a new window the busy buckets, not the whole table. The rows derived in
//! one read share one [`BoundCache`]: each bucket bound is inverted once per
//! read, not once per row. The rows kept are at most one per bucket name of
//! the kept windows, each far smaller than its cells.

//! # The censoring floor (`floorMs`)
//! When more calls timed out than lie beyond the percentile (the
//! `censored` warning: `timeouts > (1 − q) · (n + timeouts)` over the span),
//! the successes are cut off at the timeout that was in force, and the
//! percentile derived from them is too low: serving it would time out even
//! more calls, the ratchet the censoring guard exists to stop. The floor is
//! then the highest in-force timeout any isolate reported together with
//! timeouts in the span: an isolate never serves less. Without censoring (or
//! without an in-force value reported with timeouts) there is no floor (`None`).
//!
//! # Untrusted bytes
//! Flush and window bytes come from outside (isolates, storage). Everything
//! is checked before anything changes: the format, every count (≤ 2^53 − 1,
//! and sums too), the relative error (it must be the aggregator's: sketches
//! of another one would merge wrongly), bucket names, the number of buckets
//! per window ([`MAX_BUCKETS`]) and the size ([`MAX_FLUSH_BYTES`]). A refused
//! flush changes nothing.
//!
//! # Invariants (each is a test in `fleet/tests.rs`)
//! 1. Merging flushes gives the counts and quantiles of one sketch fed every
//!    sample (a bucket's `n` is the sum of its successes).
//! 2. A refused flush or window leaves the aggregator byte-for-byte as it was.
//! 3. `from_bytes(to_bytes())` answers the same table; so does loading every
//!    `window_bytes` into a new aggregator.
//! 4. At most `windows` windows are kept, each with at most [`MAX_BUCKETS`]
//!    buckets; a window older than that is dropped and reported once.
//! 5. `floor_ms` is `Some` exactly when the span is censored and some
//!    timeouts came with an in-force value; it is the largest such value.
//! 6. The table kept up to date is the table derived from scratch from the
//!    same windows, after any sequence of merges, reads (in the same window
//!    or a later one), windows loaded or dropped, refused flushes and
//!    windows, and clocks that went back.

use serde::{Deserialize, Serialize};

use crate::core::deadline::{check_ms, DeadlineError};
use crate::core::derive::{derive_sketch_with, samples_needed, DeriveError, DeriveOptions, Excluded, Warning};
use crate::core::error::{Described, Message};
use crate::core::sketch::{BoundCache, LatencySketch, MAX_COUNT};

mod flush;
use crate::core::book::{BookError, FlushBatch, FlushBucket, MAX_FLUSH_BYTES};
pub use flush::FlushRefusal;
use flush::{bad, ByteReader};

/// The default window: one hour.
pub const DEFAULT_WINDOW_MS: f64 = 3_600_000.0;
/// The default number of windows kept: a day of hourly ones.
pub const DEFAULT_WINDOWS: u32 = 24;
/// The most windows kept.
pub const MAX_WINDOWS: u32 = 1024;
/// The shortest window: one second.
pub const MIN_WINDOW_MS: f64 = 1000.0;
/// The most distinct buckets in one window.
pub const MAX_BUCKETS: usize = 1024;
/// The most calls (successes, timeouts and errors) one bucket of one flush
/// may carry: what one isolate plausibly records between two flushes (a
/// book flushes every `flushEveryMs`, 10 s by default: this is 100 000
/// calls a second of one bucket). Past it the bucket is refused
/// (`TOO_MANY_CALLS`), so one flush cannot outweigh the fleet's traffic.
pub const MAX_FLUSH_CALLS: u64 = 1_000_000;
/// The largest window accepted from storage (1 024 buckets of at most 16 KB
/// sketches, and their names).
pub const MAX_WINDOW_BYTES: usize = 32 * 1024 * 1024;

const WINDOW_MAGIC: [u8; 4] = *b"EDFW";
const STATE_MAGIC: [u8; 4] = *b"EDFS";
const FORMAT_VERSION: u8 = 1;

/// How the aggregator windows and derives.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub struct FleetOptions {
    /// The length of one window, in ms (1 000 … 2^53 − 1); an hour by default.
    pub window_ms: f64,
    /// How many windows are kept (1 … 1 024); 24 by default.
    pub windows: u32,
    /// The percentile read, strictly between 0 and 1; 0.99 by default.
    pub q: f64,
    /// The multiple applied to it, 1 … 100; 2 by default.
    pub safety: f64,
    /// The relative error every flushed sketch must have; 0.01 by default.
    pub relative_error: f64,
}

impl Default for FleetOptions {
    fn default() -> Self {
        let d = DeriveOptions::default();
        FleetOptions {
            window_ms: DEFAULT_WINDOW_MS,
            windows: DEFAULT_WINDOWS,
            q: d.q,
            safety: d.safety,
            relative_error: d.relative_error,
        }
    }
}

impl FleetOptions {
    fn derive(&self, configured_ms: Option<f64>) -> DeriveOptions {
        DeriveOptions { q: self.q, safety: self.safety, relative_error: self.relative_error, configured_ms }
    }

    /// Checks every field.
    pub fn validate(&self) -> Result<(), FleetError> {
        if !(self.window_ms >= MIN_WINDOW_MS && self.window_ms <= MAX_COUNT as f64 && self.window_ms.fract() == 0.0) {
            return Err(FleetError::WindowMs { value: self.window_ms });
        }
        if !(1..=MAX_WINDOWS).contains(&self.windows) {
            return Err(FleetError::Windows { value: self.windows as f64 });
        }
        self.derive(None).validate().map_err(FleetError::Options)
    }
}

/// Why a flush, a window, the state or the options were refused.
#[derive(Debug, Clone, PartialEq)]
pub enum FleetError {
    /// `windowMs` is out of range.
    WindowMs {
        /// The value given.
        value: f64,
    },
    /// `windows` is out of range.
    Windows {
        /// The value given.
        value: f64,
    },
    /// `q`, `safety` or `relativeError` was refused.
    Options(DeriveError),
    /// The time given is not an instant.
    Now(DeadlineError),
    /// The bytes are larger than accepted: nothing was read.
    TooLarge {
        /// Their length.
        len: usize,
        /// The most accepted.
        max: usize,
    },
    /// The bytes are not a flush.
    Flush(BookError),
    /// The bytes are not a stored window (or state, `what`).
    Malformed {
        /// `flush`, `window` or `state`.
        what: &'static str,
        /// Where and why.
        refusal: FlushRefusal,
    },
    /// The sketches were made with another relative error, or a stored
    /// window with another window length: merging would be wrong.
    Parameters {
        /// `flush`, `window` or `state`.
        what: &'static str,
        /// The parameter that differs (`relativeError`, `windowMs`).
        name: &'static str,
        /// The aggregator's value.
        ours: f64,
        /// The value in the bytes.
        theirs: f64,
    },
    /// A window would hold more than [`MAX_BUCKETS`] buckets.
    Buckets {
        /// The most buckets per window.
        limit: usize,
    },
    /// A bucket's counts would pass 2^53 − 1.
    Count {
        /// The bucket.
        bucket: String,
    },
    /// A bucket of a flush has more calls than one isolate records between
    /// two flushes ([`MAX_FLUSH_CALLS`]).
    Calls {
        /// The bucket.
        bucket: String,
        /// Its calls: successes, timeouts and errors.
        calls: u64,
    },
}

/// The aggregator's message templates.
pub mod msg {
    crate::templates! { "fleet";
        /// [`FleetError::WindowMs`](super::FleetError::WindowMs).
        WINDOW_MS = "'windowMs' must be a whole number of ms, at least {min}: current value is {value}";
        /// [`FleetError::Windows`](super::FleetError::Windows).
        WINDOWS = "'windows' must be a whole number between 1 and {max}: current value is {value}";
        /// [`FleetError::TooLarge`](super::FleetError::TooLarge).
        TOO_LARGE = "the {what} is {len} bytes; at most {max} are accepted";
        /// [`FleetError::Malformed`](super::FleetError::Malformed).
        MALFORMED = "not a valid {what}: '{field}' {detail}";
        /// [`FleetError::Parameters`](super::FleetError::Parameters).
        PARAMETERS = "the {what} has {name} {theirs}, this aggregator {ours}: nothing was merged (configure both alike)";
        /// [`FleetError::Buckets`](super::FleetError::Buckets).
        BUCKETS = "a window holds at most {limit} buckets: record into fewer bucket names";
        /// [`FleetError::Count`](super::FleetError::Count).
        COUNT = "bucket '{bucket}' would count more than 2^53 - 1 calls: it was not merged";
        /// [`FleetError::Calls`](super::FleetError::Calls).
        CALLS = "bucket '{bucket}' carries {calls} calls; one flush carries at most {max} per bucket: it was not merged";
    }
}

crate::described_error!(FleetError);

impl Described for FleetError {
    fn code(&self) -> &'static str {
        match self {
            Self::WindowMs { .. } | Self::Windows { .. } => "OUT_OF_RANGE",
            Self::Options(e) => e.code(),
            Self::Now(e) => e.code(),
            Self::TooLarge { .. } => "TOO_LARGE",
            Self::Flush(e) => e.code(),
            Self::Malformed { .. } => "MALFORMED",
            Self::Parameters { .. } => "WRONG_PARAMETERS",
            Self::Buckets { .. } => "TOO_MANY_BUCKETS",
            Self::Count { .. } => "COUNT_OVERFLOW",
            Self::Calls { .. } => "TOO_MANY_CALLS",
        }
    }

    fn param(&self) -> Option<String> {
        Some(match self {
            Self::WindowMs { .. } => "options.windowMs".into(),
            Self::Windows { .. } => "options.windows".into(),
            Self::Options(e) => return e.param(),
            Self::Now(e) => return Described::param(e),
            Self::Flush(e) => return e.param(),
            Self::TooLarge { .. } | Self::Malformed { .. } | Self::Parameters { .. } => "bytes".into(),
            Self::Buckets { .. } | Self::Count { .. } | Self::Calls { .. } => "bytes".into(),
        })
    }

    fn message(&self) -> Message {
        match self {
            Self::WindowMs { value } => Message::new(msg::WINDOW_MS).arg("min", MIN_WINDOW_MS).arg("value", *value),
            Self::Windows { value } => Message::new(msg::WINDOWS).arg("max", MAX_WINDOWS).arg("value", *value),
            Self::Options(e) => e.message(),
            Self::Now(e) => e.message(),
            Self::TooLarge { len, max } => {
                Message::new(msg::TOO_LARGE).arg("what", "flush").arg("len", *len).arg("max", *max)
            }
            Self::Flush(e) => e.message(),
            Self::Malformed { what, refusal } => Message::new(msg::MALFORMED)
                .arg("what", *what)
                .arg("field", refusal.field)
                .arg("detail", refusal.detail.as_str()),
            Self::Parameters { what, name, ours, theirs } => Message::new(msg::PARAMETERS)
                .arg("what", *what)
                .arg("name", *name)
                .arg("ours", *ours)
                .arg("theirs", *theirs),
            Self::Buckets { limit } => Message::new(msg::BUCKETS).arg("limit", *limit),
            Self::Count { bucket } => Message::new(msg::COUNT).arg("bucket", bucket.as_str()),
            Self::Calls { bucket, calls } => Message::new(msg::CALLS)
                .arg("bucket", bucket.as_str())
                .arg("calls", *calls as f64)
                .arg("max", MAX_FLUSH_CALLS as f64),
        }
    }
}

/// What [`Aggregator::merge`] did with a flush.
#[derive(Debug, Clone, PartialEq)]
pub struct Merged {
    /// The window merged into (or that would have been, when every bucket was refused).
    pub window: i64,
    /// How many buckets were merged.
    pub merged: usize,
    /// The buckets not merged, in the flush's order, each with its reason.
    pub refused: Vec<RefusedBucket>,
}

/// A bucket of a flush that was not merged (the rest of the flush was).
#[derive(Debug, Clone, PartialEq)]
pub struct RefusedBucket {
    /// Its name.
    pub bucket: String,
    /// Why: [`FleetError::Buckets`], [`FleetError::Calls`] or [`FleetError::Count`].
    pub error: FleetError,
}

/// One bucket in one window.
#[derive(Debug, Clone)]
struct Cell {
    name: String,
    successes: LatencySketch,
    timeouts: u64,
    errors: u64,
    /// The in-force timeout of the latest flush that had one.
    in_force_ms: Option<f64>,
    /// The largest in-force timeout reported together with timeouts.
    censor_ms: Option<f64>,
}

/// One window: its index (`floor(t / windowMs)`) and its buckets, sorted by name.
#[derive(Debug, Clone)]
struct Window {
    index: i64,
    cells: Vec<Cell>,
}

/// The aggregator. See the module docs.
#[derive(Debug, Clone)]
pub struct Aggregator {
    opts: FleetOptions,
    /// Sorted by index, oldest first.
    windows: Vec<Window>,
    /// Windows changed since the last [`Aggregator::take_changes`].
    dirty: Vec<i64>,
    /// Windows dropped since then.
    dropped: Vec<i64>,
    /// The table's rows as last derived, each kept until a change reaches its bucket.
    rows: Rows,
}

/// The rows derived, sorted by name, each with the oldest window of its span.
/// A merge, a window loaded or dropped, forgets the rows of the buckets it
/// changed; [`Aggregator::table`] derives again the rows missing and, in
/// another current window than the last read's, those whose span moved.
#[derive(Debug, Clone, Default)]
struct Rows {
    /// The current window of the last read.
    current: Option<i64>,
    rows: Vec<KeptRow>,
    /// How many rows were derived (what the tests count).
    derived: u64,
}

/// A row as derived, and the oldest window whose cell its span merged: the
/// span holds every cell of the bucket from that window on.
#[derive(Debug, Clone)]
struct KeptRow {
    name: String,
    row: TableRow,
    from: i64,
}

impl Rows {
    fn forget(&mut self, name: &str) {
        if let Ok(i) = self.rows.binary_search_by(|k| k.name.as_str().cmp(name)) {
            self.rows.remove(i);
        }
    }
}

/// Whether two cells of one name would derive alike (every field the same).
fn same_cell(a: &Cell, b: &Cell) -> bool {
    let bits = |x: Option<f64>| x.map(f64::to_bits);
    a.name == b.name
        && a.timeouts == b.timeouts
        && a.errors == b.errors
        && bits(a.in_force_ms) == bits(b.in_force_ms)
        && bits(a.censor_ms) == bits(b.censor_ms)
        && a.successes.same_as(&b.successes)
}

/// What changed since the last call of [`Aggregator::take_changes`]: the
/// windows to write and the windows to delete.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub struct Changes {
    /// Window indexes whose bytes changed.
    pub dirty: Vec<f64>,
    /// Window indexes dropped.
    pub dropped: Vec<f64>,
}

/// One bucket of the table.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify), tsify(missing_as_null))]
pub struct TableRow {
    /// Successes merged over the span.
    pub n: u64,
    /// Calls that timed out in the span.
    pub timeouts: u64,
    /// Calls that failed otherwise in the span.
    pub errors: u64,
    /// The percentile × safety, in ms.
    pub timeout_ms: Option<f64>,
    /// The median, in ms.
    pub p50: Option<f64>,
    /// The 99th percentile, in ms.
    pub p99: Option<f64>,
    /// The censoring floor (see the module docs), in ms.
    pub floor_ms: Option<f64>,
    /// The share of the span's successes slower than `timeoutMs`.
    pub false_timeout_rate: Option<f64>,
    /// What the reader should know (`censored`, `small-sample`, `drift`, …).
    #[cfg_attr(feature = "typescript", tsify(type = "{ code: string, message: string }[]"))]
    pub warnings: Vec<Warning>,
}

/// The derived table, as `GET /table` serves it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify), tsify(missing_as_null, hashmap_as_object))]
pub struct Table {
    /// The format version, 1.
    pub v: u32,
    /// When it was derived (ISO 8601, UTC).
    pub derived_at: String,
    /// The window length, in ms.
    pub window_ms: f64,
    /// How many windows are kept.
    pub windows: u32,
    /// The percentile.
    pub q: f64,
    /// The safety factor.
    pub safety: f64,
    /// One row per bucket name, in name order.
    #[serde(serialize_with = "rows_as_object")]
    #[cfg_attr(feature = "typescript", tsify(type = "Record<string, TableRow>"))]
    pub buckets: Vec<(String, TableRow)>,
}

fn rows_as_object<S: serde::Serializer>(rows: &[(String, TableRow)], s: S) -> Result<S::Ok, S::Error> {
    s.collect_map(rows.iter().map(|(k, v)| (k, v)))
}

/// `ms` since 1970 as ISO 8601 UTC with milliseconds (`2026-01-02T03:04:05.678Z`).
pub fn iso_8601(ms: f64) -> String {
    let ms = if ms.is_finite() { ms.floor() as i64 } else { 0 };
    let days = ms.div_euclid(86_400_000);
    let in_day = ms.rem_euclid(86_400_000);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    let (h, mi, s, milli) = (in_day / 3_600_000, in_day / 60_000 % 60, in_day / 1000 % 60, in_day % 1000);
    format!("{y:04}-{m:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{milli:03}Z")
}

fn check_now(now_ms: f64) -> Result<f64, FleetError> {
    check_ms("nowMs", now_ms).map_err(FleetError::Now)
}

fn put_f64(out: &mut Vec<u8>, v: f64) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// The cells of bucket `name`'s span at window `current`, newest first, from
/// `kept` (newest first): the current window and the one before, then back
/// while there are fewer than `needed` successes (the module docs), and
/// never past 2^53 − 1 of them (a cell that would pass it ends the span).
/// Each comes with its window's index; the last is the span's oldest.
fn span<'a>(kept: &[&'a Window], current: i64, name: &str, needed: f64) -> Vec<(i64, &'a Cell)> {
    let mut cells = Vec::new();
    let mut count = 0u64;
    for w in kept {
        if w.index < current - 1 && count as f64 >= needed {
            break;
        }
        let Ok(j) = w.cells.binary_search_by(|c| c.name.as_str().cmp(name)) else { continue };
        let c = &w.cells[j];
        // Both are at most 2^53 − 1: the sum cannot wrap.
        if count + c.successes.count() > MAX_COUNT {
            break;
        }
        count += c.successes.count();
        cells.push((w.index, c));
    }
    cells
}

/// One bucket's row, derived from the cells of its span (as [`span`] gives them).
fn derive_row(opts: &FleetOptions, span: &[(i64, &Cell)], bounds: &mut BoundCache) -> Result<TableRow, FleetError> {
    let sketch_error = |e| FleetError::Options(DeriveError::Sketch(e));
    let mut merged = LatencySketch::new(opts.relative_error).map_err(sketch_error)?;
    let (mut timeouts, mut errors) = (0u64, 0u64);
    let (mut in_force, mut censor): (Option<f64>, Option<f64>) = (None, None);
    for (_, c) in span {
        // Every cell has the aggregator's relative error and the span's
        // count stays within 2^53 − 1: this merge is not refused.
        merged.merge(&c.successes).map_err(sketch_error)?;
        // Counts per window are ≤ 2^53 − 1 and windows ≤ 1 024: no u64 overflow.
        timeouts = timeouts.saturating_add(c.timeouts);
        errors = errors.saturating_add(c.errors);
        in_force = in_force.or(c.in_force_ms);
        if let Some(m) = c.censor_ms {
            censor = Some(censor.map_or(m, |x: f64| x.max(m)));
        }
    }
    let excluded = Excluded { timeouts, errors };
    let r = derive_sketch_with(&merged, excluded, &opts.derive(in_force), bounds).map_err(FleetError::Options)?;
    let censored = r.warnings.iter().any(|w| matches!(w, Warning::Censored { .. }));
    let false_timeout_rate = r.timeout_ms.and_then(|t| merged.fraction_above(t).ok().flatten());
    Ok(TableRow {
        n: r.n,
        timeouts,
        errors,
        timeout_ms: r.timeout_ms,
        p50: r.p50_ms,
        p99: r.p99_ms,
        floor_ms: if censored { censor } else { None },
        false_timeout_rate,
        warnings: r.warnings,
    })
}

/// The names of `a` and `b`, both sorted and without repeats, in order and once each.
fn union<'a>(a: &[&'a str], b: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut out = Vec::with_capacity(a.len());
    let mut a = a.iter().copied().peekable();
    let mut b = b.peekable();
    loop {
        let next = match (a.peek(), b.peek()) {
            (Some(x), Some(y)) if x < y => a.next(),
            (Some(x), Some(y)) if x > y => b.next(),
            (Some(_), Some(_)) => {
                b.next();
                a.next()
            }
            (Some(_), None) => a.next(),
            (None, Some(_)) => b.next(),
            (None, None) => return out,
        };
        out.extend(next);
    }
}

/// Forgets the rows of the names whose cells differ between `old` and `new`
/// (both sorted by name): those only in one, and those that changed.
fn forget_changed(rows: &mut Rows, old: &[Cell], new: &[Cell]) {
    let (mut i, mut j) = (0, 0);
    loop {
        match (old.get(i), new.get(j)) {
            (Some(a), Some(b)) if a.name == b.name => {
                if !same_cell(a, b) {
                    rows.forget(&a.name);
                }
                i += 1;
                j += 1;
            }
            (Some(a), Some(b)) if a.name < b.name => {
                rows.forget(&a.name);
                i += 1;
            }
            (Some(a), None) => {
                rows.forget(&a.name);
                i += 1;
            }
            (_, Some(b)) => {
                rows.forget(&b.name);
                j += 1;
            }
            (None, None) => break,
        }
    }
}

impl Aggregator {
    /// An empty aggregator; the options are checked.
    pub fn new(opts: FleetOptions) -> Result<Aggregator, FleetError> {
        opts.validate()?;
        Ok(Aggregator { opts, windows: Vec::new(), dirty: Vec::new(), dropped: Vec::new(), rows: Rows::default() })
    }

    /// The options.
    pub fn options(&self) -> &FleetOptions {
        &self.opts
    }

    /// The window holding instant `now_ms`.
    pub fn window_index(&self, now_ms: f64) -> i64 {
        (now_ms / self.opts.window_ms).floor() as i64
    }

    /// The kept windows' indexes, oldest first.
    pub fn window_indexes(&self) -> Vec<i64> {
        self.windows.iter().map(|w| w.index).collect()
    }

    /// Drops the windows too old at `now_ms` (reported by [`Aggregator::take_changes`]).
    pub fn expire(&mut self, now_ms: f64) -> Result<(), FleetError> {
        let now = check_now(now_ms)?;
        let oldest = self.window_index(now) - i64::from(self.opts.windows) + 1;
        self.expire_before(oldest);
        Ok(())
    }

    fn expire_before(&mut self, oldest: i64) {
        while self.windows.first().is_some_and(|w| w.index < oldest) {
            let w = self.windows.remove(0);
            for c in &w.cells {
                self.rows.forget(&c.name);
            }
            self.dirty.retain(|&d| d != w.index);
            self.dropped.push(w.index);
        }
    }

    /// Windows written and dropped since the last call.
    pub fn take_changes(&mut self) -> Changes {
        let mut dirty: Vec<f64> = self.dirty.drain(..).map(|i| i as f64).collect();
        dirty.dedup();
        Changes { dirty, dropped: self.dropped.drain(..).map(|i| i as f64).collect() }
    }

    /// Merges one flush (its bytes, as received) into the window of `now_ms`,
    /// after expiring the windows too old then. A flush that is not one
    /// (bytes, format, parameters) is refused whole and changes nothing.
    /// Otherwise each bucket is merged or refused on its own
    /// ([`Merged::refused`]): a new name past the window's [`MAX_BUCKETS`]
    /// (`TOO_MANY_BUCKETS`), more than [`MAX_FLUSH_CALLS`] calls
    /// (`TOO_MANY_CALLS`), or counts that would pass 2^53 − 1
    /// (`COUNT_OVERFLOW`); a refused bucket changes nothing, and when every
    /// bucket is refused nothing changes at all.
    pub fn merge(&mut self, bytes: &[u8], now_ms: f64) -> Result<Merged, FleetError> {
        let now = check_now(now_ms)?;
        if bytes.len() > MAX_FLUSH_BYTES {
            return Err(FleetError::TooLarge { len: bytes.len(), max: MAX_FLUSH_BYTES });
        }
        let batch = FlushBatch::from_bytes(bytes).map_err(FleetError::Flush)?;
        if batch.relative_error.to_bits() != self.opts.relative_error.to_bits() {
            return Err(FleetError::Parameters {
                what: "flush",
                name: "relativeError",
                ours: self.opts.relative_error,
                theirs: batch.relative_error,
            });
        }
        let mut index = self.window_index(now);
        // A clock that went back: never into a window about to be dropped.
        if let Some(newest) = self.windows.last().map(|w| w.index) {
            index = index.max(newest - i64::from(self.opts.windows) + 1);
        }
        let at = self.windows.binary_search_by_key(&index, |w| w.index);
        // Decide every bucket before changing anything.
        let mut refused: Vec<RefusedBucket> = Vec::new();
        let mut accepted: Vec<FlushBucket> = Vec::with_capacity(batch.buckets.len());
        {
            let cells: &[Cell] = match at {
                Ok(i) => &self.windows[i].cells,
                Err(_) => &[],
            };
            let mut new_names = 0usize;
            for b in batch.buckets {
                let calls = b.successes.count().saturating_add(b.timeouts).saturating_add(b.errors);
                let why = if calls > MAX_FLUSH_CALLS {
                    Some(FleetError::Calls { bucket: b.name.clone(), calls })
                } else {
                    match cells.binary_search_by(|c| c.name.as_str().cmp(&b.name)) {
                        Ok(j) => {
                            let c = &cells[j];
                            let over = |a: u64, b: u64| a + b > MAX_COUNT;
                            (over(c.successes.count(), b.successes.count())
                                || over(c.timeouts, b.timeouts)
                                || over(c.errors, b.errors))
                            .then(|| FleetError::Count { bucket: b.name.clone() })
                        }
                        Err(_) if cells.len() + new_names >= MAX_BUCKETS => {
                            Some(FleetError::Buckets { limit: MAX_BUCKETS })
                        }
                        Err(_) => {
                            new_names += 1;
                            None
                        }
                    }
                };
                match why {
                    Some(error) => refused.push(RefusedBucket { bucket: b.name, error }),
                    None => accepted.push(b),
                }
            }
        }
        if accepted.is_empty() {
            return Ok(Merged { window: index, merged: 0, refused });
        }
        let merged = accepted.len();
        let wi = match at {
            Ok(i) => i,
            Err(i) => {
                self.windows.insert(i, Window { index, cells: Vec::new() });
                i
            }
        };
        let window = &mut self.windows[wi];
        for b in accepted {
            let j = match window.cells.binary_search_by(|c| c.name.as_str().cmp(&b.name)) {
                Ok(j) => j,
                Err(j) => {
                    let successes = match LatencySketch::new(self.opts.relative_error) {
                        Ok(s) => s,
                        Err(e) => return Err(FleetError::Options(DeriveError::Sketch(e))),
                    };
                    window.cells.insert(
                        j,
                        Cell {
                            name: b.name.clone(),
                            successes,
                            timeouts: 0,
                            errors: 0,
                            in_force_ms: None,
                            censor_ms: None,
                        },
                    );
                    j
                }
            };
            self.rows.forget(&b.name);
            let c = &mut window.cells[j];
            // Checked above: same relative error, counts within MAX_COUNT.
            let _ = c.successes.merge(&b.successes);
            c.timeouts += b.timeouts;
            c.errors += b.errors;
            if let Some(t) = b.in_force_ms {
                c.in_force_ms = Some(t);
                if b.timeouts > 0 {
                    c.censor_ms = Some(c.censor_ms.map_or(t, |m| m.max(t)));
                }
            }
        }
        if !self.dirty.contains(&index) {
            self.dirty.push(index);
        }
        let newest = self.windows.last().map_or(index, |w| w.index);
        self.expire_before(newest.max(self.window_index(now)) - i64::from(self.opts.windows) + 1);
        Ok(Merged { window: index, merged, refused })
    }

    /// The table at `now_ms` (windows older than the kept ones are left out).
    /// Rows no change reached since they were derived are served as derived
    /// then, unless the current window moved their span; the table is always
    /// the one [`Aggregator::from_bytes`] of this state would derive from scratch.
    pub fn table(&mut self, now_ms: f64) -> Result<Table, FleetError> {
        let now = check_now(now_ms)?;
        let current = self.window_index(now);
        let oldest = current - i64::from(self.opts.windows) + 1;
        let needed = samples_needed(self.opts.q);
        // In the same current window as the last read, a row no change
        // reached has the same span; in another, its span is walked again.
        let moved = self.rows.current != Some(current);
        self.rows.current = Some(current);
        // Newest first, only the kept ones at `now`, none from the future
        // (a clock that went back leaves a window ahead: it counts as current).
        let kept: Vec<&Window> = self.windows.iter().rev().filter(|w| w.index >= oldest).collect();
        // Each window's cells are sorted by name: their names are merged in,
        // one window at a time (not `sort`: the std sort is kilobytes of the .wasm).
        let mut names: Vec<&str> = Vec::new();
        for w in &kept {
            names = union(&names, w.cells.iter().map(|c| c.name.as_str()));
        }
        let mut old = std::mem::take(&mut self.rows.rows).into_iter().peekable();
        let mut rows = Vec::with_capacity(names.len());
        // One cache of bucket bounds for every row derived now (one relative error).
        let mut bounds = BoundCache::default();
        for name in names {
            while old.next_if(|k| k.name.as_str() < name).is_some() {}
            let was = old.next_if(|k| k.name == name);
            let kept_row = match was {
                Some(k) if !moved => k,
                was => {
                    let cells = span(&kept, current, name, needed);
                    let from = cells.last().map_or(current, |(i, _)| *i);
                    match was {
                        // The same oldest window: the same cells, none changed since.
                        Some(k) if k.from == from => k,
                        _ => {
                            self.rows.derived += 1;
                            KeptRow { name: name.to_string(), row: derive_row(&self.opts, &cells, &mut bounds)?, from }
                        }
                    }
                }
            };
            rows.push(kept_row);
        }
        drop(old);
        self.rows.rows = rows;
        let rows = self.rows.rows.iter().map(|k| (k.name.clone(), k.row.clone())).collect();
        Ok(Table {
            v: 1,
            derived_at: iso_8601(now),
            window_ms: self.opts.window_ms,
            windows: self.opts.windows,
            q: self.opts.q,
            safety: self.opts.safety,
            buckets: rows,
        })
    }

    /// One window's bytes, for storage; `None` when it is not kept.
    pub fn window_bytes(&self, index: i64) -> Option<Vec<u8>> {
        let w = self.windows.iter().find(|w| w.index == index)?;
        let mut out = Vec::new();
        out.extend_from_slice(&WINDOW_MAGIC);
        out.push(FORMAT_VERSION);
        put_f64(&mut out, self.opts.window_ms);
        put_f64(&mut out, self.opts.relative_error);
        out.extend_from_slice(&w.index.to_le_bytes());
        out.extend_from_slice(&(w.cells.len() as u32).to_le_bytes());
        for c in &w.cells {
            out.extend_from_slice(&(c.name.len() as u16).to_le_bytes());
            out.extend_from_slice(c.name.as_bytes());
            put_f64(&mut out, c.in_force_ms.unwrap_or(f64::NAN));
            put_f64(&mut out, c.censor_ms.unwrap_or(f64::NAN));
            out.extend_from_slice(&c.timeouts.to_le_bytes());
            out.extend_from_slice(&c.errors.to_le_bytes());
            if c.successes.is_empty() {
                out.extend_from_slice(&0u32.to_le_bytes());
            } else {
                let s = c.successes.to_bytes();
                out.extend_from_slice(&(s.len() as u32).to_le_bytes());
                out.extend_from_slice(&s);
            }
        }
        Some(out)
    }

    fn read_window(&self, bytes: &[u8], what: &'static str) -> Result<Window, FleetError> {
        if bytes.len() > MAX_WINDOW_BYTES {
            return Err(FleetError::TooLarge { len: bytes.len(), max: MAX_WINDOW_BYTES });
        }
        let m = |refusal| FleetError::Malformed { what, refusal };
        let mut r = ByteReader::new(bytes);
        let mut magic = [0u8; 4];
        for (i, b) in magic.iter_mut().enumerate() {
            let _ = i;
            *b = r.u8("magic").map_err(m)?;
        }
        if magic != WINDOW_MAGIC {
            return Err(m(bad("magic", "is not a stored window's")));
        }
        let v = r.u8("version").map_err(m)?;
        if v != FORMAT_VERSION {
            return Err(m(bad("version", format!("is {v}; this aggregator reads {FORMAT_VERSION}"))));
        }
        let window_ms = r.f64("windowMs").map_err(m)?;
        let relative_error = r.f64("relativeError").map_err(m)?;
        for (name, ours, theirs) in
            [("windowMs", self.opts.window_ms, window_ms), ("relativeError", self.opts.relative_error, relative_error)]
        {
            if ours.to_bits() != theirs.to_bits() {
                return Err(FleetError::Parameters { what, name, ours, theirs });
            }
        }
        let index = r.u64("index").map_err(m)? as i64;
        let n = r.u32("bucket count").map_err(m)? as usize;
        if n > MAX_BUCKETS {
            return Err(FleetError::Buckets { limit: MAX_BUCKETS });
        }
        let mut cells: Vec<Cell> = Vec::with_capacity(n.min(64));
        for _ in 0..n {
            let name = flush::name(&mut r).map_err(m)?;
            if cells.last().is_some_and(|c| c.name >= name) {
                return Err(m(bad("name", "is out of order or repeated")));
            }
            let in_force_ms = flush::in_force(r.f64("in-force timeout").map_err(m)?, "in-force timeout").map_err(m)?;
            let censor_ms = flush::in_force(r.f64("censor timeout").map_err(m)?, "censor timeout").map_err(m)?;
            let timeouts = flush::count(r.u64("timeouts").map_err(m)?, "timeouts").map_err(m)?;
            let errors = flush::count(r.u64("errors").map_err(m)?, "errors").map_err(m)?;
            let successes = flush::sketch(&mut r, self.opts.relative_error).map_err(m)?;
            cells.push(Cell { name, successes, timeouts, errors, in_force_ms, censor_ms });
        }
        if r.rest() > 0 {
            return Err(m(bad("bytes", format!("{} byte(s) follow the last bucket", r.rest()))));
        }
        Ok(Window { index, cells })
    }

    /// Replaces (or adds) the window the bytes hold, as read back from
    /// storage; validated whole, nothing changes on a refusal. Answers its index.
    pub fn load_window(&mut self, bytes: &[u8]) -> Result<i64, FleetError> {
        let w = self.read_window(bytes, "window")?;
        let index = w.index;
        match self.windows.binary_search_by_key(&index, |w| w.index) {
            Ok(i) => {
                forget_changed(&mut self.rows, &self.windows[i].cells, &w.cells);
                self.windows[i] = w;
            }
            Err(i) => {
                for c in &w.cells {
                    self.rows.forget(&c.name);
                }
                self.windows.insert(i, w);
            }
        }
        // As a merge and the state read back do: only the newest `windows` are kept.
        let newest = self.windows.last().map_or(index, |w| w.index);
        self.expire_before(newest - i64::from(self.opts.windows) + 1);
        Ok(index)
    }

    /// The whole state as bytes: every kept window.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&STATE_MAGIC);
        out.push(FORMAT_VERSION);
        out.extend_from_slice(&(self.windows.len() as u32).to_le_bytes());
        for w in &self.windows {
            let b = self.window_bytes(w.index).unwrap_or_default();
            out.extend_from_slice(&(b.len() as u32).to_le_bytes());
            out.extend_from_slice(&b);
        }
        out
    }

    /// An aggregator with `opts` holding the state of [`Aggregator::to_bytes`],
    /// validated whole.
    pub fn from_bytes(opts: FleetOptions, bytes: &[u8]) -> Result<Aggregator, FleetError> {
        let mut agg = Aggregator::new(opts)?;
        let m = |refusal| FleetError::Malformed { what: "state", refusal };
        let mut r = ByteReader::new(bytes);
        let mut magic = [0u8; 4];
        for b in magic.iter_mut() {
            *b = r.u8("magic").map_err(m)?;
        }
        if magic != STATE_MAGIC {
            return Err(m(bad("magic", "is not an aggregator state's")));
        }
        let v = r.u8("version").map_err(m)?;
        if v != FORMAT_VERSION {
            return Err(m(bad("version", format!("is {v}; this aggregator reads {FORMAT_VERSION}"))));
        }
        let n = r.u32("window count").map_err(m)?;
        if n > MAX_WINDOWS {
            return Err(m(bad("window count", format!("is {n}, above {MAX_WINDOWS}"))));
        }
        let mut windows: Vec<Window> = Vec::new();
        for _ in 0..n {
            let len = r.u32("window length").map_err(m)? as usize;
            let raw = r.take(len, "window").map_err(m)?;
            let w = agg.read_window(raw, "state")?;
            if windows.last().is_some_and(|p| p.index >= w.index) {
                return Err(m(bad("window", "is out of order or repeated")));
            }
            windows.push(w);
        }
        if r.rest() > 0 {
            return Err(m(bad("bytes", format!("{} byte(s) follow the last window", r.rest()))));
        }
        agg.windows = windows;
        if let Some(newest) = agg.windows.last().map(|w| w.index) {
            agg.expire_before(newest - i64::from(agg.opts.windows) + 1);
            agg.dropped.clear();
        }
        Ok(agg)
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests;
