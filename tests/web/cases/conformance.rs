//! The conformance table (tests/conformance/cases.json) in the Rust web API:
//! every row's `op` mapped to the Rust call with the same meaning, its
//! outcome or error (class, `param()`, `code()`, fields) checked against the
//! row. tests/js/cases/conformance.js runs the same rows through the JS API,
//! so a host that answers differently fails its suite.
//!
//! The Rust API has no options object: where the table names a parameter
//! `options.x`, Rust names it `x`, and a plan step's field `steps[i].x` is
//! `x` (its `param` is a `&'static str`); a row's `"rust": { "param" }` says
//! where the Rust name differs otherwise. Rows that only the JS API can
//! express (wrong types) say `"hosts": ["js"]`.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use edge_deadline::core::timers::timer_ms;
use edge_deadline::web::{
    hedge, now_ms, retry, with_stall_timeout, Aggregator, BookOptions, Bound, BreakerOptions, CapOverrides,
    CircuitBreaker, ConcurrencyLimiter, Deadline, Error, Failure, FetchOptions, HeaderFormat, HedgeOptions, Limit,
    LimiterOptions, Plan, PlatformCaps, RetryBudget, RetryOptions, StallOptions, StallPhase, StepKind, StepResult,
    StepSpec, StreamStepOptions, TimeoutBook,
};
use serde_json::{Map, Value};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::{spawn_local, JsFuture};

use super::stall::{bytes, turns, Source};
use super::{get, Ctx, Outcome};
use crate::ensure;

const TABLE: &str = include_str!("../../conformance/cases.json");

/// The fewest rows this host must run: a table or a filter that lost its
/// rows must not pass by running nothing.
const MIN_RUN: usize = 100;

/// A row's argument as a number, with `{ "$": "NaN" }` and friends decoded.
fn num(v: &Value) -> Result<f64, String> {
    match v {
        Value::Number(n) => n.as_f64().ok_or_else(|| format!("not an f64: {n}")),
        Value::Object(o) if o.len() == 1 => match o.get("$").and_then(Value::as_str) {
            Some("NaN") => Ok(f64::NAN),
            Some("Infinity") => Ok(f64::INFINITY),
            Some("-Infinity") => Ok(f64::NEG_INFINITY),
            Some("-0") => Ok(-0.0),
            other => Err(format!("unknown special value {other:?}")),
        },
        other => Err(format!("not a number: {other}")),
    }
}

fn arg<'a>(args: &'a Map<String, Value>, key: &str) -> Result<&'a Value, String> {
    args.get(key).ok_or_else(|| format!("the row has no '{key}'"))
}

fn num_arg(args: &Map<String, Value>, key: &str) -> Result<f64, String> {
    num(arg(args, key)?)
}

fn opt_num(args: &Map<String, Value>, key: &str) -> Result<Option<f64>, String> {
    args.get(key).map(num).transpose()
}

fn str_arg<'a>(args: &'a Map<String, Value>, key: &str) -> Result<&'a str, String> {
    arg(args, key)?.as_str().ok_or_else(|| format!("'{key}' is not a string"))
}

/// What an op answered, for the row's `expect`.
#[derive(Default)]
struct Out {
    deadline: Option<Deadline>,
    /// Clock readings around the call, for `offsetMs`.
    before: f64,
    after: f64,
    fields: Map<String, Value>,
    /// A plan's runs: `(what happened, clock before, clock after)`.
    results: Vec<(Result<RunOutcome, Error>, f64, f64)>,
}

enum RunOutcome {
    Ran(f64),
    Skipped(String),
}

impl Out {
    fn with(mut self, key: &str, value: Value) -> Self {
        self.fields.insert(key.into(), value);
        self
    }
}

fn deadline_of(args: &Map<String, Value>) -> Result<Result<Deadline, Error>, String> {
    Ok(match args.get("at") {
        Some(at) => Deadline::at(num(at)?),
        None => Deadline::in_ms(num_arg(args, "inMs")?),
    })
}

fn failure(word: &str) -> Option<Failure> {
    match word {
        "ambiguous" => Some(Failure::Ambiguous),
        "not-applied" => Some(Failure::NotApplied),
        "permanent" => Some(Failure::Permanent),
        _ => None,
    }
}

/// The row's attempt script: attempt n answers `Ok(n)` ("ok") or fails with that failure word.
fn script(args: &Map<String, Value>) -> Result<Rc<Vec<String>>, String> {
    let list = arg(args, "attempts")?.as_array().ok_or("'attempts' is not a list")?;
    Ok(Rc::new(list.iter().filter_map(|v| v.as_str().map(String::from)).collect()))
}

fn scripted(words: &[String], n: u32) -> Result<u32, Error> {
    match words.get(n as usize - 1).map(String::as_str) {
        Some("ok") => Ok(n),
        // "retry-after N": a 429 asking for N s, on the error as HTTP clients attach it.
        Some(word) if word.starts_with("retry-after ") => {
            let init = web_sys::ResponseInit::new();
            init.set_status(429);
            let headers = web_sys::Headers::new().map_err(Error::from)?;
            headers.set("retry-after", &word["retry-after ".len()..]).map_err(Error::from)?;
            init.set_headers(&headers);
            let response = web_sys::Response::new_with_opt_str_and_init(None, &init).map_err(Error::from)?;
            let error = js_sys::Error::new("429");
            js_sys::Reflect::set(&error, &"failure".into(), &"not-applied".into()).map_err(Error::from)?;
            js_sys::Reflect::set(&error, &"response".into(), &response).map_err(Error::from)?;
            Err(Error::Js(error.into()))
        }
        // "status N [retry-after S]": the attempt throws a Response; "response N": an error
        // carrying one, without a failure word (the default classify reads the status).
        Some(word) if word.starts_with("status ") || word.starts_with("response ") => {
            let parts: Vec<&str> = word.split(' ').collect();
            let init = web_sys::ResponseInit::new();
            init.set_status(parts.get(1).and_then(|s| s.parse().ok()).unwrap_or(500));
            let headers = web_sys::Headers::new().map_err(Error::from)?;
            if let (Some(name), Some(value)) = (parts.get(2), parts.get(3)) {
                headers.set(name, value).map_err(Error::from)?;
            }
            init.set_headers(&headers);
            let response = web_sys::Response::new_with_opt_str_and_init(None, &init).map_err(Error::from)?;
            if parts.first() == Some(&"status") {
                return Err(Error::Js(response.into()));
            }
            let error = js_sys::Error::new(word);
            js_sys::Reflect::set(&error, &"response".into(), &response).map_err(Error::from)?;
            Err(Error::Js(error.into()))
        }
        Some(word) => Err(Error::Js(JsValue::from_str(word))),
        None => Err(Error::Js(JsValue::from_str("the script ran out"))),
    }
}

fn classify(e: &Error) -> Failure {
    match e {
        Error::Js(v) => v
            .as_string()
            .or_else(|| js_sys::Reflect::get(v, &"failure".into()).ok()?.as_string())
            .and_then(|w| failure(&w))
            .unwrap_or(Failure::Ambiguous),
        _ => Failure::Ambiguous,
    }
}

fn bound_name(b: Bound) -> &'static str {
    match b {
        Bound::Product => "product",
        Bound::Wall => "wall",
        Bound::FirstByte => "first-byte",
    }
}

fn step_spec(v: &Value) -> Result<StepSpec, String> {
    let o = v.as_object().ok_or("a step is not an object")?;
    let kind = match str_arg(o, "kind")? {
        "mandatory" => StepKind::Mandatory,
        "optional" => StepKind::Optional,
        "fallback" => StepKind::Fallback,
        other => return Err(format!("no StepKind for {other}: mark the row \"hosts\": [\"js\"]")),
    };
    let mut spec = StepSpec::new(str_arg(o, "name")?, kind, num_arg(o, "minMs")?);
    if let Some(p) = opt_num(o, "preferredMs")? {
        spec = spec.preferred(p);
    }
    if let Some(r) = opt_num(o, "reserveMs")? {
        spec = spec.reserve(r);
    }
    Ok(spec)
}

/// The number `key` of an error spec, or `default`.
fn or(o: &Map<String, Value>, key: &str, default: f64) -> Result<f64, String> {
    Ok(opt_num(o, key)?.unwrap_or(default))
}

/// An error of the kind the row names, with its cause chain.
fn make_error(spec: &Value) -> Result<Error, String> {
    let o = spec.as_object().ok_or("an error spec is not an object")?;
    let cause = o.get("cause").map(make_error).transpose()?;
    let js = |name: &str| -> JsValue {
        let e = js_sys::Error::new(name);
        e.set_name(name);
        e.into()
    };
    let with_cause = |value: JsValue, cause: Option<Error>| -> JsValue {
        if let Some(c) = cause {
            let _ = js_sys::Reflect::set(&value, &"cause".into(), &JsValue::from(c));
        }
        value
    };
    Ok(match str_arg(o, "class")? {
        "DeadlineExceeded" => Error::DeadlineExceeded { at: 5.0, late_by_ms: or(o, "lateByMs", 1.0)? },
        "InsufficientBudget" => {
            Error::InsufficientBudget { remaining_ms: or(o, "remainingMs", 3.0)?, min_ms: or(o, "minMs", 10.0)? }
        }
        "StepTimeout" => Error::StepTimeout {
            step: o.get("step").and_then(Value::as_str).unwrap_or("generate").into(),
            cap_ms: or(o, "capMs", 100.0)?,
        },
        "InvalidHeader" => Error::InvalidHeader { header: "grpc-timeout", code: "HEADER_EMPTY", message: "bad".into() },
        "StreamStalled" => Error::StreamStalled {
            phase: match o.get("phase").and_then(Value::as_str) {
                Some("first-byte") => StallPhase::FirstByte,
                Some("first-chunk") => StallPhase::FirstChunk,
                _ => StallPhase::Stall,
            },
            after_ms: or(o, "afterMs", 100.0)?,
            chunks: or(o, "chunks", 1.0)?,
            bytes: or(o, "bytes", 1.0)?,
        },
        "AttemptTimeout" => {
            Error::AttemptTimeout { attempt: or(o, "attempt", 1.0)? as u32, timeout_ms: or(o, "timeoutMs", 100.0)? }
        }
        "RetryFailed" => Error::RetryFailed {
            reason: "exhausted".into(),
            message: "retry stopped".into(),
            attempts: vec![],
            last: cause.map(Box::new),
            retry_after_ms: None,
            remaining_ms: None,
        },
        "TimeoutError" => Error::Js(js("TimeoutError")),
        "AbortError" => Error::Js(js("AbortError")),
        "Overloaded" => Error::Overloaded { limit: 1.0, in_flight: 1.0 },
        "CircuitOpen" => Error::CircuitOpen { key: "inner".into(), state: "open", retry_at: 5.0, retry_in_ms: 5.0 },
        "Error" => Error::Js(with_cause(js_sys::Error::new("wrapper").into(), cause)),
        other => return Err(format!("no such error class in the table: {other}")),
    })
    .map(|mut e| {
        // `wrappedIn`: that many plain errors around it, each the cause of the next.
        for _ in 0..o.get("wrappedIn").and_then(Value::as_u64).unwrap_or(0) {
            e = Error::Js(with_cause(js_sys::Error::new("wrapper").into(), Some(e)));
        }
        e
    })
}

/// The `breaker.calls` op (tests/js/cases/conformance.js has its words).
fn breaker_calls(a: &Map<String, Value>) -> Result<(String, String), Error> {
    let clock = super::FakeTime::install();
    let options: BreakerOptions = serde_json::from_value(a.get("options").cloned().unwrap_or(Value::Null))
        .map_err(|e| Error::Js(JsValue::from_str(&format!("options: {e}"))))?;
    let breaker = CircuitBreaker::new(options)?;
    let t0 = clock.now();
    let (mut admitted, mut keys) = (Vec::new(), Vec::<String>::new());
    for c in a.get("calls").and_then(Value::as_array).into_iter().flatten() {
        let key = c.get("key").and_then(Value::as_str).unwrap_or_default();
        clock.jump(t0 + c.get("at").and_then(Value::as_f64).unwrap_or(0.0) - clock.now());
        if !keys.iter().any(|k| k == key) {
            keys.push(key.to_owned());
        }
        match breaker.acquire(key, None) {
            Ok(permit) => {
                admitted.push(if permit.probe() { "probe" } else { "closed" });
                match c.get("outcome").and_then(Value::as_str) {
                    Some("success") => permit.success(),
                    Some("timeout") => permit.timeout(),
                    Some("cancel") => permit.cancel(),
                    _ => permit.failure(),
                }
            }
            Err(Error::CircuitOpen { state, .. }) => admitted.push(state),
            Err(other) => return Err(other),
        }
    }
    let states = keys.iter().map(|k| {
        serde_json::to_value(breaker.state(k)).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
    });
    Ok((admitted.join(","), states.collect::<Vec<_>>().join(",")))
}

/// The table text an in-test aggregator answers (`None`: a 503).
type Answer = Rc<RefCell<Option<String>>>;
/// The closure behind the aggregator's `fetch`: it must outlive the book.
type FetchFn = Closure<dyn FnMut(web_sys::Request) -> js_sys::Promise>;

/// A `TimeoutBook` from the JS options of a row (`book.serve`), reading its
/// table from an in-test aggregator that answers what `Answer` holds.
fn book_of(o: &Value) -> Result<Result<(TimeoutBook, Answer, FetchFn), Error>, String> {
    let o = o.as_object().ok_or("'options' is not an object")?;
    let mut options = BookOptions::new().on_warning(|_| {});
    type Set = fn(BookOptions, f64) -> BookOptions;
    let setters: [(&str, Set); 5] = [
        ("maxStepFactor", BookOptions::max_step_factor),
        ("refreshEveryMs", BookOptions::refresh_every_ms),
        ("maxStaleMs", BookOptions::max_stale_ms),
        ("flushEveryMs", BookOptions::flush_every_ms),
        ("maxBuckets", BookOptions::max_buckets),
    ];
    for key in o.keys() {
        if !setters.iter().any(|(k, _)| k == key) {
            return Err(format!("no book option {key} in the Rust API"));
        }
    }
    for (key, set) in setters {
        if let Some(v) = opt_num(o, key)? {
            options = set(options, v);
        }
    }
    let answer: Answer = Rc::new(RefCell::new(None));
    let text = answer.clone();
    let fetch: FetchFn = Closure::wrap(Box::new(move |_: web_sys::Request| {
        let init = web_sys::ResponseInit::new();
        let body = text.borrow().clone();
        init.set_status(if body.is_some() { 200 } else { 503 });
        let res = web_sys::Response::new_with_opt_str_and_init(Some(body.as_deref().unwrap_or("down")), &init);
        js_sys::Promise::resolve(&res.map(JsValue::from).unwrap_or_else(|e| e))
    }) as Box<dyn FnMut(web_sys::Request) -> js_sys::Promise>);
    let target = js_sys::Object::new();
    let _ = js_sys::Reflect::set(&target, &"fetch".into(), fetch.as_ref());
    Ok(TimeoutBook::new(options.aggregator(Aggregator::Fetcher(target))).map(|b| (b, answer, fetch)))
}

/// The JS runner's `book.serve`: each event at `at` ms after the start is a
/// table the book reads, a failed read, or a `timeout` whose values it answers.
async fn book_serve(
    time: &super::FakeTime,
    book: &TimeoutBook,
    answer: &Answer,
    events: &Value,
) -> Result<String, Error> {
    let bad = |m: &str| Error::Js(JsValue::from_str(m));
    let events = events.as_array().ok_or_else(|| bad("'events' is not a list"))?;
    let t0 = time.now();
    let mut served = Vec::new();
    for e in events {
        let e = e.as_object().ok_or_else(|| bad("an event is not an object"))?;
        time.jump(t0 + num_arg(e, "at").map_err(|m| bad(&m))? - time.now());
        if e.contains_key("table") || e.contains_key("fail") {
            // A refresh a timeout() started in the background reads what the aggregator
            // answered then, as in JavaScript (whose fetch is called at once): not this table.
            super::settle().await;
            *answer.borrow_mut() = match e.get("table").and_then(Value::as_object) {
                Some(table) if !e.contains_key("fail") => {
                    let rows: Map<String, Value> = table
                        .iter()
                        .map(|(k, v)| (k.clone(), serde_json::json!({ "timeoutMs": v[0], "floorMs": v[1], "n": v[2] })))
                        .collect();
                    let q = e.get("q").cloned().unwrap_or(serde_json::json!(0.99));
                    Some(serde_json::json!({ "v": 1, "q": q, "buckets": rows }).to_string())
                }
                _ => None,
            };
            book.refresh().await;
        } else {
            let bucket = e.get("bucket").and_then(Value::as_str).ok_or_else(|| bad("no bucket"))?;
            let v = book.timeout(bucket, num_arg(e, "fallbackMs").map_err(|m| bad(&m))?)?;
            // As JavaScript prints a number (every value here is whole or a short decimal).
            served.push(if v.fract() == 0.0 { format!("{}", v as i64) } else { v.to_string() });
        }
    }
    Ok(served.join(","))
}

/// A `ConcurrencyLimiter` from the JS options of a row (`limiter.windows`).
fn limiter_of(o: &Value) -> Result<Result<ConcurrencyLimiter, Error>, String> {
    let o = o.as_object().ok_or("'options' is not an object")?;
    let limit = match arg(o, "limit")? {
        Value::String(name) if name == "aimd" => Limit::Aimd,
        Value::String(name) if name == "gradient2" => Limit::Gradient2,
        Value::String(name) => return Err(format!("no limit named {name} in the Rust API")),
        n => Limit::Fixed(num(n)?),
    };
    let mut options = LimiterOptions::new(limit);
    type Set = fn(LimiterOptions, f64) -> LimiterOptions;
    let setters: [(&str, Set); 13] = [
        ("initialLimit", LimiterOptions::initial_limit),
        ("minLimit", LimiterOptions::min_limit),
        ("maxLimit", LimiterOptions::max_limit),
        ("backoffRatio", LimiterOptions::backoff_ratio),
        ("timeoutMs", LimiterOptions::timeout_ms),
        ("tolerance", LimiterOptions::tolerance),
        ("smoothing", LimiterOptions::smoothing),
        ("queueSize", LimiterOptions::queue_size),
        ("probeIntervalMs", LimiterOptions::probe_interval_ms),
        ("probeSamples", LimiterOptions::probe_samples),
        ("windowMs", LimiterOptions::window_ms),
        ("windowSize", LimiterOptions::window_size),
        ("maxQueue", LimiterOptions::max_queue),
    ];
    for key in o.keys() {
        if key != "limit" && !setters.iter().any(|(k, _)| k == key) {
            return Err(format!("no limiter option {key} in the Rust API"));
        }
    }
    for (key, set) in setters {
        if let Some(v) = opt_num(o, key)? {
            options = set(options, v);
        }
    }
    Ok(ConcurrencyLimiter::new(options))
}

/// The JS runner's `timers.order` on fake time: deadlines `offsets[i]` ms
/// ahead, their signals taken in order (each queues a wake-up), those in
/// `cancel` dropped; the order their signals abort in, joined with commas.
async fn timers_order(a: &Map<String, Value>) -> Result<String, String> {
    let time = super::FakeTime::install();
    let fired = Rc::new(RefCell::new(Vec::<String>::new()));
    let offsets: Vec<f64> =
        arg(a, "offsets")?.as_array().ok_or("'offsets' is not an array")?.iter().map(num).collect::<Result<_, _>>()?;
    let mut deadlines = Vec::new();
    let mut listeners = Vec::new();
    for (i, &ms) in offsets.iter().enumerate() {
        let d = Deadline::in_ms(ms).map_err(|e| format!("{e}"))?;
        let fired = fired.clone();
        let listener = Closure::<dyn FnMut()>::new(move || fired.borrow_mut().push(i.to_string()));
        d.signal()
            .add_event_listener_with_callback("abort", listener.as_ref().unchecked_ref())
            .map_err(|e| format!("{e:?}"))?;
        deadlines.push(Some(d));
        listeners.push(listener);
    }
    for i in a.get("cancel").and_then(Value::as_array).into_iter().flatten() {
        let i = i.as_u64().ok_or("'cancel' holds a non-index")? as usize;
        deadlines.get_mut(i).ok_or("'cancel' names no deadline")?.take();
    }
    time.advance(offsets.iter().fold(0.0, |m: f64, &x| m.max(x)) + 1.0).await;
    let order = fired.borrow().join(",");
    drop(deadlines);
    Ok(order)
}

/// The JS runner's `limiter.windows` on fake time: window i's calls start at
/// (i + 1) × 10 000 − rttMs after the limiter was made and end at (i + 1) × 10 000,
/// the last started first; answers the limit after each window, joined with commas.
fn limiter_windows(time: &super::FakeTime, limiter: &ConcurrencyLimiter, windows: &Value) -> Result<String, String> {
    let windows = windows.as_array().ok_or("'windows' is not a list")?;
    let t0 = time.now();
    let mut limits = Vec::new();
    for (i, w) in windows.iter().enumerate() {
        let w = w.as_object().ok_or("a window is not an object")?;
        let rtt = num_arg(w, "rttMs")?;
        let end = t0 + (i as f64 + 1.0) * 10_000.0;
        time.jump(end - rtt - time.now());
        let calls = num_arg(w, "calls")? as usize;
        let permits: Vec<_> = (0..calls).filter_map(|_| limiter.try_acquire()).collect();
        time.jump(rtt);
        let drop = w.get("drop").and_then(Value::as_bool).unwrap_or(false);
        for p in permits.into_iter().rev() {
            if drop {
                p.dropped();
            } else {
                p.release();
            }
        }
        limits.push(limiter.limit().to_string());
    }
    Ok(limits.join(","))
}

/// Runs one row's op; `Err(Ok(e))` is the API's error, `Err(Err(m))` a broken row.
async fn run_op(op: &str, a: &Map<String, Value>) -> Result<Result<Out, Error>, String> {
    let mut out = Out { before: now_ms(), ..Out::default() };
    let result: Result<Out, Error> = match op {
        "deadline.at" => Deadline::at(num_arg(a, "instantMs")?).map(|d| Out { deadline: Some(d), ..out }),
        "deadline.in" => {
            let d = Deadline::in_ms(num_arg(a, "ms")?);
            out.after = now_ms();
            d.map(|d| Out { deadline: Some(d), ..out })
        }
        "deadline.reserve" => match Deadline::at(num_arg(a, "at")?) {
            Ok(d) => d.reserve(num_arg(a, "ms")?).map(|r| Out { deadline: Some(r), ..out }),
            Err(e) => Err(e),
        },
        "deadline.min" => {
            let ats = arg(a, "ats")?.as_array().ok_or("'ats' is not a list")?;
            let mut list = Vec::new();
            for at in ats {
                list.push(Deadline::at(num(at)?).map_err(|e| format!("{e}"))?);
            }
            Deadline::min_of(list.iter()).map(|d| Out { deadline: Some(d), ..out })
        }
        "deadline.budget" => match Deadline::at(num_arg(a, "at")?) {
            Ok(d) => d.budget(num_arg(a, "preferredMs")?).map(|v| out.with("value", v.into())),
            Err(e) => Err(e),
        },
        "deadline.step" => match Deadline::at(num_arg(a, "at")?) {
            Ok(d) => d
                .step(num_arg(a, "minMs")?, |_signal, _budget| async { true })
                .await
                .map(|ran| out.with("ran", ran.into())),
            Err(e) => Err(e),
        },
        "headers.to" => {
            let d = Deadline::at(num_arg(a, "at")?).map_err(|e| format!("{e}"))?;
            let names = arg(a, "formats")?.as_array().ok_or("'formats' is not a list")?;
            let formats: Result<Vec<HeaderFormat>, Error> = names
                .iter()
                .map(|n| HeaderFormat::from_name(n.as_str().unwrap_or_default()).map_err(Error::from))
                .collect();
            match formats {
                Ok(formats) => {
                    let headers = web_sys::Headers::new().map_err(|e| format!("{e:?}"))?;
                    match d.to_headers(&headers, &formats) {
                        Ok(()) => {
                            let mut map = Map::new();
                            for entry in js_sys::try_iter(&headers).ok().flatten().ok_or("Headers is not iterable")? {
                                let pair: js_sys::Array = entry.map_err(|e| format!("{e:?}"))?.into();
                                map.insert(
                                    pair.get(0).as_string().unwrap_or_default(),
                                    pair.get(1).as_string().unwrap_or_default().into(),
                                );
                            }
                            Ok(out.with("headers", Value::Object(map)))
                        }
                        Err(e) => Err(e),
                    }
                }
                Err(e) => Err(e),
            }
        }
        "headers.from" => {
            let headers = web_sys::Headers::new().map_err(|e| format!("{e:?}"))?;
            for pair in arg(a, "headers")?.as_array().ok_or("'headers' is not a list")? {
                let (name, value) = (pair[0].as_str().unwrap_or_default(), pair[1].as_str().unwrap_or_default());
                headers.append(name, value).map_err(|e| format!("{e:?}"))?;
            }
            let found = Deadline::from_headers(&headers, num_arg(a, "maxMs")?, opt_num(a, "transitMs")?.unwrap_or(0.0));
            out.after = now_ms();
            found.map(|found| {
                let rejected = found
                    .rejected
                    .iter()
                    .map(|e| match e {
                        Error::InvalidHeader { header, code, .. } => {
                            serde_json::json!({ "header": header, "code": code })
                        }
                        other => serde_json::json!({ "header": null, "code": other.name() }),
                    })
                    .collect();
                let source = found.source.map_or(Value::Null, |f| f.name().into());
                Out { deadline: Some(found.deadline), ..out }
                    .with("source", source)
                    .with("rejected", Value::Array(rejected))
            })
        }
        "caps.forPlatform" => {
            let platform = str_arg(a, "platform")?;
            let overrides = match a.get("caps").and_then(Value::as_object) {
                Some(c) => CapOverrides {
                    wall_ms: opt_num(c, "wallMs")?,
                    first_byte_ms: opt_num(c, "firstByteMs")?,
                    cpu_ms: opt_num(c, "cpuMs")?,
                },
                None => CapOverrides::default(),
            };
            let caps = if platform == "custom" {
                PlatformCaps::custom(overrides.wall_ms, overrides.first_byte_ms, overrides.cpu_ms)
            } else {
                let plan = a.get("plan").and_then(Value::as_str);
                let trigger = a.get("trigger").and_then(Value::as_str).unwrap_or("fetch");
                PlatformCaps::parse(platform, plan, trigger).and_then(|c| c.with_overrides(overrides))
            };
            match caps.map_err(Error::from) {
                Ok(caps) => {
                    let found =
                        Deadline::for_platform(&caps, num_arg(a, "productMs")?, num_arg(a, "fallbackReserveMs")?);
                    out.after = now_ms();
                    found.map(|(d, bound)| {
                        Out { deadline: Some(d), ..out }
                            .with("bound", bound_name(bound).into())
                            .with("cpuMs", caps.cpu_ms.map_or(Value::Null, Value::from))
                            .with("fetchIdleMs", caps.fetch_idle_ms.map_or(Value::Null, Value::from))
                    })
                }
                Err(e) => Err(e),
            }
        }
        "plan" => {
            let d = deadline_of(a)?.map_err(|e| format!("{e}"))?;
            let steps: Vec<StepSpec> = arg(a, "steps")?
                .as_array()
                .ok_or("'steps' is not a list")?
                .iter()
                .map(step_spec)
                .collect::<Result<_, _>>()?;
            let plan = match opt_num(a, "marginMs")? {
                Some(m) => Plan::with_margin(&d, steps, m),
                None => Plan::new(&d, steps),
            };
            match plan {
                Ok(plan) => {
                    for name in a.get("run").and_then(Value::as_array).into_iter().flatten() {
                        let before = now_ms();
                        let cap = Rc::new(Cell::new(f64::NAN));
                        let seen = cap.clone();
                        let result = plan
                            .run(name.as_str().unwrap_or_default(), move |_signal, cap_ms| async move {
                                seen.set(cap_ms);
                                Ok::<_, Error>(())
                            })
                            .await
                            .map(|r| match r {
                                StepResult::Ran(()) => RunOutcome::Ran(cap.get()),
                                StepResult::Skipped(reason) => RunOutcome::Skipped(reason.to_string()),
                            });
                        out.results.push((result, before, now_ms()));
                    }
                    Ok(out.with("planAt", d.instant_ms().into()))
                }
                Err(e) => Err(e),
            }
        }
        "retry" => {
            let d = deadline_of(a)?.map_err(|e| format!("{e}"))?;
            let mut options = RetryOptions::new(opt_num(a, "attemptMinMs")?.unwrap_or(0.0));
            if a.get("defaultClassify").and_then(Value::as_bool) != Some(true) {
                options = options.classify(classify);
            }
            if let Some(t) = opt_num(a, "attemptTimeoutMs")? {
                options = options.attempt_timeout_ms(t);
            }
            if let Some(b) = a.get("backoff").and_then(Value::as_object) {
                options = match b.get("jitter").and_then(Value::as_str) {
                    Some(name) => options.backoff(num_arg(b, "baseMs")?, num_arg(b, "maxMs")?, 1.0).jitter(name),
                    None => options.backoff(num_arg(b, "baseMs")?, num_arg(b, "maxMs")?, num_arg(b, "jitter")?),
                };
            }
            if let Some(m) = opt_num(a, "maxRetryAfterMs")? {
                options = options.max_retry_after_ms(m);
            }
            if let Some(n) = opt_num(a, "maxAttempts")? {
                options = options.max_attempts(n as u32);
            }
            if let Some(i) = a.get("idempotent").and_then(Value::as_bool) {
                options = options.idempotent(i);
            }
            let words = script(a)?;
            retry(&d, options, move |_signal, attempt| {
                let words = words.clone();
                async move { scripted(&words, attempt.number) }
            })
            .await
            .map(|v| out.with("value", v.into()))
        }
        "hedge" => {
            let d = deadline_of(a)?.map_err(|e| format!("{e}"))?;
            let mut options = HedgeOptions::new(num_arg(a, "delayMs")?);
            if let Some(n) = opt_num(a, "maxAttempts")? {
                options = options.max_attempts(n as u32);
            }
            let words = script(a)?;
            hedge(&d, options, move |_signal, n| {
                let words = words.clone();
                async move { scripted(&words, n) }
            })
            .await
            .map(|v| out.with("value", v.into()))
        }
        "budget.new" => RetryBudget::new(num_arg(a, "ratio")?, num_arg(a, "minPerSecond")?, num_arg(a, "windowMs")?)
            .map(|_| out.with("ok", true.into())),
        // The host delay a wait becomes: the core's `timer_ms`, which the Rust host arms with.
        "timers.timerMs" => Ok(out.with("value", timer_ms(num_arg(a, "ms")?).into())),
        "timers.order" => Ok(out.with("value", timers_order(a).await?.into())),
        // The core's cut with caps, through the streamed-read machine as the `read` op drives it (as the JS
        // runner does): what reaches the reader, joined, and the refusal's code ("none").
        "resume.cut" => {
            let mut script = vec![Value::from("0 start"), Value::from("0 head 200 sse")];
            for chunk in arg(a, "chunks")?.as_array().ok_or("'chunks' is not a list")? {
                script.push(format!("1 chunk {}", chunk.as_str().ok_or("a chunk is not a string")?).into());
            }
            let mut read = a.clone();
            for (k, v) in [
                ("deadlineAt", 1e12),
                ("backoffMs", 10.0),
                ("maxAttempts", 1.0),
                ("firstChunkMs", 1e9),
                ("stallMs", 1e9),
            ] {
                read.insert(k.into(), v.into());
            }
            read.insert("script".into(), script.into());
            let (actions, _) = read_script(&read)?;
            let delivered: String = actions.iter().filter_map(|l| l.strip_prefix("deliver ")).collect();
            // A failed end's class and detail (`end CLASS DETAIL …`): a cap's code alone, as the JS runner says it.
            let refused =
                match actions.iter().find_map(|l| l.strip_prefix("end ")).map(|e| e.split(' ').collect::<Vec<_>>()) {
                    Some(w) if w.len() > 1 && w[0] == "StreamTooLarge" => w[1].to_string(),
                    Some(w) if w.len() > 1 => format!("{} {}", w[0], w[1]),
                    _ => "none".to_string(),
                };
            Ok(out.with("delivered", delivered.into()).with("refused", refused.into()))
        }
        "resume.ids" => {
            let mut ids = edge_deadline::core::resume::DeliveredIds::default();
            for i in 1..=num_arg(a, "count")? as u32 {
                ids.record(&i.to_string());
            }
            Ok(out.with("checkable", ids.checkable().into()))
        }
        // A scripted read: the core's machine (src/core/read.rs), which the JS
        // runner drives through its binding; the actions as lines.
        "read" => {
            let (actions, reason) = read_script(a)?;
            Ok(out.with("actions", actions.into()).with("reason", reason.map_or(Value::Null, Value::from)))
        }
        // Which content types the host reads as an event stream (it asks the core).
        "sse.isEventStream" => {
            let types = arg(a, "types")?.as_array().ok_or("'types' is not a list")?;
            let answers: Result<Vec<String>, String> = types
                .iter()
                .map(|t| {
                    Ok(edge_deadline::core::sse::is_event_stream(t.as_str().ok_or("a type is not a string")?)
                        .to_string())
                })
                .collect();
            Ok(out.with("answers", answers?.join(",").into()))
        }
        "sse.progress" => {
            let mut is_progress = edge_deadline::web::sse_progress();
            let mut seen = Vec::new();
            for chunk in arg(a, "chunks")?.as_array().ok_or("'chunks' is not a list")? {
                let bytes = js_sys::Uint8Array::from(chunk.as_str().ok_or("a chunk is not a string")?.as_bytes());
                seen.push(is_progress(&bytes.into()).map_err(|e| format!("{e}"))?.to_string());
            }
            Ok(out.with("progress", seen.join(",").into()))
        }
        "stall.wrap" => {
            let source = web_sys::ReadableStream::new().map_err(|e| format!("{e:?}"))?;
            match with_stall_timeout(source, StallOptions::new(num_arg(a, "firstChunkMs")?, num_arg(a, "stallMs")?)) {
                Ok(stream) => {
                    // A wait of 0 has already errored it: the cancel's rejection is expected.
                    let _ = JsFuture::from(stream.cancel()).await;
                    Ok(out.with("ok", true.into()))
                }
                Err(e) => Err(e),
            }
        }
        "plan.stream" => {
            let d = deadline_of(a)?.map_err(|e| format!("{e}"))?;
            let steps: Vec<StepSpec> = arg(a, "steps")?
                .as_array()
                .ok_or("'steps' is not a list")?
                .iter()
                .map(step_spec)
                .collect::<Result<_, _>>()?;
            let plan = Plan::new(&d, steps).map_err(|e| format!("{e}"))?;
            let source = arg(a, "source")?.as_str().ok_or("'source' is not a string")?.to_string();
            let ran = Rc::new(Cell::new(false));
            let seen = ran.clone();
            let options = StreamStepOptions::new().trace(a.get("trace").and_then(Value::as_bool).unwrap_or(false));
            let step = arg(a, "step")?.as_str().unwrap_or_default().to_string();
            let res = plan
                .stream(
                    &step,
                    move |_signal, _cap| async move {
                        seen.set(true);
                        stream_source(&source)
                    },
                    options,
                )
                .await
                .map_err(|e| format!("{e}"))?;
            let sse =
                res.headers().get("content-type").ok().flatten().is_some_and(|t| t.starts_with("text/event-stream"));
            let text = JsFuture::from(res.text().map_err(|e| format!("{e:?}"))?).await.map_err(|e| format!("{e:?}"))?;
            let text = text.as_string().unwrap_or_default();
            let events = if sse {
                text.split("\n\n")
                    .filter(|b| !b.trim().is_empty())
                    .map(|b| b.lines().find_map(|l| l.strip_prefix("event: ")).unwrap_or("message").to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            } else {
                String::new()
            };
            let outcomes = plan.records().iter().map(|r| r.outcome.as_str()).collect::<Vec<_>>().join(",");
            // The codes the client was told: the fallback's JSON body, or each error event's data.
            let code_of = |json: &str| {
                serde_json::from_str::<Value>(json)
                    .ok()
                    .and_then(|v| v.get("code").and_then(Value::as_str).map(str::to_string))
                    .unwrap_or_default()
            };
            let is_json =
                res.headers().get("content-type").ok().flatten().is_some_and(|t| t.starts_with("application/json"));
            let codes = if sse {
                let mut lines = text.lines();
                let mut found = Vec::new();
                while let Some(line) = lines.next() {
                    if line == "event: error" {
                        found.push(code_of(lines.next().and_then(|l| l.strip_prefix("data: ")).unwrap_or_default()));
                    }
                }
                found.join(",")
            } else if is_json {
                code_of(&text)
            } else {
                String::new()
            };
            let leaked = ["s3cret", "10.0.3.7", "sk-live"].iter().any(|s| text.contains(s));
            Ok(out
                .with("status", f64::from(res.status()).into())
                .with("events", events.into())
                .with("outcomes", outcomes.into())
                .with("ran", ran.get().into())
                .with("codes", codes.into())
                .with("leaked", leaked.into()))
        }
        "stall.stream" => {
            let steps = arg(a, "steps")?.as_array().ok_or("'steps' is not a list")?;
            let src = Source::new();
            let upstream = web_sys::AbortController::new().map_err(|e| format!("{e:?}"))?;
            let options =
                StallOptions::new(num_arg(a, "firstChunkMs")?, num_arg(a, "stallMs")?).controller(upstream.clone());
            match with_stall_timeout(src.stream.clone(), options) {
                Ok(stream) => Ok(out.with("trace", stream_trace(&src, &upstream, &stream, steps).await?.into())),
                Err(e) => Err(e),
            }
        }
        "fetch.options" => {
            let d = Deadline::in_ms(100_000.0).map_err(|e| format!("{e}"))?;
            let mut options = FetchOptions::new(&d);
            if let Some(v) = opt_num(a, "firstByteMs")? {
                options = options.first_byte_ms(v);
            }
            if let Some(v) = opt_num(a, "firstChunkMs")? {
                options = options.first_chunk_ms(v);
            }
            if let Some(v) = opt_num(a, "stallMs")? {
                options = options.stall_ms(v);
            }
            if a.get("retry") == Some(&Value::Bool(true)) {
                options = options.retry(edge_deadline::web::RetryOptions::new(0.0));
            }
            if let Some(v) = opt_num(a, "maxEventBytes")? {
                options = options.max_event_bytes(v);
            }
            if let Some(v) = opt_num(a, "maxLineBytes")? {
                options = options.max_line_bytes(v);
            }
            // 127.0.0.1:9 (discard): nothing answers; the options must fail before any I/O.
            edge_deadline::web::fetch_with_deadline(&"http://127.0.0.1:9/".into(), None, options)
                .await
                .map(|_| out.with("ok", true.into()))
        }
        "breaker.calls" => breaker_calls(a)
            .map(|(admitted, states)| out.with("admitted", admitted.into()).with("states", states.into())),
        "limiter.windows" => {
            // Fake time from before the limiter is made: its windows count from the fake instant.
            let time = super::FakeTime::install();
            match limiter_of(arg(a, "options")?)? {
                Ok(limiter) => Ok(out.with("limits", limiter_windows(&time, &limiter, arg(a, "windows")?)?.into())),
                Err(e) => Err(e),
            }
        }
        "book.serve" => {
            let time = super::FakeTime::install();
            match book_of(arg(a, "options")?)? {
                Ok((book, answer, _fetch)) => book_serve(&time, &book, &answer, arg(a, "events")?)
                    .await
                    .map(|served| out.with("served", served.into())),
                Err(e) => Err(e),
            }
        }
        "breaker.outcome" => {
            // tests/js/cases/conformance.js has its words.
            let breaker = CircuitBreaker::new(BreakerOptions { consecutive_failures: Some(0.0), ..Default::default() })
                .map_err(|e| e.to_string())?;
            let error = make_error(arg(a, "error")?)?;
            let _ = breaker.run("k", None, || async { Err::<(), _>(error) }).await;
            let s = breaker.stats("k");
            let outcome = if s.calls == 0 {
                "cancel"
            } else if s.slow_calls > 0 {
                "timeout"
            } else if s.failures > 0 {
                "failure"
            } else {
                "success"
            };
            Ok(out.with("outcome", outcome.into()))
        }
        "errors.isTimeout" => Ok(out.with("value", make_error(arg(a, "error")?)?.is_timeout().into())),
        "errors.message" => Ok(out.with("message", make_error(arg(a, "error")?)?.to_string().into())),
        other => return Err(format!("no op named {other}")),
    };
    Ok(result.map(|mut o| {
        if o.after == 0.0 {
            o.after = now_ms();
        }
        o
    }))
}

/// An error's message, or a reason as a string (the JS op's `text`).
fn text(v: &JsValue) -> String {
    match v.dyn_ref::<js_sys::Error>() {
        Some(e) => e.message().into(),
        None => v.as_string().unwrap_or_else(|| format!("{v:?}")),
    }
}

/// Runs a `stall.stream` row's steps on `stream`, the wrapper of `src`
/// (tests/js/cases/conformance.js says what each step does), and answers
/// the snapshots it took, as the JS op writes them.
async fn stream_trace(
    src: &Source,
    upstream: &web_sys::AbortController,
    stream: &web_sys::ReadableStream,
    steps: &[Value],
) -> Result<String, String> {
    let reader: web_sys::ReadableStreamDefaultReader = stream.get_reader().unchecked_into();
    let closed = Rc::new(RefCell::new(String::from("pending")));
    let seen = closed.clone();
    let closed_promise = reader.closed();
    spawn_local(async move {
        *seen.borrow_mut() = match JsFuture::from(closed_promise).await {
            Ok(_) => "fulfilled".into(),
            Err(e) => format!("error:{}", text(&e)),
        };
    });
    let reads = Rc::new(RefCell::new(Vec::<String>::new()));
    let mut snaps = Vec::new();
    for step in steps {
        match step.as_str().unwrap_or_default() {
            "enqueue" => src.enqueue(&bytes(16)),
            "close" => src.close(),
            "error" => src.error(&js_sys::Error::new("upstream broke").into()),
            "read" => {
                let i = reads.borrow().len();
                reads.borrow_mut().push("pending".into());
                let (reads, read) = (reads.clone(), reader.read());
                spawn_local(async move {
                    reads.borrow_mut()[i] = match JsFuture::from(read).await {
                        Ok(r) if get(&r, "done").as_bool() == Some(true) => "done".into(),
                        Ok(r) => format!("chunk:{}", get(&get(&r, "value"), "byteLength").as_f64().unwrap_or(-1.0)),
                        Err(e) => format!("error:{}", text(&e)),
                    };
                });
            }
            "cancel" => {
                let cancelled = reader.cancel_with_reason(&"cancelled".into());
                spawn_local(async move {
                    let _ = JsFuture::from(cancelled).await;
                });
            }
            "idle" => turns().await,
            "snap" => {
                let signal = upstream.signal();
                let upstream =
                    if signal.aborted() { format!("aborted:{}", text(&signal.reason())) } else { "open".into() };
                let source = match src.cancelled.borrow().as_ref() {
                    Some(r) => format!("cancelled:{}", text(r)),
                    None => "open".into(),
                };
                snaps.push(format!(
                    "reads:{};closed:{};upstream:{upstream};source:{source}",
                    reads.borrow().join(","),
                    closed.borrow()
                ));
            }
            other => return Err(format!("no stream step named {other}")),
        }
    }
    Ok(snaps.join(" | "))
}

fn show(v: f64) -> String {
    if v == 0.0 && v.is_sign_negative() {
        "-0".into()
    } else {
        format!("{v}")
    }
}

/// `actual == expected`, -0 and +0 told apart (as JavaScript's `Object.is`).
fn same_num(actual: f64, expected: f64, what: &str) -> Outcome {
    ensure!(actual.to_bits() == expected.to_bits(), "{what}: expected {}, got {}", show(expected), show(actual));
    Ok(())
}

/// `actual` is `t + offset` for a clock reading `t` in `[before, after]`.
fn offset_from(actual: f64, offset: f64, before: f64, after: f64, what: &str) -> Outcome {
    let eps = 1e-6;
    ensure!(
        actual >= before + offset - eps && actual <= after + offset + eps,
        "{what}: expected now + {offset} (now between {before} and {after}), got {actual}"
    );
    Ok(())
}

/// `*` in `pattern` stands for one number.
fn like(actual: &str, pattern: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    let mut rest = actual;
    for (i, part) in parts.iter().enumerate() {
        if i == 0 {
            match rest.strip_prefix(part) {
                Some(r) => rest = r,
                None => return false,
            }
            continue;
        }
        let digits = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        if digits == 0 {
            return false;
        }
        match rest[digits..].strip_prefix(part) {
            Some(r) => rest = r,
            None => return false,
        }
    }
    rest.is_empty()
}

/// The parameter as the Rust API names it (see the module docs).
fn rust_param<'a>(row: &'a Value, expected: &'a str) -> &'a str {
    if let Some(p) = row.pointer("/rust/param").and_then(Value::as_str) {
        return p;
    }
    let p = expected.strip_prefix("options.").unwrap_or(expected);
    match p.strip_prefix("steps[").and_then(|r| r.split_once("].")) {
        Some((_, field)) => field,
        None => p,
    }
}

fn check_error(row: &Value, e: &Error, expected: &Map<String, Value>, what: &str) -> Outcome {
    let class = expected.get("class").and_then(Value::as_str).unwrap_or_default();
    ensure!(e.name() == class, "{what}: expected {class}, got {}: {e}", e.name());
    // In JavaScript (a signal's reason, a rejection returned to the runtime) it is what the JS API throws.
    let js = JsValue::from(e.clone());
    let text = |key: &str| js_sys::Reflect::get(&js, &key.into()).ok().and_then(|v| v.as_string());
    ensure!(text("name").as_deref() == Some(class), "{what}: in JavaScript its name is {:?}", text("name"));
    ensure!(
        text("code").as_deref() == e.code(),
        "{what}: in JavaScript its .code is {:?}, not {:?}",
        text("code"),
        e.code()
    );
    if e.param().is_some() {
        ensure!(text("param").as_deref() == e.param(), "{what}: in JavaScript its .param is {:?}", text("param"));
        let class_ok = match e {
            Error::InvalidType { .. } => js.is_instance_of::<js_sys::TypeError>(),
            _ => js.is_instance_of::<js_sys::RangeError>(),
        };
        ensure!(class_ok, "{what}: in JavaScript it is not a {class}");
    }
    for (key, value) in expected {
        match key.as_str() {
            "class" | "error" => {}
            "param" => {
                let want = rust_param(row, value.as_str().unwrap_or_default());
                ensure!(e.param() == Some(want), "{what}: param: expected {want:?}, got {:?} ({e})", e.param());
            }
            "code" => {
                let want = value.as_str().unwrap_or_default();
                ensure!(e.code() == Some(want), "{what}: code: expected {want:?}, got {:?} ({e})", e.code());
            }
            "at" => match e {
                Error::DeadlineExceeded { at, .. } => same_num(*at, num(value)?, &format!("{what}: at"))?,
                _ => return Err(format!("{what}: no 'at' on {e:?}")),
            },
            "remainingMs" | "minMs" => match e {
                Error::InsufficientBudget { remaining_ms, min_ms } => {
                    let got = if key == "minMs" { *min_ms } else { *remaining_ms };
                    same_num(got, num(value)?, &format!("{what}: {key}"))?;
                }
                _ => return Err(format!("{what}: no '{key}' on {e:?}")),
            },
            "reason" => match e {
                Error::RetryFailed { reason, .. } => {
                    ensure!(
                        Some(reason.as_str()) == value.as_str(),
                        "{what}: reason: expected {value}, got {reason:?} ({e})"
                    )
                }
                _ => return Err(format!("{what}: no 'reason' on {e:?}")),
            },
            "attempts" => match e {
                Error::RetryFailed { attempts, .. } => {
                    ensure!(
                        Some(attempts.len() as u64) == value.as_u64(),
                        "{what}: attempts: expected {value}, got {}",
                        attempts.len()
                    )
                }
                _ => return Err(format!("{what}: no 'attempts' on {e:?}")),
            },
            "retryAfterMs" => match e {
                Error::RetryFailed { retry_after_ms, .. } => {
                    ensure!(
                        *retry_after_ms == value.as_f64(),
                        "{what}: retryAfterMs: expected {value}, got {retry_after_ms:?}"
                    )
                }
                _ => return Err(format!("{what}: no 'retryAfterMs' on {e:?}")),
            },
            other => return Err(format!("{what}: the Rust runner does not check '{other}' on an error")),
        }
    }
    Ok(())
}

fn check_outcome(row: &Value, out: &Out, expect: &Map<String, Value>, what: &str) -> Outcome {
    let deadline = || out.deadline.as_ref().ok_or_else(|| format!("{what}: the op gave no deadline"));
    for (key, value) in expect {
        match key.as_str() {
            "at" => same_num(deadline()?.instant_ms(), num(value)?, &format!("{what}: at"))?,
            "expired" => ensure!(Some(deadline()?.expired()) == value.as_bool(), "{what}: expired(): expected {value}"),
            "offsetMs" => offset_from(
                deadline()?.instant_ms(),
                num(value)?,
                out.before,
                out.after,
                &format!("{what}: the instant"),
            )?,
            "value" if value.is_number() => {
                let got = out.fields.get("value").and_then(Value::as_f64).ok_or_else(|| format!("{what}: no value"))?;
                same_num(got, num(value)?, &format!("{what}: value"))?;
            }
            "results" => {
                let want = value.as_array().ok_or("'results' is not a list")?;
                ensure!(want.len() == out.results.len(), "{what}: {} runs, expected {}", out.results.len(), want.len());
                let plan_at = out.fields.get("planAt").and_then(Value::as_f64).unwrap_or(f64::NAN);
                for (i, (r, (got, before, after))) in want.iter().zip(&out.results).enumerate() {
                    let at = format!("{what}: run {i}");
                    let r = r.as_object().ok_or("a result is not an object")?;
                    match (got, r.get("error"), r.get("skipped")) {
                        (Err(e), Some(_), _) => {
                            let mut fields = r.clone();
                            fields.insert("class".into(), r["error"].clone());
                            check_error(row, e, &fields, &at)?;
                        }
                        (Ok(RunOutcome::Skipped(reason)), None, Some(pattern)) => {
                            let pattern = pattern.as_str().unwrap_or_default();
                            ensure!(like(reason, pattern), "{at}: skip reason: expected {pattern:?}, got {reason:?}");
                        }
                        (Ok(RunOutcome::Ran(cap)), None, None) => {
                            if let Some(c) = r.get("capMs") {
                                same_num(*cap, num(c)?, &format!("{at}: cap"))?;
                            }
                            if let Some(end) = r.get("capFromEndMs") {
                                offset_from(
                                    plan_at - num(end)? - cap,
                                    0.0,
                                    *before,
                                    *after,
                                    &format!("{at}: the cap's end"),
                                )?;
                            }
                        }
                        (Err(e), _, _) => return Err(format!("{at}: expected {r:?}, got {}: {e}", e.name())),
                        (Ok(RunOutcome::Skipped(reason)), _, _) => {
                            return Err(format!("{at}: expected {r:?}, got a skip: {reason}"))
                        }
                        (Ok(RunOutcome::Ran(cap)), _, _) => {
                            return Err(format!("{at}: expected {r:?}, it ran with a cap of {cap}"))
                        }
                    }
                }
            }
            "headers" => {
                let got = out.fields.get("headers").ok_or_else(|| format!("{what}: no headers"))?;
                ensure!(got == value, "{what}: headers: expected {value}, got {got}");
            }
            other => {
                let got = out.fields.get(other).ok_or_else(|| format!("{what}: the op gave no '{other}'"))?;
                let equal = match (got.as_f64(), value.as_f64()) {
                    (Some(g), Some(v)) => g.to_bits() == v.to_bits(),
                    _ => got == value,
                };
                ensure!(equal, "{what}: {other}: expected {value}, got {got}");
            }
        }
    }
    Ok(())
}

/// The `read` op: the script's inputs through a [`Read`](edge_deadline::core::read::Read), its actions as
/// lines (src/core/read/script.rs) and the end's fallback words.
fn read_script(a: &Map<String, Value>) -> Result<(Vec<String>, Option<String>), String> {
    use edge_deadline::core::read::{script, Action, Ending, Input, Read, ReadOptions};
    use edge_deadline::core::retry::{BackoffOptions, JitterOption, RetryOptions, RetryRun};
    let deadline_at = num_arg(a, "deadlineAt")?;
    let backoff_ms = num_arg(a, "backoffMs")?;
    let retry = RetryOptions {
        attempt_min_ms: None,
        attempt_timeout_ms: None,
        backoff: Some(BackoffOptions { base_ms: backoff_ms, max_ms: backoff_ms, jitter: JitterOption::Fraction(0.0) }),
        max_attempts: Some(num_arg(a, "maxAttempts")? as u32),
        idempotent: Some(true),
        max_retry_after_ms: None,
    };
    let policy = retry.policy().map_err(|e| format!("{e}"))?;
    let run = RetryRun::new(policy, deadline_at, 7, false).map_err(|e| format!("{e}"))?;
    let flag = |k: &str| a.get(k).and_then(Value::as_bool).unwrap_or(false);
    let o = ReadOptions {
        deadline_at,
        first_byte_ms: opt_num(a, "firstByteMs")?,
        first_chunk_ms: opt_num(a, "firstChunkMs")?,
        stall_ms: opt_num(a, "stallMs")?,
        from_headers: flag("fromHeaders"),
        hook: flag("hook"),
        max_event_bytes: opt_num(a, "maxEventBytes")?.unwrap_or(1000.0) as usize,
        max_line_bytes: opt_num(a, "maxLineBytes")?.unwrap_or(1000.0) as usize,
    };
    let mut read = Read::new(o, run);
    let (mut actions, mut reason) = (Vec::new(), None);
    let mut chunk: &[u8] = &[];
    let mut held = script::Held::default();
    for line in arg(a, "script")?.as_array().ok_or("'script' is not a list")? {
        let (t, input) = script::input(line.as_str().ok_or("a script line is not a string")?)?;
        if let Input::Chunk { bytes, .. } = input {
            chunk = bytes;
        }
        read.handle(input, t, None);
        while let Some(action) = read.poll() {
            if let Action::End(Ending::Failed(f)) = &action {
                reason = Some(f.error.fallback().reason);
            }
            actions.extend(script::describe(&action, chunk, &mut held));
        }
    }
    Ok((actions, reason))
}

async fn run_row(row: &Value) -> Outcome {
    let name = row["name"].as_str().unwrap_or("(unnamed)");
    let op = row["op"].as_str().ok_or("a row without an op")?;
    let args = row["args"].as_object().ok_or("a row without args")?;
    match run_op(op, args).await? {
        Ok(out) => match (row.get("error"), row.get("expect").and_then(Value::as_object)) {
            (Some(error), _) => Err(format!("{name}: expected {error}, it succeeded")),
            (None, Some(expect)) => check_outcome(row, &out, expect, name),
            (None, None) => Err(format!("{name}: the row has neither 'expect' nor 'error'")),
        },
        Err(e) => match row.get("error").and_then(Value::as_object) {
            Some(expected) => check_error(row, &e, expected, name),
            None => Err(format!("{name}: failed with {}: {e}", e.name())),
        },
    }
}

/// Every row of the table that the Rust API can express, in this host.
pub async fn the_table_holds_for_the_rust_api(_: &Ctx) -> Outcome {
    let table: Value = serde_json::from_str(TABLE).map_err(|e| format!("tests/conformance/cases.json: {e}"))?;
    let rows = table["cases"].as_array().ok_or("the table has no 'cases'")?;
    let (mut ran, mut failures, mut skipped) = (0, Vec::new(), Vec::new());
    for row in rows {
        let name = row["name"].as_str().unwrap_or("(unnamed)");
        let hosts = row.get("hosts").and_then(Value::as_array);
        if hosts.is_some_and(|h| !h.iter().any(|x| x == "rust")) {
            continue;
        }
        if let Some(reason) = row.pointer("/skip/rust").and_then(Value::as_str) {
            skipped.push(format!("{name}: {reason}"));
            continue;
        }
        ran += 1;
        if let Err(message) = run_row(row).await {
            failures.push(message);
        }
    }
    ensure!(ran >= MIN_RUN, "only {ran} rows ran (at least {MIN_RUN} expected)");
    // A failure report lists the known divergences too (the rows skipped here, each with its reason).
    ensure!(
        failures.is_empty(),
        "{} of {ran} rows failed:\n  {}\n{} rows skipped for Rust (known divergences):\n  {}",
        failures.len(),
        failures.join("\n  "),
        skipped.len(),
        skipped.join("\n  ")
    );
    Ok(())
}

/// The upstream error of a `plan.stream` row's failing sources (the same text as the JavaScript runner's).
const LEAK: &str = "request to http://user:s3cret@10.0.3.7:8443/v1 failed: key sk-live-abc123";

/// What `run` gives in a `plan.stream` row (see the JavaScript runner).
fn stream_source(source: &str) -> Result<web_sys::Response, Error> {
    let headers = web_sys::Headers::new().map_err(Error::from)?;
    let init = web_sys::ResponseInit::new();
    if let Some(status) = source.strip_prefix("status:") {
        init.set_status(status.parse().unwrap_or(500));
        return web_sys::Response::new_with_opt_str_and_init(Some("no"), &init).map_err(Error::from);
    }
    let _ = headers.set("content-type", "text/event-stream");
    init.set_headers(&headers);
    match source {
        "events" => {
            web_sys::Response::new_with_opt_str_and_init(Some("data: a\n\ndata: b\n\n"), &init).map_err(Error::from)
        }
        "throw" => Err(Error::Js(js_sys::Error::new(LEAK).into())),
        _ => {
            let pull = js_sys::Function::new_with_args(
                "c",
                "if (!this.n) { this.n = 1; c.enqueue(new TextEncoder().encode('data: a\\n\\n')); } \
                 else return new Promise((r) => setTimeout(() => r(c.error(new Error(this.leak))), 10));",
            );
            let src = js_sys::Object::new();
            let _ = js_sys::Reflect::set(&src, &"pull".into(), &pull);
            let _ = js_sys::Reflect::set(&src, &"leak".into(), &LEAK.into());
            let body =
                web_sys::ReadableStream::new_with_underlying_source(&src.unchecked_into()).map_err(Error::from)?;
            web_sys::Response::new_with_opt_readable_stream_and_init(Some(&body), &init).map_err(Error::from)
        }
    }
}
