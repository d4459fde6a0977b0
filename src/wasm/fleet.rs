//! Bindings for [`crate::core::fleet`] (`js/durable.js`'s aggregators).
//!
//! Bytes cross as slices (one copy into Wasm memory) and come back as
//! `Uint8Array`s; the table and the changes cross through serde, once per
//! request. Everything else is the core's.

use wasm_bindgen::prelude::*;

use super::{from_js, into_js, to_js};
use crate::core::error::Described;
use crate::core::fleet::{Aggregator, FleetOptions};

/// An [`Aggregator`].
#[wasm_bindgen(js_name = FleetAggregatorCore)]
pub struct FleetJs {
    inner: Aggregator,
}

#[wasm_bindgen(js_class = FleetAggregatorCore)]
impl FleetJs {
    /// `options`: `{ windowMs, windows, q, safety, relativeError }`, each optional.
    #[wasm_bindgen(constructor)]
    pub fn new(options: JsValue) -> Result<FleetJs, JsValue> {
        let opts: FleetOptions =
            if options.is_undefined() { FleetOptions::default() } else { from_js(options, "options")? };
        Ok(FleetJs { inner: Aggregator::new(opts).map_err(to_js)? })
    }

    /// The options in force, defaults filled in.
    pub fn options(&self) -> Result<JsValue, JsValue> {
        into_js(self.inner.options())
    }

    /// Merges one flush at `nowMs`; answers the window's index. Bytes that
    /// are not a flush are refused whole (a `RangeError` with `.code`) and
    /// change nothing; a bucket refused on its own is left out silently
    /// here: `mergeFlush` names them.
    pub fn merge(&mut self, bytes: &[u8], now_ms: f64) -> Result<f64, JsValue> {
        self.inner.merge(bytes, now_ms).map(|m| m.window as f64).map_err(to_js)
    }

    /// Merges one flush at `nowMs`: `{ window, merged, refused }`, where
    /// `refused` is `[{ bucket, code, message }]`, the buckets left out
    /// (`TOO_MANY_BUCKETS`, `TOO_MANY_CALLS`, `COUNT_OVERFLOW`) while the
    /// rest was merged. Bytes that are not a flush are refused whole (a
    /// `RangeError` with `.code`) and change nothing.
    #[wasm_bindgen(js_name = mergeFlush)]
    pub fn merge_flush(&mut self, bytes: &[u8], now_ms: f64) -> Result<JsValue, JsValue> {
        let m = self.inner.merge(bytes, now_ms).map_err(to_js)?;
        let refused = js_sys::Array::new();
        for r in &m.refused {
            let o = js_sys::Object::new();
            for (k, v) in [
                ("bucket", JsValue::from_str(&r.bucket)),
                ("code", JsValue::from_str(r.error.code())),
                ("message", JsValue::from_str(&r.error.to_string())),
            ] {
                js_sys::Reflect::set(&o, &JsValue::from_str(k), &v)?;
            }
            refused.push(&o);
        }
        let out = js_sys::Object::new();
        js_sys::Reflect::set(&out, &JsValue::from_str("window"), &JsValue::from_f64(m.window as f64))?;
        js_sys::Reflect::set(&out, &JsValue::from_str("merged"), &JsValue::from_f64(m.merged as f64))?;
        js_sys::Reflect::set(&out, &JsValue::from_str("refused"), &refused)?;
        Ok(out.into())
    }

    /// The table at `nowMs`. Its `buckets` are own properties made by
    /// `Object.fromEntries` from `[name, row]` pairs: serde's `obj[name] = row`
    /// would set the object's prototype for a bucket named `__proto__`, and
    /// the bucket would vanish from the JSON.
    pub fn table(&mut self, now_ms: f64) -> Result<JsValue, JsValue> {
        let mut table = self.inner.table(now_ms).map_err(to_js)?;
        let rows = std::mem::take(&mut table.buckets);
        let out = into_js(&table)?;
        let pairs = js_sys::Array::new_with_length(rows.len() as u32);
        for (i, (name, row)) in rows.iter().enumerate() {
            pairs.set(i as u32, js_sys::Array::of2(&name.into(), &into_js(row)?).into());
        }
        js_sys::Reflect::set(&out, &"buckets".into(), &js_sys::Object::from_entries(&pairs)?.into())?;
        Ok(out)
    }

    /// Drops the windows too old at `nowMs`.
    pub fn expire(&mut self, now_ms: f64) -> Result<(), JsValue> {
        self.inner.expire(now_ms).map_err(to_js)
    }

    /// `{ dirty, dropped }`: window indexes to write and to delete.
    #[wasm_bindgen(js_name = takeChanges)]
    pub fn take_changes(&mut self) -> Result<JsValue, JsValue> {
        into_js(&self.inner.take_changes())
    }

    /// The kept windows' indexes, oldest first.
    #[wasm_bindgen(js_name = windowIndexes)]
    pub fn window_indexes(&self) -> Vec<f64> {
        self.inner.window_indexes().into_iter().map(|i| i as f64).collect()
    }

    /// One window's bytes, or `undefined` when it is not kept.
    #[wasm_bindgen(js_name = windowBytes)]
    pub fn window_bytes(&self, index: f64) -> Option<Vec<u8>> {
        self.inner.window_bytes(index as i64)
    }

    /// Loads one stored window (validated whole); answers its index.
    #[wasm_bindgen(js_name = loadWindow)]
    pub fn load_window(&mut self, bytes: &[u8]) -> Result<f64, JsValue> {
        self.inner.load_window(bytes).map(|i| i as f64).map_err(to_js)
    }

    /// The whole state.
    #[wasm_bindgen(js_name = toBytes)]
    pub fn to_bytes(&self) -> Vec<u8> {
        self.inner.to_bytes()
    }

    /// An aggregator with `options` holding `bytes` (from `toBytes()`).
    #[wasm_bindgen(js_name = fromBytes)]
    pub fn from_bytes(options: JsValue, bytes: &[u8]) -> Result<FleetJs, JsValue> {
        let opts: FleetOptions =
            if options.is_undefined() { FleetOptions::default() } else { from_js(options, "options")? };
        Ok(FleetJs { inner: Aggregator::from_bytes(opts, bytes).map_err(to_js)? })
    }
}
