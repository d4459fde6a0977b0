//! The `#[wasm_bindgen]` boundary. Every export does three things: convert the
//! arguments, call [`crate::core`], convert the result. Errors leave through
//! [`to_js`], the one place that turns a core error into a JavaScript error.
//!
//! The error classes live in `js/errors.js`; they are imported here with
//! `raw_module`, so the glue and the JS API share one copy of each class and
//! `instanceof` works as well as the brand guards.
//!
//! # Structured by default, scalar where measured hot
//! Structured data (plan steps and the validated step info, retry records
//! and stops, platform caps and requests, header formats, derivation options
//! and results, Prometheus parse results, tail shapes, simulate scenarios and
//! results, Little's-law inputs, limiter options, stall verdicts) crosses through serde: each
//! type is declared once, in `src/core/<concept>.rs`, and its TypeScript is
//! generated from it (tsify) into the glue's `.d.ts`, which the hand-written
//! `js/*.d.ts` import. Enums that cross through serde cross as their names,
//! so no code table of theirs is mirrored in JavaScript. The scalar exports
//! below cross a number where they need one, and name it with a
//! `#[wasm_bindgen]` enum that both sides read (`breaker.rs` `Admission`,
//! `StateChange` and `CallOutcome`, `request.rs` `Limit`, `read.rs`
//! `ReadAction` and its kin). Input comes in as a `JsValue` through [`from_js`]
//! (a `TypeError` with `.param` on a wrong shape, naming the place inside it:
//! `data[0].unit`), output leaves through [`into_js`].
//!
//! Output leaves through serde-wasm-bindgen's serializer, with each type's
//! tsify settings. Input is read by our own deserializer ([`de`]), not
//! serde-wasm-bindgen's: with it the main `.wasm` measured larger (more so
//! with serde_path_to_error for the `data[0].unit` paths), which put the
//! Worker over its upload budget of the time (BENCHMARKS.md, "Size and
//! start-up").
//! Its errors format floats with Rust's `Display` (the core prints numbers
//! with ryu-js instead, src/core/number.rs), and every type's conversion
//! instantiates its larger deserializer. And a read of a user value that throws (a getter, a proxy)
//! must become that `TypeError`: serde-wasm-bindgen reads properties with an
//! uncaught indexing getter, so the throw would unwind through the Wasm
//! frames.
//!
//! These exports stay scalar (numbers and strings in, a number, a string or
//! `undefined` out), each module's doc giving the measurement
//! (BENCHMARKS.md, both builds alternating in one process, `bench/ab.mjs`):
//! - `deadline.rs`, everything: per request and per step; a scalar call costs
//!   no allocation, an object through serde would cost one per call.
//! - `plan.rs` `planCap` (every `p.run`; a skipped optional step makes no
//!   other call: the structured refusal measured slower; BENCHMARKS.md,
//!   "Pipelines").
//! - `retry.rs`: the `RetryRun` constructor takes the options as named
//!   arguments (through serde, `retry()` measured slower in Node and Deno)
//!   and the per-attempt `start`/`failed` answer a number
//!   or `undefined`; `retry_budget.rs`, asked once per failed attempt inside that call.
//! - `headers.rs` `encodeHeader`/`parseHeader` (every outgoing and incoming
//!   request).
//! - `stall.rs` the `StallWatcher` of a stream: its events take the notes as
//!   scalars and answer the wake instant as a number (never per chunk); the
//!   verdict, once per stream, is a typed object.
//! - `breaker.rs` the per-call `check`/`record` of a `CircuitBreaker`
//!   (a key's name crosses once, when the JS side has not cached its slot).
//! - `limiter.rs` a finished call's round trip (`sample`: numbers in, the
//!   limit out), once per call.
//! - `sketch.rs` ingestion (`tryAdd`, typed-array `addAll`), and `derive.rs`
//!   labelled rows as typed-array columns (serde decoding alone of the rows
//!   took far longer than the columns with the core's work: BENCHMARKS.md,
//!   "Derived timeouts").
//!
//! Cold calls pay for serde (`node bench/run.mjs cold`; BENCHMARKS.md,
//! "Pipelines"): `plan()` costs more than positional arguments would, once
//! per request.

use wasm_bindgen::prelude::*;

#[cfg(any(feature = "main", feature = "derive"))]
use crate::core::error::Within;
use crate::core::error::{Described, Kind, ShapeError};

/// A `#[wasm_bindgen]` enum naming a core enum's values, a number both sides
/// name: `for` a core enum of unit variants one for one (`JsName =
/// Variant`), `From` both ways; `from` a core value by patterns (`JsName =
/// pattern`), `From` the core's only.
#[allow(unused_macros)]
macro_rules! named_enum {
    ($(#[$meta:meta])* $name:ident for $core:ident { $($js:ident = $variant:ident),+ $(,)? }) => {
        named_enum! { $(#[$meta])* $name from $core { $($js = $core::$variant),+ } }
        impl From<$name> for $core {
            fn from(v: $name) -> Self { match v { $($name::$js => Self::$variant),+ } }
        }
    };
    ($(#[$meta:meta])* $name:ident from $core:ty { $($js:ident = $pat:pat),+ $(,)? }) => {
        $(#[$meta])* #[wasm_bindgen::prelude::wasm_bindgen] #[derive(Clone, Copy)]
        pub enum $name { $($js),+ }
        impl From<$core> for $name {
            fn from(v: $core) -> Self { match v { $($pat => Self::$js),+ } }
        }
    };
}

// One feature per .wasm (wasm-pack.toml's outputs): `main` for the
// `edge-deadline` entry, `derive` for `edge-deadline/derive`. Each module of
// the boundary belongs to exactly one; what is below this list is shared.
#[cfg(feature = "derive")]
mod book;
#[cfg(feature = "derive")]
mod breaker;
#[cfg(feature = "main")]
mod caps;
mod de;
#[cfg(feature = "main")]
mod deadline;
#[cfg(feature = "derive")]
mod derive;
#[cfg(feature = "derive")]
mod fleet;
#[cfg(feature = "main")]
mod headers;
#[cfg(feature = "main")]
mod hedge;
#[cfg(feature = "derive")]
mod limiter;
#[cfg(feature = "derive")]
mod little;
#[cfg(feature = "main")]
mod plan;
#[cfg(feature = "derive")]
mod prom;
#[cfg(feature = "main")]
mod read;
#[cfg(feature = "main")]
mod request;
#[cfg(feature = "main")]
mod resume;
#[cfg(feature = "main")]
mod retry;
#[cfg(feature = "main")]
mod retry_budget;
#[cfg(feature = "derive")]
mod simulate;
#[cfg(feature = "derive")]
mod sketch;
#[cfg(feature = "main")]
mod stall;
#[cfg(feature = "derive")]
mod tail;

#[wasm_bindgen(raw_module = "./errors.js")]
extern "C" {
    /// Builds the JS error for a core error: `TypeError`/`RangeError` with
    /// `.param` and `.code`, or the branded `DeadlineExceeded` /
    /// `InsufficientBudget` with their fields.
    #[wasm_bindgen(js_name = coreError)]
    fn core_error(kind: &str, code: &str, param: Option<String>, message: &str, fields: &js_sys::Object) -> JsValue;
}

/// The one conversion from core errors to JavaScript errors: every core error
/// type implements [`Described`], so its code, parameter, kind and message
/// cross the same way, the message as the core renders it.
///
/// Generic only in name: every error type goes through one body
/// ([`error_js`]) as a `dyn Described`, instead of one inlined copy per type
/// (nine copies of it, measured in the main `.wasm`).
#[inline]
pub(crate) fn to_js<E: Described>(error: E) -> JsValue {
    error_js(&error)
}

/// [`to_js`] of a core error found inside argument `arg` ([`Within`]): the
/// same single body for every error type, `Within` wrapping a `dyn
/// Described` (a `Within<E>` per type put one copy of its methods, each with
/// `E`'s inlined, into the main `.wasm` for every `E`).
#[cfg(any(feature = "main", feature = "derive"))]
#[inline(never)]
pub(crate) fn within_js(arg: &str, error: &dyn Described) -> JsValue {
    error_js(&Within::new(arg, error))
}

#[inline(never)]
fn error_js(error: &dyn Described) -> JsValue {
    let kind = match error.kind() {
        Kind::Type => "type",
        Kind::Range => "range",
        Kind::Deadline => "deadline",
        Kind::Insufficient => "insufficient",
    };
    let fields = js_sys::Object::new();
    for (name, value) in error.fields() {
        // Setting a property on a fresh, extensible object cannot throw.
        let _ = js_sys::Reflect::set(&fields, &JsValue::from_str(name), &JsValue::from_f64(value));
    }
    core_error(kind, error.code(), error.param(), &error.message().to_string(), &fields)
}

/// Structured data from JavaScript: `value` deserialized into `T` (a core
/// data type whose TypeScript is generated by tsify). A value of the wrong
/// shape is a `TypeError` naming `param` ([`ShapeError`]), never a trap:
/// this is why the exports take a `JsValue` rather than tsify's
/// `from_wasm_abi`, whose failure throws past the Rust frames (tsify marks
/// it deprecated for that leak).
pub(crate) fn from_js<T: serde::de::DeserializeOwned>(value: JsValue, param: &'static str) -> Result<T, JsValue> {
    de::from_value(value).map_err(|e| shape_error(e, param))
}

/// [`from_js`]'s error, out of line: one copy for every type read.
fn shape_error(error: de::Error, param: &'static str) -> JsValue {
    to_js(ShapeError { param, detail: error.describe(param) })
}

/// Structured data to JavaScript: `value`'s serde form through
/// serde-wasm-bindgen with its tsify settings (`null` for `None` where the
/// type says so, objects for maps), as tsify's own `into_js` writes it.
/// Writing the core's numbers and strings cannot fail; if it ever did, the
/// error is thrown, not a trap.
pub(crate) fn into_js<T: tsify::Tsify + serde::Serialize>(value: &T) -> Result<JsValue, JsValue> {
    let config = T::SERIALIZATION_CONFIG;
    let ser = serde_wasm_bindgen::Serializer::new()
        .serialize_missing_as_null(config.missing_as_null)
        .serialize_maps_as_objects(config.hashmap_as_object)
        .serialize_large_number_types_as_bigints(config.large_number_types_as_bigints);
    value.serialize(&ser).map_err(JsValue::from)
}

/// A slice of [`into_js`] values as a JS array.
pub(crate) fn array_js<T: tsify::Tsify + serde::Serialize>(values: &[T]) -> Result<js_sys::Array, JsValue> {
    let out = js_sys::Array::new_with_length(values.len() as u32);
    for (i, v) in values.iter().enumerate() {
        out.set(i as u32, into_js(v)?);
    }
    Ok(out)
}

/// The `.wasm`'s allocator: talc's single-threaded WebAssembly allocator in
/// place of Rust's default dlmalloc, which leaves the Worker more room under
/// its upload budget (BENCHMARKS.md, "Where it stands";
/// docs/design.md, "Allocator and panics", has the figures). The package's
/// instances are single-threaded: no build enables the `atomics` target
/// feature, which talc's unsynchronised cell would need to refuse.
#[cfg(all(any(feature = "main", feature = "derive"), not(target_feature = "atomics")))]
#[global_allocator]
static TALC: talc::wasm::WasmDynamicTalc = talc::wasm::new_wasm_dynamic_allocator();

/// Runs once per instantiation (wasm-bindgen's start hook): a bug in the core
/// (a panic; the core returns a `Result` for every input) then shows its
/// message and location in the console before the instance traps, instead of
/// a bare `unreachable`.
#[wasm_bindgen(start)]
fn start() {
    console_error_panic_hook::set_once();
}
