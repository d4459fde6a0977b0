//! Bindings for [`crate::core::book`] (`js/book.js`'s `TimeoutBook`).
//!
//! # What crosses, and how often
//! `record()` never crosses here: it is a JS `Map` lookup and one
//! `LatencySketchCore.tryAdd` (src/wasm/sketch.rs). What crosses is rare:
//! a flush is written once per `flushEveryMs` ([`FlushWriterJs`], which
//! copies each bucket's sketch inside Wasm memory, never through JS),
//! and the table once per refresh ([`ScheduleJs::table`], as arrays).
//! After each refresh js/book.js copies the served values into a JS `Map`
//! (`servedNames`/`servedValues`), so `timeout()` is synchronous and
//! allocation-free; the staleness and due instants it compares against are
//! the machine's.

use wasm_bindgen::prelude::*;

use super::sketch::SketchJs;
use super::to_js;
use crate::core::book::{
    check_bucket, check_option, names_held, valid_in_force, warning, FlushBatch, FlushBucket, Schedule, ServeOptions,
    TableRow,
};
use crate::core::sketch::{LatencySketch, MAX_COUNT};

/// A [`FlushBatch`] being written, bucket by bucket.
#[wasm_bindgen(js_name = FlushWriterCore)]
pub struct FlushWriterJs {
    batch: FlushBatch,
}

#[wasm_bindgen(js_class = FlushWriterCore)]
impl FlushWriterJs {
    /// A batch of sketches of `relative_error` (js/book.js passes its own, already a sketch's).
    #[wasm_bindgen(constructor)]
    pub fn new(relative_error: f64) -> FlushWriterJs {
        FlushWriterJs { batch: FlushBatch::new(relative_error) }
    }

    /// One bucket without successes; `in_force_ms` NaN when unknown.
    /// Counts are clamped to what the format carries.
    pub fn push(&mut self, name: String, in_force_ms: f64, timeouts: f64, errors: f64) {
        let successes = LatencySketch::new(self.batch.relative_error).unwrap_or_default();
        self.bucket(name, in_force_ms, timeouts, errors, successes);
    }

    /// One bucket with its successes' sketch (copied inside Wasm memory).
    #[wasm_bindgen(js_name = pushSketch)]
    pub fn push_sketch(&mut self, name: String, in_force_ms: f64, timeouts: f64, errors: f64, sketch: &SketchJs) {
        self.bucket(name, in_force_ms, timeouts, errors, sketch.inner.clone());
    }

    fn bucket(&mut self, name: String, in_force_ms: f64, timeouts: f64, errors: f64, successes: LatencySketch) {
        let count = |v: f64| if v > 0.0 { (v as u64).min(MAX_COUNT) } else { 0 };
        self.batch.buckets.push(FlushBucket {
            name,
            in_force_ms: Some(in_force_ms).filter(|v| valid_in_force(*v)),
            timeouts: count(timeouts),
            errors: count(errors),
            successes,
        });
    }

    /// The flush bytes.
    #[wasm_bindgen(js_name = toBytes)]
    pub fn to_bytes(&self) -> js_sys::Uint8Array {
        js_sys::Uint8Array::from(self.batch.to_bytes().as_slice())
    }
}

/// Reads flush bytes back: the bucket names and counts, for tests and for
/// an aggregator written in JS. A `RangeError` (`.code` as in the core) for
/// bytes that are not a flush.
#[wasm_bindgen(js_name = readFlushCore)]
pub fn read_flush(bytes: &[u8]) -> Result<js_sys::Array, JsValue> {
    let batch = FlushBatch::from_bytes(bytes).map_err(to_js)?;
    let out = js_sys::Array::new();
    for b in batch.buckets {
        let o = js_sys::Object::new();
        let set = |k: &str, v: JsValue| {
            let _ = js_sys::Reflect::set(&o, &JsValue::from_str(k), &v);
        };
        set("name", JsValue::from_str(&b.name));
        set("inForceMs", b.in_force_ms.map_or(JsValue::UNDEFINED, JsValue::from_f64));
        set("timeouts", JsValue::from_f64(b.timeouts as f64));
        set("errors", JsValue::from_f64(b.errors as f64));
        set("successes", JsValue::from(SketchJs::from_inner(b.successes)));
        out.push(&o);
    }
    Ok(out)
}

/// [`Schedule`]: when to flush and refresh, what to serve.
#[wasm_bindgen(js_name = BookScheduleCore)]
pub struct ScheduleJs {
    inner: Schedule,
}

#[wasm_bindgen(js_class = BookScheduleCore)]
impl ScheduleJs {
    /// Each option its default when absent; a `RangeError` naming the first out of range.
    #[wasm_bindgen(constructor)]
    pub fn new(
        max_step_factor: Option<f64>,
        refresh_every_ms: Option<f64>,
        max_stale_ms: Option<f64>,
        flush_every_ms: Option<f64>,
    ) -> Result<ScheduleJs, JsValue> {
        let d = ServeOptions::default();
        let options = ServeOptions {
            max_step_factor: max_step_factor.unwrap_or(d.max_step_factor),
            refresh_every_ms: refresh_every_ms.unwrap_or(d.refresh_every_ms),
            max_stale_ms: max_stale_ms.unwrap_or(d.max_stale_ms),
            flush_every_ms: flush_every_ms.unwrap_or(d.flush_every_ms),
        };
        Ok(ScheduleJs { inner: Schedule::new(options).map_err(to_js)? })
    }

    /// The `refreshEveryMs` in force (the default when none was given).
    #[wasm_bindgen(getter = refreshEveryMs)]
    pub fn refresh_every_ms(&self) -> f64 {
        self.inner.options().refresh_every_ms
    }

    /// The `flushEveryMs` in force (the default when none was given).
    #[wasm_bindgen(getter = flushEveryMs)]
    pub fn flush_every_ms(&self) -> f64 {
        self.inner.options().flush_every_ms
    }

    #[wasm_bindgen(js_name = refreshAt)]
    pub fn refresh_at(&self) -> f64 {
        self.inner.refresh_at()
    }

    #[wasm_bindgen(js_name = refreshStarted)]
    pub fn refresh_started(&mut self, now_ms: f64) -> bool {
        self.inner.refresh_started(now_ms)
    }

    #[wasm_bindgen(js_name = refreshFailed)]
    pub fn refresh_failed(&mut self, now_ms: f64) {
        self.inner.refresh_failed(now_ms);
    }

    /// A table derived at percentile `q`, its rows as four arrays (`NaN` for
    /// a null or absent `timeoutMs`, `floorMs` or `n`): scalars, not serde,
    /// which cost the derive `.wasm` kilobytes. At most `maxServed` are served.
    #[allow(clippy::too_many_arguments)] // one array per column: serde rows cost the derive .wasm (BENCHMARKS.md, "Where it stands")
    pub fn table(
        &mut self,
        now_ms: f64,
        q: f64,
        names: Vec<String>,
        timeouts: &[f64],
        floors: &[f64],
        ns: &[f64],
        max_served: usize,
    ) {
        let at = |v: &[f64], i: usize| v.get(i).copied().filter(|x| !x.is_nan());
        let rows: Vec<TableRow> = names
            .into_iter()
            .enumerate()
            .map(|(i, name)| TableRow {
                name,
                timeout_ms: at(timeouts, i),
                floor_ms: at(floors, i),
                n: at(ns, i).unwrap_or(f64::NAN),
            })
            .collect();
        self.inner.table(now_ms, q, &rows, max_served);
    }

    #[wasm_bindgen(js_name = servedNames)]
    pub fn served_names(&self) -> Vec<String> {
        self.inner.served_all().iter().map(|(n, _)| n.clone()).collect()
    }

    #[wasm_bindgen(js_name = servedValues)]
    pub fn served_values(&self) -> Vec<f64> {
        self.inner.served_all().iter().map(|(_, v)| *v).collect()
    }

    /// Buckets whose first value the last table holds, not served yet
    /// (`firstValue` serves one, moved at most `maxStepFactor` from the fallback).
    #[wasm_bindgen(js_name = pendingNames)]
    pub fn pending_names(&self) -> Vec<String> {
        self.inner.pending_names().map(str::to_owned).collect()
    }

    /// Serves `bucket`'s pending first value, bounded around `fallbackMs`;
    /// `NaN` when there is none.
    #[wasm_bindgen(js_name = firstValue)]
    pub fn first_value(&mut self, bucket: &str, fallback_ms: f64) -> f64 {
        self.inner.first_value(bucket, fallback_ms).unwrap_or(f64::NAN)
    }

    #[wasm_bindgen(js_name = staleAt)]
    pub fn stale_at(&self) -> f64 {
        self.inner.stale_at()
    }

    #[wasm_bindgen(js_name = flushAt)]
    pub fn flush_at(&self) -> f64 {
        self.inner.flush_at()
    }

    #[wasm_bindgen(js_name = flushStarted)]
    pub fn flush_started(&mut self, now_ms: f64) {
        self.inner.flush_started(now_ms);
    }
}

/// A new bucket's name (1 … 256 bytes of UTF-8), or the `RangeError` naming `bucket`.
#[wasm_bindgen(js_name = checkBucketCore)]
pub fn check_bucket_js(name: &str) -> Result<(), JsValue> {
    check_bucket(name).map_err(to_js)
}

/// The text of a book warning (`NO_TABLE`, `FEW_SAMPLES`, `STALE`, `BUCKETS_FULL`,
/// `REFRESH_FAILED`, `FLUSH_REFUSED`, `FLUSH_FAILED`).
#[wasm_bindgen(js_name = bookWarningText)]
pub fn warning_text(code: &str, bucket: &str, value: f64) -> String {
    warning(code, bucket, value).map(|m| m.to_string()).unwrap_or_default()
}

/// How many bucket names a book with `maxBuckets` holds for `timeout()`.
#[wasm_bindgen(js_name = bookNamesHeld)]
pub fn names_held_js(max_buckets: usize) -> usize {
    names_held(max_buckets)
}

/// `options.maxBuckets` or `options.fallbackMs`, returned when in range, else
/// the `RangeError` naming it.
#[wasm_bindgen(js_name = checkBookOption)]
pub fn check_option_js(param: &str, value: f64) -> Result<f64, JsValue> {
    let param = if param == "options.maxBuckets" { "options.maxBuckets" } else { "options.fallbackMs" };
    check_option(param, value).map_err(to_js)
}
