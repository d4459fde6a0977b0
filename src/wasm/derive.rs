//! Bindings for the derive concept: [`crate::core::sketch`],
//! [`crate::core::derive`] (with its `prom` and `tail` parts),
//! [`crate::core::simulate`] and [`crate::core::little`]. Names are the JS
//! API's (`js/sketch.js`, `js/derive.js`, `js/limiter.js`).
//!
//! # What holds Wasm memory, and who frees it
//! - A [`SketchJs`] lives as long as the user's `LatencySketch` (at most
//!   16 KB of counters) and is freed by its `free()` / `[Symbol.dispose]()`,
//!   or by the glue's `FinalizationRegistry` when it is forgotten.
//! - `deriveTimeouts`, `tailShape` and `falseTimeoutRate` create a sketch or
//!   a [`DeriverJs`] for exactly one call and free it in a `finally`.
//! - Every other export takes numbers, slices and strings and returns plain
//!   values: nothing to free.
//!
//! # Batches
//! The glue copies a slice into Wasm memory for the call. `js/sketch.js` sends
//! large arrays in chunks (`CHUNK` there), so Wasm memory, which never
//! shrinks, does not grow by 8 bytes per sample; `base` is the index of a
//! chunk's first element, so an error names the caller's index. A batch that
//! must be all-or-nothing across chunks is wrapped in [`SketchJs::checkpoint`]
//! and [`SketchJs::rollback`] or [`SketchJs::release`] (a copy of at most
//! 16 KB).
//!
//! # Answers as flat arrays
//! Nested answers (derived rows, histograms) come back as one flat JS array
//! that `js/derive.js` reads in order; the layouts are documented on
//! [`encode_rows`] and [`encode_histograms`]. One call, nothing to free.

use wasm_bindgen::prelude::*;

use super::{legacy_to_js, JsFailure};
use crate::core::derive::prom::{self, Loc, PromError, PromSample, Unit};
use crate::core::derive::{
    self as core, count_above, tail_shape, BucketResult, DeriveError, DeriveOptions, Deriver, Excluded, Histogram,
    Outcome, TailShape,
};
use crate::core::little::{self, LittleError};
use crate::core::simulate::{self, Body, Policy, Scenario, SimulateError, Tail, MAX_CALLS, MAX_RETRIES};
use crate::core::sketch::{BytesError, LatencySketch, SketchError};

/// Every sketch error is bad input naming its parameter (or a merge of
/// sketches with different accuracies): a `RangeError`.
impl From<SketchError> for JsFailure {
    fn from(error: SketchError) -> Self {
        Self::Range(error.to_string())
    }
}

/// A buffer that is not an encoded sketch: the message says what is wrong.
impl From<BytesError> for JsFailure {
    fn from(error: BytesError) -> Self {
        Self::Range(error.to_string())
    }
}

impl From<DeriveError> for JsFailure {
    fn from(error: DeriveError) -> Self {
        Self::Range(error.to_string())
    }
}

/// Malformed exposition text or query results: the message names the line
/// (or result) and the field.
impl From<PromError> for JsFailure {
    fn from(error: PromError) -> Self {
        Self::Range(error.to_string())
    }
}

impl From<SimulateError> for JsFailure {
    fn from(error: SimulateError) -> Self {
        Self::Range(error.to_string())
    }
}

impl From<LittleError> for JsFailure {
    fn from(error: LittleError) -> Self {
        Self::Range(error.to_string())
    }
}

/// Shifts a batch error's index by the chunk's `base`.
fn shifted(base: f64) -> impl Fn(SketchError) -> SketchError {
    // `base` comes from js/sketch.js: a whole number below 2^32.
    let base = base as usize;
    move |error| match error {
        SketchError::Sample { index: Some(i), error } => SketchError::Sample { index: Some(i + base), error },
        other => other,
    }
}

/// Splits `joined` into consecutive strings of `lens[i]` UTF-16 code units
/// (JavaScript string lengths). Many strings cross the boundary as one
/// (`strings()` in js/derive.js): a `Vec<String>` parameter costs a
/// conversion per element and kilobytes of glue per export.
fn split_js<'a>(joined: &'a str, lens: &[u32]) -> Vec<&'a str> {
    let mut out = Vec::with_capacity(lens.len());
    let mut rest = joined;
    for &len in lens {
        let (mut units, mut end) = (0usize, 0usize);
        for c in rest.chars() {
            if units >= len as usize {
                break;
            }
            units += c.len_utf16();
            end += c.len_utf8();
        }
        let (head, tail) = rest.split_at_checked(end).unwrap_or((rest, ""));
        out.push(head);
        rest = tail;
    }
    out
}

fn options(q: f64, safety: f64, relative_error: f64, configured_ms: Option<f64>) -> DeriveOptions {
    DeriveOptions { q, safety, relative_error, configured_ms }
}

// ---- sketches ---------------------------------------------------------------

/// A [`LatencySketch`], and the copy a multi-chunk batch can roll back to.
#[wasm_bindgen(js_name = LatencySketchCore)]
pub struct SketchJs {
    inner: LatencySketch,
    saved: Option<LatencySketch>,
}

#[wasm_bindgen(js_class = LatencySketchCore)]
impl SketchJs {
    #[wasm_bindgen(constructor)]
    pub fn new(relative_error: f64) -> Result<SketchJs, JsValue> {
        Ok(SketchJs { inner: LatencySketch::new(relative_error).map_err(legacy_to_js)?, saved: None })
    }

    /// One sample; no allocation once the key range is covered. `false`
    /// (and nothing added) for an invalid sample, which [`SketchJs::add`]
    /// then reports. A plain `bool` because a `Result` comes back to JS as a
    /// fresh two-element array (a multi-value return) on every call, and
    /// this is the call a hot loop makes.
    #[wasm_bindgen(js_name = tryAdd)]
    pub fn try_add(&mut self, ms: f64) -> bool {
        self.inner.add(ms).is_ok()
    }

    /// One sample, or the `RangeError` saying why it is refused.
    pub fn add(&mut self, ms: f64) -> Result<(), JsValue> {
        self.inner.add(ms).map_err(legacy_to_js)
    }

    /// A chunk, all or nothing; errors name `base + index`.
    #[wasm_bindgen(js_name = addAll)]
    pub fn add_all(&mut self, samples: &[f64], base: f64) -> Result<(), JsValue> {
        self.inner.add_all(samples).map_err(shifted(base)).map_err(legacy_to_js)
    }

    /// Remembers the current state (before a batch of several chunks).
    pub fn checkpoint(&mut self) {
        self.saved = Some(self.inner.clone());
    }

    /// Returns to the state of the last [`SketchJs::checkpoint`].
    pub fn rollback(&mut self) {
        if let Some(saved) = self.saved.take() {
            self.inner = saved;
        }
    }

    /// Forgets the checkpoint.
    pub fn release(&mut self) {
        self.saved = None;
    }

    pub fn merge(&mut self, other: &SketchJs) -> Result<(), JsValue> {
        self.inner.merge(&other.inner).map_err(legacy_to_js)
    }

    /// [`LatencySketch::to_bytes`], as a `Uint8Array`: what `toBytes()`
    /// returns, and how js/sketch.js parks idle sketches in JS memory.
    #[wasm_bindgen(js_name = toBytes)]
    pub fn to_bytes(&self) -> Vec<u8> {
        self.inner.to_bytes()
    }

    /// [`LatencySketch::from_bytes`] (a received or a parked sketch); a
    /// `RangeError` naming the problem.
    #[wasm_bindgen(js_name = fromBytes)]
    pub fn from_bytes(bytes: &[u8]) -> Result<SketchJs, JsValue> {
        Ok(SketchJs { inner: LatencySketch::from_bytes(bytes).map_err(legacy_to_js)?, saved: None })
    }

    /// Exact below 2^53 samples.
    pub fn count(&self) -> f64 {
        self.inner.count() as f64
    }

    #[wasm_bindgen(js_name = relativeError)]
    pub fn relative_error(&self) -> f64 {
        self.inner.relative_error()
    }

    pub fn quantile(&self, q: f64) -> Result<Option<f64>, JsValue> {
        self.inner.quantile(q).map_err(legacy_to_js)
    }

    pub fn min(&self) -> Option<f64> {
        self.inner.min()
    }

    pub fn max(&self) -> Option<f64> {
        self.inner.max()
    }

    pub fn sum(&self) -> f64 {
        self.inner.sum()
    }

    #[wasm_bindgen(js_name = collapsedBelowMs)]
    pub fn collapsed_below_ms(&self) -> Option<f64> {
        self.inner.collapsed_below_ms()
    }

    #[wasm_bindgen(js_name = fractionAbove)]
    pub fn fraction_above(&self, timeout_ms: f64) -> Result<Option<f64>, JsValue> {
        self.inner.fraction_above(timeout_ms).map_err(legacy_to_js)
    }

    #[wasm_bindgen(js_name = memoryBytes)]
    pub fn memory_bytes(&self) -> f64 {
        self.inner.memory_bytes() as f64
    }

    /// [`tail_shape`] of this sketch's bins; `undefined` when there is no
    /// gap, else the seven numbers of [`encode_tail`].
    #[wasm_bindgen(js_name = tailShape)]
    pub fn tail_shape(&self) -> Option<Vec<f64>> {
        tail_shape(&self.inner.bins()).map(|t| encode_tail(&t))
    }

    /// One derived row (layout of [`encode_rows`]) from this sketch, which
    /// holds successes only.
    pub fn derive(&self, q: f64, safety: f64, configured_ms: Option<f64>) -> Result<Vec<JsValue>, JsValue> {
        let opts = options(q, safety, self.inner.relative_error(), configured_ms);
        let row = core::derive_sketch(&self.inner, Excluded::default(), &opts).map_err(legacy_to_js)?;
        Ok(encode_rows(&[row]))
    }
}

/// How many of a chunk's samples are above `timeout_ms` (the numerator of a
/// false-timeout rate); errors name `base + index`.
#[wasm_bindgen(js_name = countAbove)]
pub fn count_above_js(samples: &[f64], timeout_ms: f64, base: f64) -> Result<f64, JsValue> {
    count_above(samples, timeout_ms).map(|n| n as f64).map_err(shifted(base)).map_err(legacy_to_js)
}

// ---- labelled rows ----------------------------------------------------------

/// Outcome codes of [`DeriverJs::add_rows`]; `js/derive.js` mirrors them.
const SUCCESS: u8 = 0;
const TIMEOUT: u8 = 1;
const ERROR: u8 = 2;
/// Set on a row's code when it has no duration.
const NO_DURATION: u8 = 4;

/// The outcome code of `value` ([`Outcome::parse`]). `field` and `row` only
/// word the error.
#[wasm_bindgen(js_name = outcomeCode)]
pub fn outcome_code(value: &str, field: &str, row: f64) -> Result<u8, JsValue> {
    match Outcome::parse(value) {
        Some(Outcome::Success) => Ok(SUCCESS),
        Some(Outcome::Timeout) => Ok(TIMEOUT),
        Some(Outcome::Error) => Ok(ERROR),
        None => Err(legacy_to_js(JsFailure::Range(format!(
            "row {row}: '{field}' must be one of {}: current value is \"{value}\"",
            Outcome::ACCEPTED
        )))),
    }
}

/// A streaming [`Deriver`] for one `deriveTimeouts` call over rows. Label
/// tuples are sent once each ([`DeriverJs::add_buckets`]) and rows refer to
/// them by number, so a row crosses the boundary as three numbers.
#[wasm_bindgen(js_name = DeriverCore)]
pub struct DeriverJs {
    inner: Deriver,
    width: usize,
    tuples: Vec<Vec<String>>,
}

#[wasm_bindgen(js_class = DeriverCore)]
impl DeriverJs {
    /// `by` (the label names) as in [`split_js`].
    #[wasm_bindgen(constructor)]
    pub fn new(
        q: f64,
        safety: f64,
        relative_error: f64,
        configured_ms: Option<f64>,
        by: &str,
        by_lens: &[u32],
    ) -> Result<DeriverJs, JsValue> {
        let by: Vec<String> = split_js(by, by_lens).into_iter().map(str::to_string).collect();
        let width = by.len();
        let inner = Deriver::new(options(q, safety, relative_error, configured_ms), by).map_err(legacy_to_js)?;
        Ok(DeriverJs { inner, width, tuples: Vec::new() })
    }

    /// Registers label tuples, `by.len()` strings each (as in [`split_js`]);
    /// they get the next ids in order. `count` matters when `by` is empty.
    #[wasm_bindgen(js_name = addBuckets)]
    pub fn add_buckets(&mut self, count: u32, values: &str, lens: &[u32]) {
        let mut it = split_js(values, lens).into_iter();
        for _ in 0..count {
            self.tuples.push(it.by_ref().take(self.width).map(str::to_string).collect());
        }
    }

    /// Rows `base ..`: a bucket id, an outcome code (| [`NO_DURATION`]) and a
    /// duration each. On error the rows before the bad one stay counted (the
    /// caller discards the deriver).
    #[wasm_bindgen(js_name = addRows)]
    pub fn add_rows(&mut self, ids: &[u32], codes: &[u8], ms: &[f64], base: f64) -> Result<(), JsValue> {
        for (i, ((&id, &code), &v)) in ids.iter().zip(codes).zip(ms).enumerate() {
            let row = base + i as f64;
            let tuple = self
                .tuples
                .get(id as usize)
                .ok_or_else(|| legacy_to_js(JsFailure::Range(format!("row {row}: unknown bucket {id}"))))?;
            let labels: Vec<&str> = tuple.iter().map(String::as_str).collect();
            let outcome = match code & 3 {
                SUCCESS => Outcome::Success,
                TIMEOUT => Outcome::Timeout,
                _ => Outcome::Error,
            };
            let duration = (code & NO_DURATION == 0).then_some(v);
            self.inner
                .add(&labels, outcome, duration)
                .map_err(|e| legacy_to_js(JsFailure::Range(format!("row {row}: {e}"))))?;
        }
        Ok(())
    }

    /// One row per bucket, ordered by label values ([`encode_rows`]).
    pub fn results(&self) -> Vec<JsValue> {
        encode_rows(&self.inner.results())
    }
}

// ---- Prometheus -------------------------------------------------------------

/// Parses the text exposition format, handed over in pieces that end at line
/// breaks ([`prom::TextHistograms`]): js/derive.js keeps the text, so Wasm
/// memory holds one piece at a time.
#[wasm_bindgen(js_name = PromTextCore)]
pub struct PromTextJs {
    inner: prom::TextHistograms,
}

#[wasm_bindgen(js_class = PromTextCore)]
impl PromTextJs {
    #[wasm_bindgen(constructor)]
    pub fn new(metric: Option<String>) -> PromTextJs {
        PromTextJs { inner: prom::TextHistograms::new(metric.as_deref()) }
    }

    /// The first pass, without a metric: finds the family.
    pub fn scan(&mut self, piece: &str) -> Result<(), JsValue> {
        self.inner.scan(piece).map_err(legacy_to_js)
    }

    /// The second pass: files the family's samples.
    pub fn feed(&mut self, piece: &str) -> Result<(), JsValue> {
        self.inner.feed(piece).map_err(legacy_to_js)
    }

    /// The histograms of `metric` (or of the only family present), layout of
    /// [`encode_histograms`], each encoded as soon as it is built.
    pub fn finish(&mut self) -> Result<Vec<JsValue>, JsValue> {
        let mut out = vec![JsValue::UNDEFINED];
        let mut n = 0;
        self.inner
            .finish(&mut |h| {
                encode_histogram(&mut out, &h);
                n += 1;
            })
            .map_err(legacy_to_js)?;
        out[0] = count(n);
        Ok(out)
    }
}

/// [`prom::MAX_TEXT_BYTES`], for the check `js/derive.js` makes before
/// copying text into Wasm memory.
#[wasm_bindgen(js_name = maxExpositionBytes)]
pub fn max_exposition_bytes() -> f64 {
    prom::MAX_TEXT_BYTES as f64
}

/// Histograms from the samples of a query API result (`js/derive.js` walks
/// the JSON). `strings` ([`split_js`]) holds, per result, its name, its value
/// as Prometheus wrote it, then `label_counts[i]` (name, value) pairs.
#[wasm_bindgen(js_name = histogramsFromResults)]
pub fn histograms_from_results(
    strings: &str,
    lens: &[u32],
    label_counts: &[u32],
    metric: Option<String>,
) -> Result<Vec<JsValue>, JsValue> {
    let mut it = split_js(strings, lens).into_iter();
    let mut next = move || it.next().unwrap_or_default().to_string();
    let mut samples = Vec::with_capacity(label_counts.len());
    for (i, &n) in label_counts.iter().enumerate() {
        let loc = Loc { kind: "result", index: i + 1 };
        let (name, text) = (next(), next());
        let labels = (0..n).map(|_| (next(), next())).collect();
        let value = prom::parse_value(text.trim()).ok_or_else(|| {
            legacy_to_js(PromError::Syntax { loc, field: "value", detail: format!("'{text}' is not a number") })
        })?;
        samples.push(PromSample { name, labels, value, loc });
    }
    let hists = prom::histograms(&samples, metric.as_deref()).map_err(legacy_to_js)?;
    Ok(encode_histograms(&hists))
}

/// Derives from histograms that went to JavaScript (from
/// [`encode_histograms`], possibly edited) and came back, each validated
/// again. `strings` ([`split_js`]) holds the `by_count` label names to
/// group by, then per histogram its name, unit name and `label_counts[i]`
/// (name, value) pairs; histogram `i` has `bucket_counts[i]` (bound in ms,
/// cumulative count) pairs in `bounds_ms` and `cumulative`.
#[allow(clippy::too_many_arguments)]
#[wasm_bindgen(js_name = deriveHistograms)]
pub fn derive_histograms(
    strings: &str,
    lens: &[u32],
    by_count: u32,
    label_counts: &[u32],
    bucket_counts: &[u32],
    bounds_ms: &[f64],
    cumulative: &[f64],
    outcome: Option<String>,
    q: f64,
    safety: f64,
    configured_ms: Option<f64>,
) -> Result<Vec<JsValue>, JsValue> {
    let mut it = split_js(strings, lens).into_iter();
    let by: Vec<&str> = it.by_ref().take(by_count as usize).collect();
    let mut next = move || it.next().unwrap_or_default();
    let mut at = 0usize;
    let mut hists = Vec::with_capacity(label_counts.len());
    for (i, (&nl, &nb)) in label_counts.iter().zip(bucket_counts).enumerate() {
        let loc = Loc { kind: "histogram", index: i + 1 };
        let (name, unit) = (next(), next());
        let unit = Unit::from_name(unit).ok_or_else(|| {
            legacy_to_js(JsFailure::Range(format!(
                "histogram {}: 'unit' must be \"seconds\", \"milliseconds\" or \"unknown\": current value is \"{unit}\"",
                i + 1
            )))
        })?;
        let pairs = (0..nl).map(|_| (next().to_string(), next().to_string())).collect();
        let end = (at + nb as usize).min(bounds_ms.len()).min(cumulative.len());
        let buckets = (at..end).map(|j| (bounds_ms[j], cumulative[j], loc)).collect();
        at = end;
        hists.push(Histogram::from_ms(name, pairs, unit, buckets).map_err(legacy_to_js)?);
    }
    let opts = options(q, safety, crate::core::sketch::DEFAULT_RELATIVE_ERROR, configured_ms);
    let rows = core::derive_histograms(&hists, &by, outcome.as_deref(), &opts).map_err(legacy_to_js)?;
    Ok(encode_rows(&rows))
}

// ---- simulation and Little's law -------------------------------------------

/// A whole number `lo ..= hi`, or a `RangeError` naming `param`.
fn whole(param: &str, value: f64, lo: f64, hi: f64) -> Result<f64, JsValue> {
    if !(lo..=hi).contains(&value) || value.fract() != 0.0 {
        return Err(legacy_to_js(JsFailure::Range(format!(
            "{param} must be a whole number between {lo} and {hi}: current value is {value}"
        ))));
    }
    Ok(value)
}

/// [`simulate::simulate`]. Policy `i` is `timeouts[i]`, `retries[i]`. The
/// answer: the scenario's `[p50, p90, p99, p99.9]`, then eight numbers per
/// policy: `[timeoutMs, retries, p50, p99, p99.9, failureRate, extraLoad,
/// firstAttemptTimeoutRate]`.
#[allow(clippy::too_many_arguments)]
#[wasm_bindgen]
pub fn simulate(
    median_ms: f64,
    sigma: f64,
    share: f64,
    lo_ms: f64,
    hi_ms: f64,
    n: f64,
    seed: f64,
    timeouts: &[f64],
    retries: &[f64],
) -> Result<Vec<f64>, JsValue> {
    let n = whole("'n'", n, 1.0, MAX_CALLS as f64)?;
    let seed = whole("'seed'", seed, 0.0, crate::core::deadline::MAX_MS)?;
    let mut policies = Vec::with_capacity(timeouts.len());
    for (i, (&t, &r)) in timeouts.iter().zip(retries).enumerate() {
        let r = whole(&format!("policy {i}: 'retries'"), r, 0.0, f64::from(MAX_RETRIES))?;
        // Whole and at most MAX_RETRIES: the conversion is exact.
        policies.push(Policy { timeout_ms: t, retries: r as u32 });
    }
    let scenario = Scenario {
        body: Body { median_ms, sigma },
        tail: Tail { share, lo_ms, hi_ms },
        // Whole and at most MAX_CALLS / 2^53 − 1: exact conversions.
        n: n as usize,
        seed: seed as u64,
    };
    let sim = simulate::simulate(&scenario, &policies).map_err(legacy_to_js)?;
    let s = sim.scenario;
    let mut out = vec![s.p50_ms, s.p90_ms, s.p99_ms, s.p999_ms];
    for p in &sim.policies {
        out.extend([
            p.policy.timeout_ms,
            f64::from(p.policy.retries),
            p.p50_ms,
            p.p99_ms,
            p.p999_ms,
            p.failure_rate,
            p.extra_load,
            p.first_attempt_timeout_rate,
        ]);
    }
    Ok(out)
}

#[wasm_bindgen(js_name = concurrencyBound)]
pub fn concurrency_bound(rate_per_sec: f64, timeout_ms: f64) -> Result<f64, JsValue> {
    little::concurrency_bound(rate_per_sec, timeout_ms).map_err(legacy_to_js)
}

#[wasm_bindgen(js_name = maxTimeoutFor)]
pub fn max_timeout_for(rate_per_sec: f64, limit: f64) -> Result<f64, JsValue> {
    little::max_timeout_for(rate_per_sec, limit).map_err(legacy_to_js)
}

#[wasm_bindgen(js_name = checkSlots)]
pub fn check_slots(limit: f64) -> Result<f64, JsValue> {
    little::check_slots(limit).map_err(legacy_to_js)
}

// ---- encodings --------------------------------------------------------------

fn num(v: f64) -> JsValue {
    JsValue::from_f64(v)
}

fn opt(v: Option<f64>) -> JsValue {
    v.map_or(JsValue::NULL, JsValue::from_f64)
}

fn count(n: usize) -> JsValue {
    JsValue::from_f64(n as f64)
}

/// `[bodyEdgeMs, tailStartMs, gapRatio, tailShare, tailCount, stragglers,
/// recommendedMs]`.
fn encode_tail(t: &TailShape) -> Vec<f64> {
    vec![
        t.body_edge_ms,
        t.tail_start_ms,
        t.gap_ratio,
        t.tail_share,
        t.tail_count as f64,
        t.stragglers as f64,
        t.recommended_ms,
    ]
}

/// Rows as one flat array: the row count, then per row
/// - the label count `k`, then `k` (name, value) string pairs;
/// - `n, p50, p90, p99, p99.9, quantile, timeout, q, safety, excluded
///   timeouts, excluded errors` (`null` where there is no value);
/// - `0`, or `1` and the seven numbers of [`encode_tail`];
/// - the candidate count, then (name, timeoutMs, falseTimeoutRate) each;
/// - the warning count, then (code, message) each.
fn encode_rows(rows: &[BucketResult]) -> Vec<JsValue> {
    let mut out = vec![count(rows.len())];
    for r in rows {
        out.push(count(r.labels.len()));
        for (k, v) in &r.labels {
            out.push(JsValue::from_str(k));
            out.push(JsValue::from_str(v));
        }
        out.push(num(r.n as f64));
        for v in [r.p50_ms, r.p90_ms, r.p99_ms, r.p999_ms, r.quantile_ms, r.timeout_ms] {
            out.push(opt(v));
        }
        out.extend([num(r.q), num(r.safety), num(r.excluded.timeouts as f64), num(r.excluded.errors as f64)]);
        match &r.tail {
            None => out.push(num(0.0)),
            Some(t) => {
                out.push(num(1.0));
                out.extend(encode_tail(t).into_iter().map(num));
            }
        }
        out.push(count(r.candidates.len()));
        for c in &r.candidates {
            out.extend([JsValue::from_str(&c.name), num(c.timeout_ms), num(c.false_timeout_rate)]);
        }
        out.push(count(r.warnings.len()));
        for w in &r.warnings {
            out.push(JsValue::from_str(w.code()));
            out.push(JsValue::from_str(&w.to_string()));
        }
    }
    out
}

/// Histograms as one flat array: the count, then per histogram its family
/// name, unit name ([`Unit::name`]), the label count `k` and `k` (name,
/// value) pairs, the bucket count `b` and `b` (bound in ms, cumulative
/// count) pairs (the last bound is `Infinity`), then `sumMs` and `count`
/// (`null` when the exposition had none).
fn encode_histograms(hists: &[Histogram]) -> Vec<JsValue> {
    let mut out = vec![count(hists.len())];
    for h in hists {
        encode_histogram(&mut out, h);
    }
    out
}

/// One histogram of [`encode_histograms`]' layout.
fn encode_histogram(out: &mut Vec<JsValue>, h: &Histogram) {
    out.push(JsValue::from_str(&h.name));
    out.push(JsValue::from_str(h.unit.name()));
    out.push(count(h.labels.len()));
    for (k, v) in &h.labels {
        out.push(JsValue::from_str(k));
        out.push(JsValue::from_str(v));
    }
    out.push(count(h.bounds_ms.len()));
    for (b, c) in h.bounds_ms.iter().zip(&h.cumulative) {
        out.push(num(*b));
        out.push(num(*c));
    }
    out.push(opt(h.sum_ms));
    out.push(opt(h.count));
}
