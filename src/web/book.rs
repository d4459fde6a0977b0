//! A timeout book for Rust code, as `TimeoutBook` of `edge-deadline/derive`:
//! latencies recorded where the work happens, flushed to one aggregator,
//! and the fleet's derived timeouts served back.
//!
//! The flush format, when to flush and refresh, and which value to serve
//! (the step bound, the censoring floor, staleness) are the core's
//! ([`crate::core::book`]); this file owns what js/book.js owns: the
//! per-bucket sketches, `fetch`, and the synchronous reads. The options, the
//! defaults, the warning codes and the bucket rules are the JavaScript
//! ones.
//!
//! # Invariants
//! 1. What a flush took is not in the book any more (never counted twice);
//!    a flush the aggregator could not take (unreachable, 5xx) is merged
//!    back within `max_buckets`; one it refused (400, 413) is dropped, with
//!    a warning.
//! 2. Only [`CallOutcome::Ok`] reaches the sketches; timeouts and errors are
//!    counted.
//! 3. Each warning code is reported at most once per bucket.
//! 4. No timer is armed; a due refresh started by [`TimeoutBook::timeout`]
//!    runs at once (a promise of its own), and is handed to the options'
//!    `ctx` when given ([`TimeoutOptions::ctx`]), as js/book.js hands it to
//!    `ctx.waitUntil`.
//!
//! Memory: at most `max_buckets` sketches of at most 16 KB each (under 2 KB
//! for 1 ms … 1 h at 1%) between two flushes.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

use super::{sys, timers, Error};
use crate::core::book::{
    check_bucket, check_option, names_held, warning, FlushBatch, FlushBucket, Schedule, ServeError, ServeOptions,
    TableRow, MAX_FLUSH_BYTES,
};
use crate::core::sketch::{LatencySketch, SketchError, DEFAULT_RELATIVE_ERROR};

impl From<ServeError> for Error {
    fn from(error: ServeError) -> Self {
        // Rust names options without `options.` (they are builder calls).
        Error::described(error.param.strip_prefix("options.").unwrap_or(error.param), &error)
    }
}

fn sketch_error(error: SketchError) -> Error {
    Error::described("ms", &error)
}

/// A refresh the book started, handed to [`TimeoutOptions::ctx`]: it is
/// already running, and completes when the table was read (or could not be).
pub type Refresh = Pin<Box<dyn Future<Output = ()>>>;

/// The options of [`TimeoutBook::timeout`], as JavaScript's
/// `timeout(bucket, { fallbackMs, ctx })`. A number is the fallback alone:
/// `book.timeout("GET /a", 800.0)`.
#[derive(Clone, Copy)]
pub struct TimeoutOptions<'a> {
    fallback_ms: f64,
    ctx: Option<&'a dyn Fn(Refresh)>,
}

impl<'a> TimeoutOptions<'a> {
    /// The fallback: served until the fleet has a value (`fallbackMs`).
    pub fn new(fallback_ms: f64) -> Self {
        Self { fallback_ms, ctx: None }
    }

    /// `ctx`: where a refresh this call starts is handed, the handler's
    /// `ctx.wait_until` (in a Worker, work its request did not hand over is
    /// dropped once the response is sent). With workers-rs:
    /// `TimeoutOptions::new(800.0).ctx(&|refresh| ctx.wait_until(refresh))`.
    ///
    /// ```no_run
    /// # use edge_deadline::web::{Error, Refresh, TimeoutBook, TimeoutOptions};
    /// // `wait_until`: the handler's ctx.wait_until (workers-rs: `worker::Context::wait_until`).
    /// fn attempt_timeout(book: &TimeoutBook, wait_until: impl Fn(Refresh)) -> Result<f64, Error> {
    ///     book.timeout("GET /profile", TimeoutOptions::new(1_500.0).ctx(&|refresh| wait_until(refresh)))
    /// }
    /// # fn main() {}
    /// ```
    pub fn ctx(mut self, wait_until: &'a dyn Fn(Refresh)) -> Self {
        self.ctx = Some(wait_until);
        self
    }
}

impl From<f64> for TimeoutOptions<'_> {
    fn from(fallback_ms: f64) -> Self {
        Self::new(fallback_ms)
    }
}

/// How a recorded call ended (JavaScript's `"ok"`, `"timeout"`, `"error"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallOutcome {
    /// It succeeded: its duration is a latency.
    Ok,
    /// It was cut by time: only a lower bound (counted).
    Timeout,
    /// It failed otherwise (counted).
    Error,
}

/// Where a book flushes and reads the table.
#[derive(Debug, Clone)]
pub enum Aggregator {
    /// A URL, reached with the global `fetch`.
    Url(String),
    /// Anything with `fetch(request)`: a Durable Object stub, a service binding.
    Fetcher(js_sys::Object),
}

/// The `on_warning` callback.
type OnWarning = Rc<dyn Fn(&BookWarning)>;

/// What a book tells `on_warning`, once per code and bucket.
#[derive(Debug, Clone, PartialEq)]
pub struct BookWarning {
    /// `NO_TABLE`, `FEW_SAMPLES`, `STALE`, `BUCKETS_FULL`, `REFRESH_FAILED`, `FLUSH_REFUSED`,
    /// `FLUSH_FAILED`.
    pub code: &'static str,
    /// The bucket (or a detail, for the codes that have none).
    pub bucket: String,
    /// The sentence.
    pub message: String,
}

/// The options of [`TimeoutBook::new`], the JavaScript ones in snake case
/// with the same defaults.
#[derive(Clone, Default)]
#[must_use]
pub struct BookOptions {
    aggregator: Option<Aggregator>,
    base: Option<String>,
    serve: Option<ServeOptions>,
    max_buckets: Option<f64>,
    relative_error: Option<f64>,
    on_warning: Option<OnWarning>,
}

impl BookOptions {
    /// No aggregator: the book records and [`TimeoutBook::take_flush`] hands you the bytes.
    pub fn new() -> Self {
        Self::default()
    }

    /// Where flushes go (`POST <base>/flush`) and the table comes from (`GET <base>/table`).
    pub fn aggregator(mut self, aggregator: Aggregator) -> Self {
        self.aggregator = Some(aggregator);
        self
    }

    /// The aggregator's URL for a [`Aggregator::Fetcher`] (default `https://timeout-aggregator`).
    pub fn base(mut self, base: impl Into<String>) -> Self {
        self.base = Some(base.into());
        self
    }

    fn serve(&mut self) -> &mut ServeOptions {
        self.serve.get_or_insert_with(ServeOptions::default)
    }

    /// At most one flush per this long, ms (default 10 000).
    pub fn flush_every_ms(mut self, ms: f64) -> Self {
        self.serve().flush_every_ms = ms;
        self
    }

    /// How often the table is read, ms (default 60 000).
    pub fn refresh_every_ms(mut self, ms: f64) -> Self {
        self.serve().refresh_every_ms = ms;
        self
    }

    /// How long a table is served after it arrived, ms (default 600 000).
    pub fn max_stale_ms(mut self, ms: f64) -> Self {
        self.serve().max_stale_ms = ms;
        self
    }

    /// How far one refresh may move a served value, × or ÷ (default 2).
    pub fn max_step_factor(mut self, factor: f64) -> Self {
        self.serve().max_step_factor = factor;
        self
    }

    /// Buckets held between flushes, 1 … 1024 (default 256).
    pub fn max_buckets(mut self, n: f64) -> Self {
        self.max_buckets = Some(n);
        self
    }

    /// The sketches' relative error (default 0.01).
    pub fn relative_error(mut self, alpha: f64) -> Self {
        self.relative_error = Some(alpha);
        self
    }

    /// Told once per code and bucket (default: `console.warn`).
    pub fn on_warning(mut self, f: impl Fn(&BookWarning) + 'static) -> Self {
        self.on_warning = Some(Rc::new(f));
        self
    }
}

/// One bucket's records since the last flush.
struct Entry {
    sketch: LatencySketch,
    timeouts: u64,
    errors: u64,
    timed_out_ms: f64,
}

struct State {
    entries: HashMap<String, Entry>,
    schedule: Schedule,
    in_force: HashMap<String, f64>,
    warned: HashSet<(&'static str, String)>,
    table_read: bool,
    max_buckets: usize,
    relative_error: f64,
}

/// Buckets a flush sent, kept for the next one (the aggregator was
/// unreachable), and dropped (refused, or past `max_buckets`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FlushReport {
    /// Buckets the aggregator took.
    pub sent: usize,
    /// Buckets kept for the next flush.
    pub kept: usize,
    /// Buckets dropped.
    pub dropped: usize,
}

/// Latencies recorded where the work happens, flushed to one aggregator,
/// and the fleet's derived timeouts served back. Cheap to clone (one book).
///
/// ```
/// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
/// # fn run() -> Result<(), edge_deadline::web::Error> {
/// use edge_deadline::web::{BookOptions, CallOutcome, TimeoutBook};
/// let book = TimeoutBook::new(BookOptions::new().on_warning(|_| {}))?;
/// book.record("GET /users", 42.0, CallOutcome::Ok)?;
/// book.record("GET /users", 800.0, CallOutcome::Timeout)?;
/// // Until the fleet's table says otherwise: the fallback.
/// assert_eq!(book.timeout("GET /users", 800.0)?, 800.0);
/// assert_eq!(book.take_flush().len(), 1);
/// # Ok(())
/// # }
/// # fn main() {}
/// ```
#[derive(Clone)]
pub struct TimeoutBook {
    state: Rc<RefCell<State>>,
    aggregator: Option<Rc<(Aggregator, String)>>,
    on_warning: Option<OnWarning>,
}

impl TimeoutBook {
    /// A book; an [`Error::InvalidArgument`] naming the first option out of range.
    pub fn new(options: BookOptions) -> Result<Self, Error> {
        let schedule = Schedule::new(options.serve.unwrap_or_default())?;
        let max_buckets = check_option("options.maxBuckets", options.max_buckets.unwrap_or(256.0))? as usize;
        let relative_error = options.relative_error.unwrap_or(DEFAULT_RELATIVE_ERROR);
        LatencySketch::new(relative_error).map_err(|e| Error::described("options.relativeError", &e))?;
        let aggregator = options.aggregator.map(|a| {
            let base = match &a {
                Aggregator::Url(url) => url.clone(),
                Aggregator::Fetcher(_) => options.base.clone().unwrap_or_else(|| "https://timeout-aggregator".into()),
            };
            Rc::new((a, base.trim_end_matches('/').to_string()))
        });
        let state = State {
            entries: HashMap::new(),
            schedule,
            in_force: HashMap::new(),
            warned: HashSet::new(),
            table_read: false,
            max_buckets,
            relative_error,
        };
        Ok(Self { state: Rc::new(RefCell::new(state)), aggregator, on_warning: options.on_warning })
    }

    /// Records one call of `bucket` (1 … 256 bytes): `ms` it took and how it ended.
    pub fn record(&self, bucket: &str, ms: f64, outcome: CallOutcome) -> Result<(), Error> {
        let mut s = self.state.borrow_mut();
        if !s.entries.contains_key(bucket) {
            check_bucket(bucket)?;
            if s.entries.len() >= s.max_buckets {
                let max = s.max_buckets as f64;
                drop(s);
                self.warn("BUCKETS_FULL", bucket, max);
                return Ok(());
            }
            let sketch = LatencySketch::new(s.relative_error).unwrap_or_default();
            s.entries.insert(bucket.into(), Entry { sketch, timeouts: 0, errors: 0, timed_out_ms: 0.0 });
        }
        let Some(e) = s.entries.get_mut(bucket) else { return Ok(()) };
        match outcome {
            CallOutcome::Ok => e.sketch.add(ms).map_err(sketch_error)?,
            other => {
                crate::core::deadline::check_ms("ms", ms).map_err(Error::from)?;
                if other == CallOutcome::Timeout {
                    e.timeouts += 1;
                    e.timed_out_ms = e.timed_out_ms.max(ms);
                } else {
                    e.errors += 1;
                }
            }
        }
        Ok(())
    }

    /// The fleet's derived timeout for `bucket` (moved by at most
    /// `max_step_factor` per refresh, floor or not, and a first value at most
    /// that far from `fallback_ms`; a whole number of ms), or
    /// `fallback_ms` until the fleet has one from enough samples
    /// (`10 / (1 − q)` successes, 1 000 for p99) or while the table is stale
    /// (with a warning, once). Synchronous; a due refresh starts in the
    /// background, handed to the options' `ctx` when given
    /// ([`TimeoutOptions::ctx`]).
    pub fn timeout<'a>(&self, bucket: &str, options: impl Into<TimeoutOptions<'a>>) -> Result<f64, Error> {
        let TimeoutOptions { fallback_ms, ctx } = options.into();
        check_option("options.fallbackMs", fallback_ms)?;
        if !self.state.borrow().in_force.contains_key(bucket) {
            check_bucket(bucket)?;
        }
        let t = timers::now();
        let (due, (v, fleet), table_read) = {
            let mut s = self.state.borrow_mut();
            (
                self.aggregator.is_some() && s.schedule.refresh_due(t),
                s.schedule.timeout(t, bucket, fallback_ms),
                s.table_read,
            )
        };
        if due {
            let book = self.clone();
            let lost = book.state.borrow_mut().schedule.refresh_started(t);
            self.warn_if_lost(lost, t);
            // Started now, whether or not a ctx keeps it: as in JavaScript.
            let running = wasm_bindgen_futures::future_to_promise(async move {
                book.read_table().await;
                Ok(JsValue::UNDEFINED)
            });
            if let Some(wait_until) = ctx {
                wait_until(Box::pin(async move {
                    let _ = JsFuture::from(running).await;
                }));
            }
        }
        if !fleet {
            let stale = t >= self.state.borrow().schedule.stale_at();
            let code = if !table_read {
                "NO_TABLE"
            } else if stale {
                "STALE"
            } else {
                "FEW_SAMPLES"
            };
            self.warn(code, bucket, fallback_ms);
        }
        let mut s = self.state.borrow_mut();
        if s.in_force.get(bucket) != Some(&v) {
            let held = names_held(s.max_buckets);
            if !s.in_force.contains_key(bucket) && s.in_force.len() >= held {
                let State { in_force, entries, .. } = &mut *s;
                in_force.retain(|name, _| entries.contains_key(name));
            }
            if s.in_force.contains_key(bucket) || s.in_force.len() < held {
                s.in_force.insert(bucket.into(), v);
            }
        }
        Ok(v)
    }

    /// `REFRESH_LOST` when the refresh before the one started at `t` never reported.
    fn warn_if_lost(&self, lost: bool, t: f64) {
        if lost {
            let retry_in = self.state.borrow().schedule.refresh_at() - t;
            self.warn("REFRESH_LOST", "no answer", retry_in);
        }
    }

    fn warn(&self, code: &'static str, bucket: &str, value: f64) {
        {
            let mut s = self.state.borrow_mut();
            if s.warned.contains(&(code, bucket.into())) {
                return;
            }
            if s.warned.len() >= names_held(s.max_buckets) {
                s.warned.clear();
            }
            s.warned.insert((code, bucket.into()));
        }
        let message = warning(code, bucket, value).map(|m| m.to_string()).unwrap_or_default();
        let w = BookWarning { code, bucket: bucket.into(), message };
        match &self.on_warning {
            Some(f) => f(&w),
            None => {
                if let Ok(warn) = sys::global(&["console", "warn"]).dyn_into::<js_sys::Function>() {
                    let _ = warn.call1(&JsValue::UNDEFINED, &JsValue::from_str(&w.message));
                }
            }
        }
    }

    /// Reads the table now; a failure keeps what is served (with a warning).
    pub async fn refresh(&self) {
        if self.aggregator.is_none() {
            return;
        }
        self.state.borrow_mut().schedule.refresh_started(timers::now());
        self.read_table().await;
    }

    async fn read_table(&self) {
        let rows = self.fetch_table().await;
        let mut s = self.state.borrow_mut();
        match rows {
            Ok((q, rows)) => {
                let max = s.max_buckets;
                s.schedule.table(timers::now(), q, &rows, max);
                s.table_read = true;
            }
            Err(detail) => {
                s.schedule.refresh_failed(timers::now());
                let every = s.schedule.options().refresh_every_ms;
                drop(s);
                self.warn("REFRESH_FAILED", &detail, every);
            }
        }
    }

    /// The table's `q` (NaN when absent) and its rows.
    async fn fetch_table(&self) -> Result<(f64, Vec<TableRow>), String> {
        let words = |e: JsValue| sys::to_js_string(&e).unwrap_or_else(|_| "an error".into());
        let res = self.send("table", None).await.map_err(words)?;
        if !res.ok() {
            return Err(format!("status {}", res.status()));
        }
        let json = JsFuture::from(res.json().map_err(words)?).await.map_err(words)?;
        let get = |v: &JsValue, k: &str| js_sys::Reflect::get(v, &JsValue::from_str(k)).unwrap_or(JsValue::UNDEFINED);
        let buckets = get(&json, "buckets");
        if get(&json, "v").as_f64() != Some(1.0) || !buckets.is_object() {
            return Err("not a version 1 table".into());
        }
        let q = get(&json, "q").as_f64().unwrap_or(f64::NAN);
        let entries = js_sys::Object::entries(buckets.unchecked_ref());
        let rows = entries
            .iter()
            .filter_map(|pair| {
                let pair: js_sys::Array = pair.dyn_into().ok()?;
                let row = pair.get(1);
                Some(TableRow {
                    name: pair.get(0).as_string()?,
                    timeout_ms: get(&row, "timeoutMs").as_f64(),
                    floor_ms: get(&row, "floorMs").as_f64(),
                    n: get(&row, "n").as_f64().unwrap_or(f64::NAN),
                })
            })
            .collect();
        Ok((q, rows))
    }

    /// `GET <base>/table`, or `POST <base>/flush` with `body`.
    async fn send(&self, path: &str, body: Option<&[u8]>) -> Result<web_sys::Response, JsValue> {
        let Some(a) = &self.aggregator else { return Err(JsValue::from_str("no aggregator")) };
        let init = web_sys::RequestInit::new();
        let headers = web_sys::Headers::new()?;
        if let Some(bytes) = body {
            init.set_method("POST");
            headers.set("content-type", "application/octet-stream")?;
            init.set_body(&js_sys::Uint8Array::from(bytes));
        } else {
            headers.set("accept", "application/json")?;
        }
        init.set_headers(&headers);
        let request = web_sys::Request::new_with_str_and_init(&format!("{}/{path}", a.1), &init)?;
        let promise = match &a.0 {
            Aggregator::Url(_) => sys::fetch(&request.into(), &web_sys::RequestInit::new())?,
            Aggregator::Fetcher(target) => {
                let fetch: js_sys::Function = js_sys::Reflect::get(target, &JsValue::from_str("fetch"))?.dyn_into()?;
                fetch.call1(target, &request)?.dyn_into()?
            }
        };
        JsFuture::from(promise).await?.dyn_into()
    }

    /// Sends what was recorded since the last flush (at most once per
    /// `flush_every_ms`) and refreshes the table when due: for
    /// `ctx.wait_until`. Never fails.
    pub async fn flush(&self) -> FlushReport {
        let mut report = FlushReport::default();
        if self.aggregator.is_none() {
            return report;
        }
        let t = timers::now();
        let (refresh, flush) = {
            let mut s = self.state.borrow_mut();
            let refresh = s.schedule.refresh_due(t);
            let lost = refresh && s.schedule.refresh_started(t);
            drop(s);
            self.warn_if_lost(lost, t);
            let mut s = self.state.borrow_mut();
            let flush = s.schedule.flush_due(t) && !s.entries.is_empty();
            if flush {
                s.schedule.flush_started(t);
            }
            (refresh, flush)
        };
        if refresh {
            self.read_table().await;
        }
        if flush {
            for batch in self.take_batches() {
                self.send_batch(batch, &mut report).await;
            }
        }
        report
    }

    async fn send_batch(&self, batch: FlushBatch, report: &mut FlushReport) {
        let (status, failure, refused) = match self.send("flush", Some(&batch.to_bytes())).await {
            Ok(res) => {
                let refused = if res.status() == 200 { refused_buckets(&res).await } else { Vec::new() };
                (res.status(), String::new(), refused)
            }
            Err(e) => (0, sys::to_js_string(&e).unwrap_or_else(|_| "an error".into()), Vec::new()),
        };
        let n = batch.buckets.len();
        if (200..300).contains(&status) {
            // Merged but the buckets named (each for its own reason): only those are dropped.
            let dropped: Vec<&(String, String)> =
                refused.iter().filter(|(name, _)| batch.buckets.iter().any(|b| &b.name == name)).collect();
            report.sent += n - dropped.len();
            report.dropped += dropped.len();
            for (name, code) in dropped {
                self.warn("FLUSH_REFUSED", &format!("bucket '{name}': {code}"), f64::from(status));
            }
        } else if status == 400 || status == 413 {
            report.dropped += n;
            self.warn("FLUSH_REFUSED", &format!("{n} bucket(s)"), f64::from(status));
        } else {
            let mut s = self.state.borrow_mut();
            for b in batch.buckets {
                let max = s.max_buckets;
                let fresh = !s.entries.contains_key(&b.name);
                if fresh && s.entries.len() >= max {
                    report.dropped += 1;
                    continue;
                }
                let alpha = s.relative_error;
                let e = s.entries.entry(b.name.clone()).or_insert_with(|| Entry {
                    sketch: LatencySketch::new(alpha).unwrap_or_default(),
                    timeouts: 0,
                    errors: 0,
                    timed_out_ms: 0.0,
                });
                // Same relative error, counts far below the cap: a merge that cannot fail.
                let _ = e.sketch.merge(&b.successes);
                e.timeouts += b.timeouts;
                e.errors += b.errors;
                if let Some(v) = b.in_force_ms {
                    s.in_force.entry(b.name).or_insert(v);
                }
                report.kept += 1;
            }
            let every = s.schedule.options().flush_every_ms;
            drop(s);
            let detail = if status == 0 { failure } else { format!("status {status}") };
            self.warn("FLUSH_FAILED", &detail, every);
        }
    }

    fn take_batches(&self) -> Vec<FlushBatch> {
        let mut s = self.state.borrow_mut();
        let entries = std::mem::take(&mut s.entries);
        let mut buckets: Vec<FlushBucket> = entries
            .into_iter()
            .map(|(name, e)| FlushBucket {
                in_force_ms: s.in_force.get(&name).copied().or((e.timed_out_ms > 0.0).then_some(e.timed_out_ms)),
                name,
                timeouts: e.timeouts,
                errors: e.errors,
                successes: e.sketch,
            })
            .collect();
        buckets.sort_by(|a, b| a.name.cmp(&b.name));
        split(FlushBatch { relative_error: s.relative_error, buckets })
    }

    /// Everything recorded since the last flush as flush bytes (each at
    /// most 256 KiB); the book is emptied.
    pub fn take_flush(&self) -> Vec<Vec<u8>> {
        self.take_batches().iter().map(FlushBatch::to_bytes).collect()
    }

    /// Buckets recorded since the last flush.
    pub fn size(&self) -> usize {
        self.state.borrow().entries.len()
    }
}

/// `batch` as batches of at most [`MAX_FLUSH_BYTES`] each (halves until they fit).
fn split(batch: FlushBatch) -> Vec<FlushBatch> {
    if batch.buckets.len() < 2 || batch.to_bytes().len() <= MAX_FLUSH_BYTES {
        return vec![batch];
    }
    let FlushBatch { relative_error, mut buckets } = batch;
    let rest = buckets.split_off(buckets.len() / 2);
    let mut out = split(FlushBatch { relative_error, buckets });
    out.extend(split(FlushBatch { relative_error, buckets: rest }));
    out
}

/// The buckets a 200 answer to a flush names as refused (`{ refused: [{
/// bucket, code, message }] }`: the rest was merged), as (name, code); none
/// for any other body.
async fn refused_buckets(res: &web_sys::Response) -> Vec<(String, String)> {
    let Ok(p) = res.json() else { return Vec::new() };
    let Ok(body) = JsFuture::from(p).await else { return Vec::new() };
    let get = |v: &JsValue, k: &str| js_sys::Reflect::get(v, &JsValue::from_str(k)).unwrap_or(JsValue::UNDEFINED);
    let list = get(&body, "refused");
    if !js_sys::Array::is_array(&list) {
        return Vec::new();
    }
    js_sys::Array::from(&list)
        .iter()
        .filter_map(|r| Some((get(&r, "bucket").as_string()?, get(&r, "code").as_string()?)))
        .collect()
}
