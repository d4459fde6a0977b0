//! Bindings for [`crate::core::derive`] (`js/derive.js`: `deriveTimeouts`).
//!
//! Options and results cross through serde, their TypeScript generated from
//! [`DeriveOptions`] and [`BucketResult`](crate::core::derive::BucketResult); the defaults (`q` 0.99, `safety`
//! 2, `relativeError` 0.01) are the core's, read by JS through
//! [`derive_defaults`]. Histograms handed back come through serde and are
//! validated again. A warning's message crosses as its text.
//!
//! # Rows stay columns
//! Labelled rows are the one bulk input here (a log export: millions of
//! `{ ms, outcome, model }`). They cross as three typed-array columns per
//! chunk ([`DeriverJs::add_rows`]): a bucket id (label tuples are sent once
//! each, [`DeriverJs::add_bucket`]), an outcome id (issued by
//! [`DeriverJs::outcome`] for each distinct outcome word: JS caches the ids
//! and never interprets them) and a duration. Measured: `addRows` over the
//! columns, the core's work included, takes a fraction of what
//! serde-wasm-bindgen *decoding alone* of the same rows as
//! `{ bucket, outcome, ms }` objects takes (BENCHMARKS.md, "Derived
//! timeouts").
//!
//! # What holds Wasm memory
//! A [`DeriverJs`] lives for one `deriveTimeouts` call over rows and is
//! freed by js/derive.js in a `finally`; every other export returns plain
//! values.

use wasm_bindgen::prelude::*;

use super::sketch::SketchJs;
use super::{array_js, from_js, into_js, to_js};
use crate::core::derive::{self as core, DeriveOptions, Deriver, Excluded, Outcome};
use crate::core::prom::Histogram;

/// The options `deriveTimeouts` uses when the caller leaves them out.
#[wasm_bindgen(js_name = deriveDefaults, unchecked_return_type = "DeriveOptions")]
pub fn derive_defaults() -> Result<JsValue, JsValue> {
    into_js(&DeriveOptions::default())
}

/// One row from a sketch (successes only); `options.relativeError` is the
/// sketch's own.
#[wasm_bindgen(js_name = deriveSketch, unchecked_return_type = "BucketResult[]")]
pub fn derive_sketch(
    sketch: &SketchJs,
    #[wasm_bindgen(unchecked_param_type = "DeriveOptions")] options: JsValue,
) -> Result<js_sys::Array, JsValue> {
    let options: DeriveOptions = from_js(options, "options")?;
    let opts = DeriveOptions { relative_error: sketch.inner.relative_error(), ..options };
    array_js(&[core::derive_sketch(&sketch.inner, Excluded::default(), &opts).map_err(to_js)?])
}

/// A streaming [`Deriver`] for one `deriveTimeouts` call over rows.
#[wasm_bindgen(js_name = DeriverCore)]
pub struct DeriverJs {
    inner: Deriver,
    /// The row field holding the outcome (`options.outcome`), for errors.
    field: String,
    tuples: Vec<Vec<String>>,
    outcomes: Vec<Outcome>,
}

#[wasm_bindgen(js_class = DeriverCore)]
impl DeriverJs {
    /// `by`: the label names; `field`: the row field holding the outcome.
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(unchecked_param_type = "DeriveOptions")] options: JsValue,
        by: Vec<String>,
        field: String,
    ) -> Result<DeriverJs, JsValue> {
        let options: DeriveOptions = from_js(options, "options")?;
        let inner = Deriver::new(options, by).map_err(to_js)?;
        Ok(DeriverJs { inner, field, tuples: Vec::new(), outcomes: Vec::new() })
    }

    /// Registers a label tuple (one value per `by` label); it gets the next id.
    #[wasm_bindgen(js_name = addBucket)]
    pub fn add_bucket(&mut self, values: Vec<String>) -> u32 {
        self.tuples.push(values);
        // At most MAX_GROUPS + 1 tuples are registered before add_rows refuses more.
        (self.tuples.len() - 1) as u32
    }

    /// An id for the outcome word `value` of row `row` (`undefined`: a
    /// success), or the error naming the row's outcome field.
    pub fn outcome(&mut self, value: Option<String>, row: f64) -> Result<u32, JsValue> {
        let outcome = match value {
            None => Outcome::Success,
            // `row` is an array index from js/derive.js: exact.
            Some(v) => Outcome::of_field(&self.field, &v).map_err(|e| to_js(e.at_row(row as usize)))?,
        };
        let at = self.outcomes.iter().position(|&o| o == outcome).unwrap_or_else(|| {
            self.outcomes.push(outcome);
            self.outcomes.len() - 1
        });
        Ok(at as u32)
    }

    /// Rows `base ..`: a bucket id, an outcome id and a duration each (any
    /// valid duration for a timeout or error that had none: it is only
    /// checked). On error the rows before the bad one stay counted (the
    /// caller discards the deriver).
    #[wasm_bindgen(js_name = addRows)]
    pub fn add_rows(&mut self, buckets: &[u32], outcomes: &[u32], ms: &[f64], base: f64) -> Result<(), JsValue> {
        let base = base as usize;
        for (i, ((&b, &o), &v)) in buckets.iter().zip(outcomes).zip(ms).enumerate() {
            // Ids come from add_bucket and outcome: in range unless js/derive.js is broken.
            let labels: Vec<&str> =
                self.tuples.get(b as usize).map_or(Vec::new(), |t| t.iter().map(String::as_str).collect());
            let outcome = self.outcomes.get(o as usize).copied().unwrap_or(Outcome::Error);
            self.inner.add(&labels, outcome, Some(v)).map_err(|e| to_js(e.at_row(base + i)))?;
        }
        Ok(())
    }

    /// One row per bucket, ordered by label values.
    #[wasm_bindgen(unchecked_return_type = "BucketResult[]")]
    pub fn results(&self) -> Result<js_sys::Array, JsValue> {
        array_js(&self.inner.results())
    }
}

/// Derives from histograms that went to JavaScript (from `parsePrometheus`,
/// possibly edited) and came back, each validated again.
#[wasm_bindgen(js_name = deriveHistograms, unchecked_return_type = "BucketResult[]")]
pub fn derive_histograms(
    #[wasm_bindgen(unchecked_param_type = "Histogram[]")] histograms: JsValue,
    by: Vec<String>,
    outcome: Option<String>,
    #[wasm_bindgen(unchecked_param_type = "DeriveOptions")] options: JsValue,
) -> Result<js_sys::Array, JsValue> {
    let options: DeriveOptions = from_js(options, "options")?;
    let hists: Vec<Histogram> = from_js(histograms, "data")?;
    let hists =
        hists.into_iter().enumerate().map(|(i, h)| h.validated(i)).collect::<Result<Vec<_>, _>>().map_err(to_js)?;
    let by: Vec<&str> = by.iter().map(String::as_str).collect();
    array_js(&core::derive_histograms(&hists, &by, outcome.as_deref(), &options).map_err(to_js)?)
}
