//! The host functions the web API uses, bound as globals so they exist in
//! every runtime (Workers, Deno, browsers and their workers, Node): no
//! `window`, no `self`. The clock and the timers are read through
//! timers.rs (`now`, the queues, [`Timeout`](super::Timeout)), which a test
//! can swap; the `host_*` functions here are the host's own.

use std::cell::Cell;

use wasm_bindgen::prelude::*;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_name = setTimeout)]
    pub(crate) fn host_set_timeout(handler: &js_sys::Function, ms: f64) -> JsValue;
    #[wasm_bindgen(js_name = setInterval)]
    pub(crate) fn host_set_interval(handler: &js_sys::Function, ms: f64) -> JsValue;
    #[wasm_bindgen(js_name = clearTimeout)]
    pub(crate) fn host_clear_timeout(handle: &JsValue);
    /// The host's monotonic clock.
    #[wasm_bindgen(js_namespace = performance, js_name = now)]
    pub(crate) fn host_now() -> f64;
    #[wasm_bindgen(js_name = queueMicrotask)]
    pub(crate) fn queue_microtask(callback: &js_sys::Function);

    /// A promise, for `then`/`catch` with plain JavaScript functions.
    pub(crate) type Thenable;
    #[wasm_bindgen(method, structural, js_name = then)]
    pub(crate) fn then_with(this: &Thenable, ok: &js_sys::Function, err: &js_sys::Function) -> JsValue;
    #[wasm_bindgen(method, structural, js_name = catch)]
    pub(crate) fn catch_with(this: &Thenable, f: &js_sys::Function) -> JsValue;

    #[wasm_bindgen(js_name = fetch, catch)]
    pub(crate) fn fetch(input: &JsValue, init: &web_sys::RequestInit) -> Result<js_sys::Promise, JsValue>;

    /// `new AbortController()` without web-sys's exception wrapper (a
    /// `try` and an `apply` per call, on every fresh signal): call it through
    /// [`abort_controller`], which checks once that the global exists.
    #[wasm_bindgen(js_name = AbortController)]
    type Controller;
    #[wasm_bindgen(constructor, js_class = "AbortController")]
    fn new() -> Controller;

    /// `String(value)` (throws for a Symbol).
    #[wasm_bindgen(js_name = String, catch)]
    pub(crate) fn to_js_string(value: &JsValue) -> Result<String, JsValue>;
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Host {
    /// Timers belong to the request that made them.
    Workerd,
    /// Timers are numbers, unref'd through `Deno.unrefTimer`.
    Deno,
    /// Timers are objects with `unref()` (Node, Bun), or numbers with nothing to unref.
    Other,
}

thread_local! {
    static HOST: Cell<Option<Host>> = const { Cell::new(None) };
    static HAS_ABORT_CONTROLLER: Cell<Option<bool>> = const { Cell::new(None) };
}

/// `new AbortController()`; `None` where the runtime has none (no supported one).
pub(crate) fn abort_controller() -> Option<web_sys::AbortController> {
    let has = HAS_ABORT_CONTROLLER.with(|h| {
        h.get().unwrap_or_else(|| {
            let has = global(&["AbortController"]).is_function();
            h.set(Some(has));
            has
        })
    });
    has.then(|| Controller::new().unchecked_into())
}

pub(crate) fn global(path: &[&str]) -> JsValue {
    let mut value: JsValue = js_sys::global().into();
    for key in path {
        if !value.is_object() {
            return JsValue::UNDEFINED;
        }
        value = js_sys::Reflect::get(&value, &JsValue::from_str(key)).unwrap_or(JsValue::UNDEFINED);
    }
    value
}

/// Which runtime this is, read once.
pub(crate) fn host() -> Host {
    HOST.with(|h| {
        if let Some(host) = h.get() {
            return host;
        }
        // `WebSocketPair` is a Workers global at every compatibility date and
        // flag; `navigator` is absent before 2022-03-21 and with
        // `no_global_navigator`. The same test as js/timers.js `IS_WORKERD`.
        let host = if global(&["WebSocketPair"]).is_function() {
            Host::Workerd
        } else if global(&["Deno", "unrefTimer"]).is_function() {
            Host::Deno
        } else {
            Host::Other
        };
        h.set(Some(host));
        host
    })
}

// Ref'ing or unref'ing a host timer in one call: a timer object's own
// `ref`/`unref` (Node, Bun, Deno's), else `Deno.refTimer`/`unrefTimer` for a
// number. From Rust, reading the method (`Reflect.get` with a key made from a
// Rust string each time) then calling it cost several calls, and a stream
// that is read toggles the hold on the process per chunk (BENCHMARKS.md,
// "Rust API (`web` feature)").
#[wasm_bindgen(inline_js = r#"
export function setRef(timer, on, deno) {
  if (typeof timer === "object" && timer !== null) {
    const f = on ? timer.ref : timer.unref;
    if (typeof f === "function") f.call(timer);
  } else if (deno) {
    if (on) Deno.refTimer(timer);
    else Deno.unrefTimer(timer);
  }
}
"#)]
extern "C" {
    #[wasm_bindgen(js_name = setRef)]
    fn set_ref(timer: &JsValue, on: bool, deno: bool);
}

/// Lets the process exit while the timer `handle` is pending (Node, Deno);
/// a no-op elsewhere.
pub(crate) fn unref(handle: &JsValue) {
    set_ref(handle, false, host() == Host::Deno);
}

/// Undoes [`unref`]: the timer keeps Node or Deno alive again.
pub(crate) fn reref(handle: &JsValue) {
    set_ref(handle, true, host() == Host::Deno);
}
