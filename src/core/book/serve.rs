//! The isolate's side of the loop: when to flush, when to refresh the
//! fleet's table, and which timeout to serve from it.
//!
//! # Why a machine
//! `timeout(bucket)` is on every request's path and synchronous, so it only
//! reads what this machine decided at the last refresh: the served value per
//! bucket and the instant past which none of them is served any more
//! ([`Schedule::stale_at`]). Fetching the table and sending flushes happen
//! elsewhere (JS `fetch`, Rust `web-sys`); the host asks the machine whether
//! one is due ([`Schedule::refresh_due`], [`Schedule::flush_due`]) and
//! reports how it went. Time comes in as `now_ms`; nothing here reads a
//! clock, so both hosts (and the conformance rows) drive the same decisions.
//!
//! # What a refresh may change
//! The table is derived by the aggregator from the whole fleet, but one bad
//! window (an outage, a burst of slow calls) can move it far. A served value
//! therefore moves by at most [`ServeOptions::max_step_factor`] per refresh
//! (×2 by default: up or down). The row's `floorMs`, the censoring floor
//! (below it, the fleet's own timeouts would hide the latencies the value is
//! derived from), raises the value aimed at, within the same step: a table
//! is written by whoever can flush, so neither its percentile nor its floor
//! moves a served value further in one refresh. A bucket's first value
//! (none served before) is bounded the same way around the caller's
//! `fallbackMs`, the value it served until then: the table is kept as a
//! target until the bucket is asked for, and the first `timeout()` anchors
//! it. A served value is a whole number of ms, rounded up, from 1 to
//! [`MAX_SERVED_MS`]: what `AbortSignal.timeout()` and `setTimeout` take.
//!
//! # Enough samples
//! The aggregator derives a value from whatever successes it has (a reader
//! of the table sees it, with a `small-sample` warning), but a percentile
//! from a few calls is noise: a p99 from 50 calls is their maximum. A row is
//! served only once its `n` reaches [`samples_needed`] for the table's `q`
//! (1 000 for p99, the rule behind `small-sample`); until then, as for a row
//! without a value or a bucket missing from the table, its callers get their
//! fallback (warning `FEW_SAMPLES`). A row that drops below the count again
//! is no longer served: the step bound applies between served values only.
//!
//! # Staleness
//! A table is served for at most `maxStaleMs` after it arrived: an isolate
//! that cannot reach the aggregator falls back to its callers' fallbacks
//! rather than serve an old value forever.
//!
//! # Invariants (tested in `book/tests.rs` and by the conformance rows)
//! 1. For a bucket served before and after a refresh, `new` is within
//!    `[old / max_step_factor, old × max_step_factor]` (rounded up), floor or
//!    not; a first value is within the same bounds around the fallback.
//! 2. A served value is a whole number from 1 to [`MAX_SERVED_MS`], it is
//!    the row's `max(timeoutMs, floorMs)` when that is within the step, and
//!    its row has at least [`samples_needed`]`(q)` successes.
//! 3. At `now >= stale_at()` nothing is served.
//! 4. A refresh or flush is due at most once until it is reported (or its
//!    guard, `refreshEveryMs`, passes: a host whose fetch never settles is
//!    not stuck).

use crate::core::deadline::MAX_MS;
use crate::core::derive::samples_needed;
use crate::core::error::{Described, Message};

/// The knobs of [`Schedule`], with the JS option names.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ServeOptions {
    /// `maxStepFactor`: how far one refresh may move a served value (×, ÷). Default 2.
    pub max_step_factor: f64,
    /// `refreshEveryMs`: how often the table is fetched. Default 60 000 (1 min).
    pub refresh_every_ms: f64,
    /// `maxStaleMs`: how long a table is served after it arrived. Default 600 000 (10 min).
    pub max_stale_ms: f64,
    /// `flushEveryMs`: how often at most a flush is sent. Default 10 000 (10 s).
    pub flush_every_ms: f64,
}

impl Default for ServeOptions {
    fn default() -> Self {
        Self { max_step_factor: 2.0, refresh_every_ms: 60_000.0, max_stale_ms: 600_000.0, flush_every_ms: 10_000.0 }
    }
}

/// How long a refresh may go without reporting before it is taken as lost
/// and another starts: a refresh started outside `ctx.waitUntil` in a Worker
/// is dropped when its request ends, and never reports.
pub const REFRESH_LEASE_MS: f64 = 10_000.0;

/// The largest accepted `maxStepFactor`.
pub const MAX_STEP_FACTOR: f64 = 1000.0;

/// The largest value served: 2^31 − 1 ms (about 24.8 days), the longest
/// `setTimeout` delay; `AbortSignal.timeout()` takes it in every runtime.
pub const MAX_SERVED_MS: f64 = 2_147_483_647.0;

/// `target` moved at most `factor` (×, ÷) from `from`, as a served value:
/// rounded up to a whole ms, 1 ..= [`MAX_SERVED_MS`].
fn step(target: f64, from: f64, factor: f64) -> f64 {
    let high = from * factor;
    let v = target.max(from / factor).min(high).ceil();
    // Rounding up must not pass the bound: at the top, the whole ms below it.
    let v = if v > high && high.floor() >= from / factor { high.floor() } else { v };
    v.clamp(1.0, MAX_SERVED_MS)
}

/// A book option out of range.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ServeError {
    /// The option, as JS names it (`options.maxStepFactor`).
    pub param: &'static str,
    /// The value given.
    pub value: f64,
}

/// The serve machine's message templates.
pub mod msg {
    crate::templates! { "book.serve";
        /// `maxStepFactor` out of range.
        STEP = "'{param}' must be a number between 1 and {max}: current value is {value}";
        /// A period out of range.
        PERIOD = "'{param}' must be a number of milliseconds above 0 and at most {max}: current value is {value}";
        /// `maxBuckets` out of range.
        MAX_BUCKETS = "'{param}' must be a whole number between 1 and {max}: current value is {value}";
        /// A bucket name of the wrong length.
        NAME = "'{param}' must be a name of 1 … {max} bytes of UTF-8: current value is {value} bytes long";
        /// Warning `NO_TABLE`: the fleet's table has not arrived yet.
        NO_TABLE = "timeout for '{bucket}': serving the fallback {value} ms until the fleet's table arrives";
        /// Warning `FEW_SAMPLES`: the table has no value for the bucket.
        FEW_SAMPLES = "timeout for '{bucket}': serving the fallback {value} ms; the fleet has no derived value for it yet (too few samples)";
        /// Warning `STALE`: the table is older than `maxStaleMs`.
        STALE = "timeout for '{bucket}': serving the fallback {value} ms; the fleet's table is older than 'maxStaleMs' (the aggregator is unreachable?)";
        /// Warning `BUCKETS_FULL`: `maxBuckets` reached.
        BUCKETS_FULL = "bucket '{bucket}' was not recorded: the book holds 'maxBuckets' ({value}) buckets until its next flush";
        /// Warning `REFRESH_FAILED`: the table could not be read.
        REFRESH_FAILED = "the fleet's table could not be read ({bucket}); retrying in 'refreshEveryMs' ({value} ms)";
        /// Warning `REFRESH_LOST`: a refresh never reported (in a Worker: started outside `ctx.waitUntil`).
        REFRESH_LOST = "a refresh of the fleet's table never finished ({bucket}): in a Worker, give timeout() the handler's ctx (options.ctx) or hand book.flush() to ctx.waitUntil; retrying after {value} ms";
        /// Warning `FLUSH_REFUSED`: the aggregator refused a flush (not retried).
        FLUSH_REFUSED = "the aggregator refused a flush with status {value} ({bucket}); its data was dropped";
        /// Warning `FLUSH_FAILED`: a flush did not reach the aggregator, or it
        /// failed (5xx): the data is merged back and sent with the next flush.
        FLUSH_FAILED = "a flush could not be delivered ({bucket}); its data is kept for the next flush, in 'flushEveryMs' ({value} ms)";
    }
}

/// The text of a book's warning `code` (`NO_TABLE`, …): `bucket` and
/// `value` fill its holes (a detail and a number where the code has no bucket).
pub fn warning(code: &str, bucket: &str, value: f64) -> Option<Message> {
    let t = match code {
        "NO_TABLE" => msg::NO_TABLE,
        "FEW_SAMPLES" => msg::FEW_SAMPLES,
        "STALE" => msg::STALE,
        "BUCKETS_FULL" => msg::BUCKETS_FULL,
        "REFRESH_FAILED" => msg::REFRESH_FAILED,
        "REFRESH_LOST" => msg::REFRESH_LOST,
        "FLUSH_REFUSED" => msg::FLUSH_REFUSED,
        "FLUSH_FAILED" => msg::FLUSH_FAILED,
        _ => return None,
    };
    Some(Message::new(t).arg("bucket", bucket).arg("value", value))
}

/// A book option checked apart from [`ServeOptions`]: `options.maxBuckets`
/// (a whole number, 1 ..= [`MAX_BUCKETS`](super::MAX_BUCKETS)) or
/// `options.fallbackMs` (above 0, at most `MAX_MS`).
pub fn check_option(param: &'static str, value: f64) -> Result<f64, ServeError> {
    let ok = if param == "options.maxBuckets" {
        value.fract() == 0.0 && (1.0..=super::MAX_BUCKETS as f64).contains(&value)
    } else {
        value > 0.0 && value <= MAX_MS
    };
    if ok {
        Ok(value)
    } else {
        Err(ServeError { param, value })
    }
}

/// How many bucket names a book holds for `timeout()` (the in-force value
/// it reports in a flush, the warnings it told) with `max_buckets`: twice the
/// buckets it records between flushes. When full it keeps only the names it
/// is recording, so at least `max_buckets` are free again; warnings told are
/// forgotten then (each may be told once more).
pub fn names_held(max_buckets: usize) -> usize {
    max_buckets.saturating_mul(2)
}

/// A bucket name: 1 ..= [`MAX_NAME_BYTES`](super::MAX_NAME_BYTES) bytes of UTF-8.
pub fn check_bucket(name: &str) -> Result<(), ServeError> {
    if (1..=super::MAX_NAME_BYTES).contains(&name.len()) {
        Ok(())
    } else {
        Err(ServeError { param: "bucket", value: name.len() as f64 })
    }
}

crate::described_error!(ServeError);

impl Described for ServeError {
    fn code(&self) -> &'static str {
        "OUT_OF_RANGE"
    }

    fn param(&self) -> Option<String> {
        Some(self.param.into())
    }

    fn message(&self) -> Message {
        let (t, max) = if self.param.ends_with("maxStepFactor") {
            (msg::STEP, MAX_STEP_FACTOR)
        } else if self.param == "options.maxBuckets" {
            (msg::MAX_BUCKETS, super::MAX_BUCKETS as f64)
        } else if self.param == "bucket" {
            (msg::NAME, super::MAX_NAME_BYTES as f64)
        } else {
            (msg::PERIOD, MAX_MS)
        };
        // The message names the option as the user wrote it, without `options.`.
        let name = self.param.strip_prefix("options.").unwrap_or(self.param);
        Message::new(t).arg("param", name).arg("max", max).arg("value", self.value)
    }
}

impl ServeOptions {
    /// The options, or the first one out of range.
    pub fn check(self) -> Result<Self, ServeError> {
        let f = self.max_step_factor;
        if !(1.0..=MAX_STEP_FACTOR).contains(&f) {
            return Err(ServeError { param: "options.maxStepFactor", value: f });
        }
        for (param, value) in [
            ("options.refreshEveryMs", self.refresh_every_ms),
            ("options.maxStaleMs", self.max_stale_ms),
            ("options.flushEveryMs", self.flush_every_ms),
        ] {
            if !(value > 0.0 && value <= MAX_MS) {
                return Err(ServeError { param, value });
            }
        }
        Ok(self)
    }
}

/// One bucket of the fleet's table, as the isolate reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct TableRow {
    /// The bucket's name.
    pub name: String,
    /// The fleet's derived timeout (`timeoutMs`); `None` while it has too few samples.
    pub timeout_ms: Option<f64>,
    /// The censoring floor (`floorMs`): the lowest value that may be served.
    pub floor_ms: Option<f64>,
    /// The successes the value was derived from (`n`); NaN when absent, which
    /// counts as too few.
    pub n: f64,
}

/// A bound from the table: finite and above 0, or nothing (the table is
/// another process's output: NaN, negatives and ∞ count as absent).
pub(super) fn usable(v: Option<f64>) -> Option<f64> {
    v.filter(|v| v.is_finite() && *v > 0.0)
}

/// When to flush and refresh, and what to serve: see the module docs.
#[derive(Debug, Clone)]
pub struct Schedule {
    options: ServeOptions,
    /// Served values, sorted by name.
    served: Vec<(String, f64)>,
    /// First values: targets of the last table for buckets served nothing
    /// before, sorted by name; served once asked for ([`Schedule::timeout`]).
    pending: Vec<(String, f64)>,
    table_at: Option<f64>,
    refresh_at: f64,
    /// A refresh was started and has not reported (a table or a failure).
    refreshing: bool,
    flush_at: f64,
}

impl Schedule {
    /// A schedule with nothing served: the first refresh and the first
    /// flush are due at once.
    pub fn new(options: ServeOptions) -> Result<Self, ServeError> {
        let options = options.check()?;
        let never = f64::NEG_INFINITY;
        Ok(Self {
            options,
            served: Vec::new(),
            pending: Vec::new(),
            table_at: None,
            refresh_at: never,
            refreshing: false,
            flush_at: never,
        })
    }

    /// The options in force.
    pub fn options(&self) -> ServeOptions {
        self.options
    }

    /// Whether a refresh is due at `now_ms`.
    pub fn refresh_due(&self, now_ms: f64) -> bool {
        now_ms >= self.refresh_at
    }

    /// The instant the next refresh is due (−∞: now).
    pub fn refresh_at(&self) -> f64 {
        self.refresh_at
    }

    /// A refresh started at `now_ms`. None is due again until it reports,
    /// or until [`REFRESH_LEASE_MS`] (at most `refreshEveryMs`) passes
    /// without a report: the refresh is then taken as lost, and the next
    /// call starts another. True when the refresh before this one was lost,
    /// for the host's `REFRESH_LOST` warning.
    pub fn refresh_started(&mut self, now_ms: f64) -> bool {
        let lost = self.refreshing;
        self.refreshing = true;
        self.refresh_at = now_ms + self.options.refresh_every_ms.min(REFRESH_LEASE_MS);
        lost
    }

    /// The refresh failed (unreachable, not a table): the values served
    /// stay until they are stale; the next try is `refreshEveryMs` later.
    pub fn refresh_failed(&mut self, now_ms: f64) {
        self.refreshing = false;
        self.refresh_at = now_ms + self.options.refresh_every_ms;
    }

    /// A table derived at percentile `q` arrived at `now_ms`: the new served
    /// values, and the first values pending (module docs). At most
    /// `max_served` buckets are served or pending (the book's `maxBuckets`):
    /// those served already first, then the others in the table's order; a
    /// row whose name [`check_bucket`] refuses is not served.
    pub fn table(&mut self, now_ms: f64, q: f64, rows: &[TableRow], max_served: usize) {
        let f = self.options.max_step_factor;
        let needed = samples_needed(q);
        let mut next: Vec<(String, f64)> = Vec::with_capacity(rows.len().min(max_served));
        let mut pending: Vec<(String, f64)> = Vec::new();
        for again in [true, false] {
            for row in rows {
                if next.len() + pending.len() >= max_served {
                    break;
                }
                // Too few, or no count at all (NaN).
                if row.n.is_nan() || row.n < needed || check_bucket(&row.name).is_err() {
                    continue;
                }
                let Some(mut target) = usable(row.timeout_ms) else { continue };
                if let Some(floor) = usable(row.floor_ms) {
                    target = target.max(floor);
                }
                let old = self.served(&row.name);
                if old.is_some() != again {
                    continue;
                }
                // Kept sorted by inserting in place (no sort: std's stable sort
                // costs the derive `.wasm` kilobytes); a repeated name keeps its first row.
                let find = |v: &Vec<(String, f64)>| v.binary_search_by(|(n, _)| n.as_str().cmp(&row.name));
                if find(&next).is_ok() || find(&pending).is_ok() {
                    continue;
                }
                match old {
                    Some(old) => {
                        if let Err(at) = find(&next) {
                            next.insert(at, (row.name.clone(), step(target, old, f)));
                        }
                    }
                    None => {
                        if let Err(at) = find(&pending) {
                            pending.insert(at, (row.name.clone(), target));
                        }
                    }
                }
            }
        }
        self.served = next;
        self.pending = pending;
        self.table_at = Some(now_ms);
        self.refreshing = false;
        self.refresh_at = now_ms + self.options.refresh_every_ms;
    }

    /// Serves `bucket`'s pending first value, moved at most
    /// `maxStepFactor` from `fallback_ms` (the value it served until now);
    /// `None` when the last table had none for it (or it is served already).
    pub fn first_value(&mut self, bucket: &str, fallback_ms: f64) -> Option<f64> {
        let i = self.pending.binary_search_by(|(n, _)| n.as_str().cmp(bucket)).ok()?;
        let (name, target) = self.pending.remove(i);
        let v = step(target, fallback_ms, self.options.max_step_factor);
        if let Err(at) = self.served.binary_search_by(|(n, _)| n.as_str().cmp(bucket)) {
            self.served.insert(at, (name, v));
        }
        Some(v)
    }

    /// Every bucket with a pending first value, by name.
    pub fn pending_names(&self) -> impl Iterator<Item = &str> {
        self.pending.iter().map(|(n, _)| n.as_str())
    }

    /// The value served for `bucket` by the last table, stale or not.
    pub fn served(&self, bucket: &str) -> Option<f64> {
        let i = self.served.binary_search_by(|(n, _)| n.as_str().cmp(bucket)).ok()?;
        self.served.get(i).map(|(_, v)| *v)
    }

    /// Every served bucket and value, by name.
    pub fn served_all(&self) -> &[(String, f64)] {
        &self.served
    }

    /// The instant from which nothing is served (−∞ before the first table).
    pub fn stale_at(&self) -> f64 {
        self.table_at.map_or(f64::NEG_INFINITY, |t| t + self.options.max_stale_ms)
    }

    /// What `timeout(bucket, { fallbackMs })` answers at `now_ms`: the served
    /// value while the table is fresh (a pending first value is served
    /// now, [`Schedule::first_value`]), else `fallback_ms`; and whether it was the fleet's.
    pub fn timeout(&mut self, now_ms: f64, bucket: &str, fallback_ms: f64) -> (f64, bool) {
        if now_ms >= self.stale_at() {
            return (fallback_ms, false);
        }
        match self.served(bucket).or_else(|| self.first_value(bucket, fallback_ms)) {
            Some(v) => (v, true),
            None => (fallback_ms, false),
        }
    }

    /// Whether a flush is due at `now_ms`.
    pub fn flush_due(&self, now_ms: f64) -> bool {
        now_ms >= self.flush_at
    }

    /// The instant the next flush is due.
    pub fn flush_at(&self) -> f64 {
        self.flush_at
    }

    /// A flush was sent at `now_ms` (whatever its outcome: a failed one
    /// keeps its data for the next): the next is due `flushEveryMs` later.
    pub fn flush_started(&mut self, now_ms: f64) {
        self.flush_at = now_ms + self.options.flush_every_ms;
    }
}
