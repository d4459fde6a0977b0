//! Bindings for [`crate::core::sketch`] (`js/sketch.js`'s `LatencySketch`).
//!
//! # Scalar on purpose
//! Ingestion is the hot path (a request handler may call `add` per call), so
//! nothing here goes through serde: `tryAdd(ms)` takes and returns a plain
//! number and bool (no allocation: a `Result` would come back as a fresh
//! two-element array on every call), and `addAll` takes a chunk of a
//! `Float64Array` as a slice (one copy into Wasm memory, no per-element
//! conversion). `addAll` and `add()` in a loop against hdr-histogram-js:
//! BENCHMARKS.md, "Derived timeouts".
//!
//! # What holds Wasm memory, and who frees it
//! A [`SketchJs`] lives as long as the user's `LatencySketch` (at most 16 KB
//! of counters) and is freed by its `free()` / `[Symbol.dispose]()`, by
//! js/sketch.js when it parks an idle sketch, or by the glue's
//! `FinalizationRegistry` when it is forgotten.
//!
//! # Batches
//! The glue copies a slice into Wasm memory for the call. `js/sketch.js`
//! sends large arrays in chunks (`CHUNK` there), so Wasm memory, which never
//! shrinks, does not grow by 8 bytes per sample; `base` is the index of a
//! chunk's first element, so an error names the caller's index. A batch that
//! must be all-or-nothing across chunks is wrapped in
//! [`SketchJs::checkpoint`] and [`SketchJs::rollback`] or
//! [`SketchJs::release`] (a copy of at most 16 KB).

use wasm_bindgen::prelude::*;

use super::to_js;
use crate::core::sketch::{LatencySketch, SketchError, DEFAULT_RELATIVE_ERROR};

/// The array a batch error names: `data` for `deriveTimeouts(data)`, else
/// `samples` (`addAll(samples)`, `falseTimeoutRate(samples)`).
pub(super) fn batch_root(root: &str) -> &'static str {
    if root == "data" {
        "data"
    } else {
        "samples"
    }
}

/// Shifts a batch error's index by the chunk's `base` and names its array.
pub(super) fn in_batch(root: &str, base: f64) -> impl Fn(SketchError) -> JsValue {
    let root = batch_root(root);
    // `base` comes from js/sketch.js: a whole number below 2^32.
    let base = base as usize;
    move |error| to_js(error.in_batch(root, base))
}

/// A [`LatencySketch`], and the copy a multi-chunk batch can roll back to.
#[wasm_bindgen(js_name = LatencySketchCore)]
pub struct SketchJs {
    pub(super) inner: LatencySketch,
    saved: Option<LatencySketch>,
}

impl SketchJs {
    /// A core sketch handed to JS (a decoded flush's buckets).
    pub(super) fn from_inner(inner: LatencySketch) -> SketchJs {
        SketchJs { inner, saved: None }
    }
}

#[wasm_bindgen(js_class = LatencySketchCore)]
impl SketchJs {
    /// `relativeError` [`DEFAULT_RELATIVE_ERROR`] unless given.
    #[wasm_bindgen(constructor)]
    pub fn new(relative_error: Option<f64>) -> Result<SketchJs, JsValue> {
        let relative_error = relative_error.unwrap_or(DEFAULT_RELATIVE_ERROR);
        Ok(SketchJs { inner: LatencySketch::new(relative_error).map_err(to_js)?, saved: None })
    }

    /// One sample; no allocation once the key range is covered. `false`
    /// (and nothing added) for an invalid sample, which [`SketchJs::add`]
    /// then reports.
    #[wasm_bindgen(js_name = tryAdd)]
    pub fn try_add(&mut self, ms: f64) -> bool {
        self.inner.add(ms).is_ok()
    }

    /// One sample, or the `RangeError` saying why it is refused.
    pub fn add(&mut self, ms: f64) -> Result<(), JsValue> {
        self.inner.add(ms).map_err(to_js)
    }

    /// A chunk, all or nothing; errors name `root[base + index]`.
    #[wasm_bindgen(js_name = addAll)]
    pub fn add_all(&mut self, samples: &[f64], base: f64, root: &str) -> Result<(), JsValue> {
        self.inner.add_all(samples).map_err(in_batch(root, base))
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
        self.inner.merge(&other.inner).map_err(to_js)
    }

    /// [`LatencySketch::to_bytes`], as a `Uint8Array`: what `toBytes()`
    /// returns, and how js/sketch.js parks idle sketches in JS memory.
    #[wasm_bindgen(js_name = toBytes)]
    pub fn to_bytes(&self) -> js_sys::Uint8Array {
        js_sys::Uint8Array::from(self.inner.to_bytes().as_slice())
    }

    /// [`LatencySketch::from_bytes`] (a received or a parked sketch).
    #[wasm_bindgen(js_name = fromBytes)]
    pub fn from_bytes(bytes: &[u8]) -> Result<SketchJs, JsValue> {
        Ok(SketchJs { inner: LatencySketch::from_bytes(bytes).map_err(to_js)?, saved: None })
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
        self.inner.quantile(q).map_err(to_js)
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
        self.inner.fraction_above(timeout_ms).map_err(to_js)
    }

    #[wasm_bindgen(js_name = memoryBytes)]
    pub fn memory_bytes(&self) -> f64 {
        self.inner.memory_bytes() as f64
    }
}
