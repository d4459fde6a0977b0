//! Bindings for [`crate::core::prom`] (`js/prom.js`: `parsePrometheus`).
//!
//! Histograms and query results cross through serde, their TypeScript
//! generated from [`Histogram`] and [`QueryResult`]. Exposition text crosses
//! as strings, in pieces that end at line breaks ([`prom::TextHistograms`]):
//! js/prom.js keeps the text, so Wasm memory holds one piece at a time, and
//! each histogram becomes a JS object as soon as it is built.

use wasm_bindgen::prelude::*;

use super::{from_js, into_js, to_js};
use crate::core::prom::{self, Histogram, QueryResult};

/// The histograms, each converted as it is built.
fn collect(
    each: impl FnOnce(&mut dyn FnMut(Histogram)) -> Result<(), prom::PromError>,
) -> Result<js_sys::Array, JsValue> {
    let out = js_sys::Array::new();
    let mut failed = None;
    each(&mut |h| match into_js(&h) {
        Ok(v) => {
            out.push(&v);
        }
        Err(e) => failed = Some(e),
    })
    .map_err(to_js)?;
    // Serialising plain numbers and strings cannot fail; kept as an error, not a panic.
    failed.map_or(Ok(out), Err)
}

/// Parses the text exposition format, a piece at a time.
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
        self.inner.scan(piece).map_err(to_js)
    }

    /// The second pass: files the family's samples.
    pub fn feed(&mut self, piece: &str) -> Result<(), JsValue> {
        self.inner.feed(piece).map_err(to_js)
    }

    /// The histograms of `metric` (or of the only family present).
    #[wasm_bindgen(unchecked_return_type = "Histogram[]")]
    pub fn finish(&mut self) -> Result<js_sys::Array, JsValue> {
        collect(|each| self.inner.finish(each))
    }
}

/// Refuses text of `length` UTF-16 units before it is copied into Wasm
/// memory ([`prom::check_text_size`]); the core checks the exact byte
/// length of what it parses.
#[wasm_bindgen(js_name = checkExpositionLength)]
pub fn check_exposition_length(length: f64) -> Result<(), JsValue> {
    // A JS string length: a whole number below 2^53.
    prom::check_text_size(length as usize, "characters").map_err(to_js)
}

/// Histograms from the results of an instant query (`data.result`).
#[wasm_bindgen(js_name = histogramsFromResults, unchecked_return_type = "Histogram[]")]
pub fn histograms_from_results(
    #[wasm_bindgen(unchecked_param_type = "QueryResult[]")] results: JsValue,
    metric: Option<String>,
) -> Result<js_sys::Array, JsValue> {
    let results: Vec<QueryResult> = from_js(results, "input.data.result")?;
    let samples = prom::query_samples(results, metric.as_deref()).map_err(to_js)?;
    let hists = prom::histograms(&samples, metric.as_deref()).map_err(to_js)?;
    collect(|each| {
        hists.into_iter().for_each(each);
        Ok(())
    })
}
