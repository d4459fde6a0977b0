//! Stall guard and fetch_with_deadline: in-memory streams under the test's
//! control, and the fixture server (tests/fixtures/stall.mjs), which reports
//! when it saw each connection close: proof of abort, not abandon.

use std::cell::RefCell;
use std::rc::Rc;

use edge_deadline::web::{
    fetch_with_deadline, with_stall_timeout, Deadline, Error, FetchOptions, HeaderFormat, StallOptions, StallPhase,
};
use js_sys::{Object, Reflect, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use web_sys::{AbortController, ReadableStream, ReadableStreamDefaultController, ReadableStreamDefaultReader};

use super::{get, now, wait, Ctx, FakeTime, Outcome, TIMER_SLACK_MS};
use crate::ensure;

const BRAND: &str = "edgeDeadlineError";
/// Extra allowance for the close to travel from the client's abort to the server.
const CLOSE_SLACK_MS: f64 = 1_000.0;

/// A source under the test's control, recording its cancel reason.
pub struct Source {
    pub stream: ReadableStream,
    ctrl: Rc<RefCell<Option<ReadableStreamDefaultController>>>,
    pub cancelled: Rc<RefCell<Option<JsValue>>>,
}

impl Source {
    pub fn new() -> Self {
        let ctrl = Rc::new(RefCell::new(None));
        let cancelled = Rc::new(RefCell::new(None));
        let (c, k) = (ctrl.clone(), cancelled.clone());
        let source = Object::new();
        let start = Closure::<dyn FnMut(ReadableStreamDefaultController)>::new(move |x| *c.borrow_mut() = Some(x));
        let cancel = Closure::<dyn FnMut(JsValue)>::new(move |reason| *k.borrow_mut() = Some(reason));
        Reflect::set(&source, &"start".into(), &start.into_js_value()).unwrap();
        Reflect::set(&source, &"cancel".into(), &cancel.into_js_value()).unwrap();
        let stream = ReadableStream::new_with_underlying_source(&source).unwrap();
        Self { stream, ctrl, cancelled }
    }

    pub fn enqueue(&self, chunk: &JsValue) {
        self.try_enqueue(chunk).unwrap();
    }

    pub fn try_enqueue(&self, chunk: &JsValue) -> Result<(), JsValue> {
        self.ctrl.borrow().as_ref().unwrap().enqueue_with_chunk(chunk)
    }

    pub fn close(&self) {
        self.ctrl.borrow().as_ref().unwrap().close().unwrap();
    }

    pub fn error(&self, reason: &JsValue) {
        self.ctrl.borrow().as_ref().unwrap().error_with_e(reason);
    }
}

pub fn bytes(n: u32) -> JsValue {
    Uint8Array::new_with_length(n).into()
}

#[derive(Default)]
pub struct Drained {
    pub chunks: u32,
    pub bytes: f64,
    pub values: Vec<JsValue>,
    pub error: Option<JsValue>,
    pub at: f64,
}

pub async fn read(reader: &ReadableStreamDefaultReader) -> Result<Option<JsValue>, JsValue> {
    let result = JsFuture::from(reader.read()).await?;
    Ok(if get(&result, "done").as_bool() == Some(true) { None } else { Some(get(&result, "value")) })
}

pub async fn drain(stream: &ReadableStream) -> Drained {
    let reader: ReadableStreamDefaultReader = stream.get_reader().unchecked_into();
    let mut out = Drained::default();
    loop {
        match read(&reader).await {
            Ok(Some(value)) => {
                out.chunks += 1;
                out.bytes += get(&value, "byteLength").as_f64().or(get(&value, "length").as_f64()).unwrap_or(0.0);
                out.values.push(value);
            }
            Ok(None) => break,
            Err(e) => {
                out.error = Some(e);
                break;
            }
        }
    }
    out.at = now();
    out
}

fn stalled(error: &Option<JsValue>) -> Result<(StallPhase, f64, f64, f64), String> {
    let e = error.clone().ok_or("the stream did not error")?;
    ensure!(get(&e, BRAND).as_string().as_deref() == Some("StreamStalled"), "errored with {e:?}");
    ensure!(e.is_instance_of::<js_sys::Error>());
    match Error::from(e) {
        Error::StreamStalled { phase, after_ms, chunks, bytes } => Ok((phase, after_ms, chunks, bytes)),
        other => Err(format!("read back as {other:?}")),
    }
}

fn controller() -> AbortController {
    AbortController::new().unwrap()
}

pub async fn chunks_pass_through_and_a_close_aborts_nothing(_: &Ctx) -> Outcome {
    let src = Source::new();
    let values = [bytes(16), bytes(0), JsValue::from_str("text chunk"), bytes(1)];
    for v in &values {
        src.enqueue(v);
    }
    src.close();
    let upstream = controller();
    let out = with_stall_timeout(src.stream.clone(), StallOptions::new(1_000.0, 1_000.0).controller(upstream.clone()))
        .map_err(|e| e.to_string())?;
    let r = drain(&out).await;
    ensure!(r.error.is_none(), "errored: {:?}", r.error);
    ensure!(r.chunks == 4, "{} chunks", r.chunks);
    for (i, v) in values.iter().enumerate() {
        ensure!(&r.values[i] == v, "chunk {i} is the same object");
    }
    ensure!(!upstream.signal().aborted(), "a normal close aborted the upstream");
    ensure!(src.cancelled.borrow().is_none());
    Ok(())
}

pub async fn no_first_chunk_is_a_first_chunk_stall_that_aborts_and_cancels(_: &Ctx) -> Outcome {
    let clock = FakeTime::install();
    let src = Source::new();
    let upstream = controller();
    let t0 = now();
    let out =
        with_stall_timeout(src.stream.clone(), StallOptions::new(60.0, 1_000.0).controller(upstream.clone())).unwrap();
    let drained = Rc::new(RefCell::new(None));
    let d = drained.clone();
    wasm_bindgen_futures::spawn_local(async move { *d.borrow_mut() = Some(drain(&out).await) });
    clock.advance(59.0).await;
    ensure!(drained.borrow().is_none(), "errored before the first-chunk limit");
    clock.advance(1.0).await;
    let Some(r) = drained.borrow_mut().take() else { return Err("no stall at the first-chunk limit".into()) };
    let (phase, after_ms, chunks, bytes) = stalled(&r.error)?;
    ensure!(phase == StallPhase::FirstChunk, "phase {phase}");
    ensure!(after_ms == 60.0, "afterMs {after_ms}");
    ensure!(r.at - t0 == 60.0, "errored {} ms after wrapping", r.at - t0);
    ensure!(chunks == 0.0 && bytes == 0.0);
    ensure!(upstream.signal().aborted(), "the upstream was not aborted");
    ensure!(Some(upstream.signal().reason()) == r.error, "the upstream is aborted with the same error");
    ensure!(src.cancelled.borrow().as_ref() == r.error.as_ref(), "the source is cancelled with the same error");
    let message = get(r.error.as_ref().unwrap(), "message").as_string().unwrap_or_default();
    ensure!(message.contains("no first chunk after"), "{message}");
    Ok(())
}

pub async fn silence_after_progress_is_a_stall_with_the_counts(_: &Ctx) -> Outcome {
    let src = Source::new();
    let out = with_stall_timeout(src.stream.clone(), StallOptions::new(1_000.0, 50.0)).unwrap();
    src.enqueue(&bytes(16));
    src.enqueue(&bytes(16));
    let r = drain(&out).await;
    let (phase, after_ms, chunks, bytes) = stalled(&r.error)?;
    ensure!(phase == StallPhase::Stall, "phase {phase}");
    ensure!(after_ms >= 50.0, "afterMs {after_ms}");
    ensure!(chunks == 2.0 && bytes == 32.0, "{chunks} chunks, {bytes} bytes");
    ensure!(r.chunks == 2, "the two chunks were delivered first");
    Ok(())
}

/// As a native stream: a source error errors the wrapper at once, even with a
/// chunk read ahead and nobody reading; the chunk is discarded.
pub async fn a_source_error_reaches_a_reader_that_is_not_reading(_: &Ctx) -> Outcome {
    let src = Source::new();
    src.enqueue(&bytes(16));
    let upstream = controller();
    let out =
        with_stall_timeout(src.stream.clone(), StallOptions::new(10_000.0, 10_000.0).controller(upstream.clone()))
            .map_err(|e| e.to_string())?;
    let reader: ReadableStreamDefaultReader = out.get_reader().unchecked_into();
    let closed = Rc::new(RefCell::new(None::<JsValue>));
    let seen = closed.clone();
    let on_reject = Closure::<dyn FnMut(JsValue)>::new(move |e| *seen.borrow_mut() = Some(e));
    let _ = reader.closed().catch(&on_reject);
    // The wrapper reads one chunk ahead: it waits in the wrapper's queue, and nobody reads.
    wait(20.0).await;
    let broken: JsValue = js_sys::Error::new("upstream broke").into();
    src.error(&broken);
    wait(20.0).await;
    ensure!(closed.borrow().as_ref() == Some(&broken), "reader.closed of an idle reader: {:?}", closed.borrow());
    ensure!(upstream.signal().reason() == broken, "the upstream's abort reason: {:?}", upstream.signal().reason());
    match read(&reader).await {
        Err(e) => ensure!(e == broken, "the next read rejected with {e:?}"),
        Ok(v) => return Err(format!("the next read gave {v:?}, not the source's error")),
    }
    Ok(())
}

/// Node's and Deno's ref'd host timers (`process.getActiveResourcesInfo()`);
/// `None` where the runtime has no process to keep alive.
fn refd_timers() -> Option<usize> {
    let process = get(&js_sys::global(), "process");
    let info = get(&process, "getActiveResourcesInfo");
    let list = info.dyn_ref::<js_sys::Function>()?.call0(&process).ok()?;
    Some(js_sys::Array::from(&list).iter().filter(|r| r.as_string().as_deref() == Some("Timeout")).count())
}

/// Lets promise reactions run (no timer: a timer would be counted).
pub async fn turns() {
    for _ in 0..50 {
        let _ = JsFuture::from(js_sys::Promise::resolve(&JsValue::NULL)).await;
    }
}

pub async fn the_wrapper_holds_the_process_only_while_a_read_waits_on_the_source(_: &Ctx) -> Outcome {
    // Browsers and workerd have no process to keep alive.
    let Some(before) = refd_timers() else { return Ok(()) };
    let src = Source::new();
    let out =
        with_stall_timeout(src.stream.clone(), StallOptions::new(10_000.0, 10_000.0)).map_err(|e| e.to_string())?;
    turns().await;
    ensure!(
        refd_timers() == Some(before),
        "ref'd timers while nobody reads a silent source: {:?}, {before} before",
        refd_timers()
    );
    let reader: ReadableStreamDefaultReader = out.get_reader().unchecked_into();
    let first = reader.read();
    turns().await;
    ensure!(refd_timers() == Some(before + 1), "ref'd timers while a read waits on the source: {:?}", refd_timers());
    src.enqueue(&bytes(16));
    let r = JsFuture::from(first).await.map_err(|e| format!("{e:?}"))?;
    ensure!(get(&r, "done").as_bool() == Some(false), "the first read gave the chunk");
    // Read ahead, and held: nobody reads.
    src.enqueue(&bytes(16));
    turns().await;
    ensure!(refd_timers() == Some(before), "ref'd timers while a chunk waits for the consumer: {:?}", refd_timers());
    ensure!(read(&reader).await.map_err(|e| format!("{e:?}"))?.is_some(), "the held chunk");
    let second = reader.read();
    turns().await;
    ensure!(refd_timers() == Some(before + 1), "ref'd timers while a second read waits: {:?}", refd_timers());
    let _ = JsFuture::from(reader.cancel()).await;
    let r = JsFuture::from(second).await.map_err(|e| format!("{e:?}"))?;
    ensure!(get(&r, "done").as_bool() == Some(true), "the cancelled read is done");
    ensure!(refd_timers() == Some(before), "ref'd timers after cancel: {:?}", refd_timers());
    Ok(())
}

pub async fn the_deadline_ends_the_stream_with_deadline_exceeded(_: &Ctx) -> Outcome {
    let src = Source::new();
    let deadline = Deadline::in_ms(50.0).unwrap();
    let upstream = controller();
    let out = with_stall_timeout(
        src.stream.clone(),
        StallOptions::new(10_000.0, 10_000.0).deadline(&deadline).controller(upstream.clone()),
    )
    .unwrap();
    let r = drain(&out).await;
    match r.error.clone().map(Error::from) {
        Some(Error::DeadlineExceeded { at, late_by_ms }) => {
            ensure!(at == deadline.instant_ms() && late_by_ms >= 0.0);
            ensure!(r.at >= deadline.instant_ms(), "ended before the deadline");
        }
        other => return Err(format!("ended with {other:?}")),
    }
    ensure!(upstream.signal().aborted());
    Ok(())
}

pub async fn bad_limits_name_the_parameter_and_leave_the_source_unlocked(_: &Ctx) -> Outcome {
    for (first, stall, param) in [
        (-1.0, 10.0, "firstChunkMs"),
        (f64::NAN, 10.0, "firstChunkMs"),
        (10.0, 0.0, "stallMs"),
        (10.0, -1.0, "stallMs"),
        (10.0, f64::INFINITY, "stallMs"),
    ] {
        let src = Source::new();
        match with_stall_timeout(src.stream.clone(), StallOptions::new(first, stall)) {
            Err(Error::InvalidArgument { param: p, message, .. }) => {
                ensure!(p == param && message.contains(&format!("'{param}'")), "{p}: {message}");
            }
            other => return Err(format!("({first}, {stall}) gave {:?}", other.map(|_| ()))),
        }
        ensure!(!src.stream.locked(), "a refused wrap locked the source");
    }
    // A first-chunk wait of 0 is a shortage (nothing left to wait), not an error: it stalls at once.
    let src = Source::new();
    let r =
        drain(&with_stall_timeout(src.stream.clone(), StallOptions::new(0.0, 10.0)).map_err(|e| e.to_string())?).await;
    ensure!(matches!(stalled(&r.error)?, (StallPhase::FirstChunk, ..)), "a zero wait");
    let src = Source::new();
    let _reader = src.stream.get_reader();
    match with_stall_timeout(src.stream.clone(), StallOptions::new(10.0, 10.0)) {
        Err(Error::Js(e)) => {
            ensure!(e.is_instance_of::<js_sys::TypeError>(), "a TypeError");
            ensure!(get(&e, "message").as_string().unwrap_or_default().contains("'stream'"));
        }
        other => return Err(format!("a locked stream gave {:?}", other.map(|_| ()))),
    }
    Ok(())
}

pub async fn a_consumer_cancel_reaches_the_source_and_the_controller(_: &Ctx) -> Outcome {
    let src = Source::new();
    let upstream = controller();
    let out =
        with_stall_timeout(src.stream.clone(), StallOptions::new(60.0, 60.0).controller(upstream.clone())).unwrap();
    let reason = JsValue::from_str("consumer left");
    JsFuture::from(out.cancel_with_reason(&reason)).await.map_err(|e| format!("{e:?}"))?;
    ensure!(src.cancelled.borrow().as_ref() == Some(&reason), "the source saw the cancel");
    ensure!(upstream.signal().reason() == reason, "the controller was aborted with the reason");
    // The stall timer was cleared with it: nothing fires later.
    wait(100.0).await;
    ensure!(upstream.signal().reason() == reason);
    Ok(())
}

pub async fn is_progress_decides_and_its_error_fails_the_stream(_: &Ctx) -> Outcome {
    // Keep-alive strings do not count: only "data" chunks reset the stall limit.
    let src = Source::new();
    let out = with_stall_timeout(
        src.stream.clone(),
        StallOptions::new(1_000.0, 60.0).is_progress(|chunk| Ok(chunk.as_string().as_deref() != Some(": ping"))),
    )
    .unwrap();
    src.enqueue(&"data".into());
    let reader: ReadableStreamDefaultReader = out.get_reader().unchecked_into();
    let _ = read(&reader).await;
    let t0 = now();
    let mut error = None;
    for _ in 0..40 {
        // Once the wrapper has errored, it has cancelled the source: enqueue throws.
        if src.try_enqueue(&": ping".into()).is_err() {
            break;
        }
        if let Err(e) = read(&reader).await {
            error = Some(e);
            break;
        }
        wait(15.0).await;
    }
    let rest: Result<(), JsValue> = match error {
        Some(e) => Err(e),
        None => read(&reader).await.map(|_| ()),
    };
    let (phase, after_ms, ..) = stalled(&rest.err())?;
    ensure!(phase == StallPhase::Stall && after_ms >= 60.0 && now() - t0 >= 55.0, "phase {phase}, after {after_ms}");

    let src = Source::new();
    let upstream = controller();
    let out = with_stall_timeout(
        src.stream.clone(),
        StallOptions::new(1_000.0, 1_000.0)
            .controller(upstream.clone())
            .is_progress(|_| Err(Error::InsufficientBudget { remaining_ms: 1.0, min_ms: 2.0 })),
    )
    .unwrap();
    src.enqueue(&bytes(4));
    let r = drain(&out).await;
    ensure!(matches!(r.error.clone().map(Error::from), Some(Error::InsufficientBudget { .. })), "{:?}", r.error);
    ensure!(upstream.signal().aborted());
    Ok(())
}

pub async fn a_slow_consumer_is_not_a_stalled_source(_: &Ctx) -> Outcome {
    let src = Source::new();
    let out = with_stall_timeout(src.stream.clone(), StallOptions::new(40.0, 40.0)).unwrap();
    for _ in 0..4 {
        src.enqueue(&bytes(8));
    }
    src.close();
    let reader: ReadableStreamDefaultReader = out.get_reader().unchecked_into();
    let _ = read(&reader).await;
    wait(150.0).await; // the consumer dawdles for several limits
    let mut n = 1;
    while read(&reader).await.map_err(|e| format!("a slow consumer was reported as a stall: {e:?}"))?.is_some() {
        n += 1;
    }
    ensure!(n == 4, "{n} chunks");
    Ok(())
}

pub async fn a_followed_signal_ends_the_stream_with_its_reason(_: &Ctx) -> Outcome {
    // The deadline's signal carries its parents: a client that left ends the stream.
    let client = controller();
    let d = Deadline::in_ms(10_000.0).unwrap().with_parent(&client.signal());
    let src = Source::new();
    let upstream = controller();
    let out = with_stall_timeout(
        src.stream.clone(),
        StallOptions::new(5_000.0, 5_000.0).deadline(&d).controller(upstream.clone()),
    )
    .unwrap();
    let c = client.clone();
    let _t = edge_deadline::web::Timeout::new(20.0, move || c.abort_with_reason(&"client left".into())).unwrap();
    let r = drain(&out).await;
    ensure!(
        r.error.as_ref().and_then(JsValue::as_string).as_deref() == Some("client left"),
        "ended with {:?}",
        r.error
    );
    ensure!(
        upstream.signal().reason().as_string().as_deref() == Some("client left"),
        "the upstream is aborted with it"
    );
    ensure!(src.cancelled.borrow().as_ref().and_then(JsValue::as_string).as_deref() == Some("client left"));
    // Already aborted before wrapping: the stream ends at once with that reason.
    let src = Source::new();
    let out = with_stall_timeout(src.stream.clone(), StallOptions::new(5_000.0, 5_000.0).deadline(&d)).unwrap();
    let r = drain(&out).await;
    ensure!(
        r.error.as_ref().and_then(JsValue::as_string).as_deref() == Some("client left"),
        "ended with {:?}",
        r.error
    );
    Ok(())
}

pub async fn silence_after_a_held_chunk_counts_from_the_read(_: &Ctx) -> Outcome {
    let src = Source::new();
    let out = with_stall_timeout(src.stream.clone(), StallOptions::new(1_000.0, 60.0)).unwrap();
    src.enqueue(&bytes(8));
    let reader: ReadableStreamDefaultReader = out.get_reader().unchecked_into();
    wait(150.0).await; // the chunk waits for the consumer longer than the stall limit
    ensure!(read(&reader).await.map_err(|e| format!("held chunk reported as a stall: {e:?}"))?.is_some());
    let t_read = now();
    let rest = read(&reader).await;
    let (phase, after_ms, ..) = stalled(&rest.err())?;
    ensure!(phase == StallPhase::Stall, "phase {phase}");
    ensure!(
        now() - t_read >= 55.0 && after_ms >= 60.0,
        "stalled {} ms after the read (afterMs {after_ms})",
        now() - t_read
    );
    Ok(())
}

// ---- fetch against the fixture server -------------------------------------------------------

fn uid() -> String {
    format!("rust-{}-{}", now().to_bits() % 1_000_000_007, (js_sys::Math::random() * 1e9) as u64)
}

/// The server's view of connection `id` (it waits up to 2 s for the close).
async fn server_view(ctx: &Ctx, id: &str) -> Result<JsValue, String> {
    let d = Deadline::in_ms(5_000.0).unwrap();
    let url = format!("{}/stall/closed?id={id}", ctx.fixture()?);
    let res = fetch_with_deadline(&url.into(), None, FetchOptions::new(&d)).await.map_err(|e| e.to_string())?;
    JsFuture::from(res.json().unwrap()).await.map_err(|e| format!("{e:?}"))
}

async fn assert_closed(ctx: &Ctx, id: &str) -> Outcome {
    let view = server_view(ctx, id).await?;
    ensure!(get(&view, "known").as_bool() == Some(true), "the server never saw request {id}");
    ensure!(
        get(&view, "closed").as_bool() == Some(true),
        "the server did not see the connection close within 2 s (abandoned, not aborted)"
    );
    Ok(())
}

pub async fn fetch_a_stalled_body_aborts_the_upstream_connection(ctx: &Ctx) -> Outcome {
    let id = uid();
    let url = format!("{}/stall/mid?n=2&gap=10&id={id}", ctx.fixture()?);
    let d = Deadline::in_ms(10_000.0).unwrap();
    let res = fetch_with_deadline(&url.into(), None, FetchOptions::new(&d).stall_ms(80.0))
        .await
        .map_err(|e| e.to_string())?;
    ensure!(res.status() == 200);
    ensure!(res.url().contains("/stall/mid"), "the response keeps its url: {}", res.url());
    let r = drain(&res.body().unwrap()).await;
    let (phase, after_ms, chunks, bytes) = stalled(&r.error)?;
    ensure!(phase == StallPhase::Stall && after_ms >= 80.0, "{phase} after {after_ms}");
    ensure!(chunks >= 1.0 && bytes == 32.0, "{chunks} chunks, {bytes} bytes");
    assert_closed(ctx, &id).await
}

pub async fn fetch_no_headers_within_first_byte_ms_is_a_first_byte_stall(ctx: &Ctx) -> Outcome {
    let id = uid();
    let url = format!("{}/stall/no-headers?id={id}", ctx.fixture()?);
    let d = Deadline::in_ms(10_000.0).unwrap();
    let t0 = now();
    match fetch_with_deadline(&url.into(), None, FetchOptions::new(&d).first_byte_ms(100.0)).await {
        Err(Error::StreamStalled { phase: StallPhase::FirstByte, after_ms, .. }) => {
            ensure!(after_ms >= 100.0 && now() - t0 >= 100.0, "after {after_ms}");
        }
        other => return Err(format!("gave {:?}", other.map(|_| ()))),
    }
    assert_closed(ctx, &id).await
}

pub async fn fetch_the_deadline_aborts_a_request_waiting_for_headers(ctx: &Ctx) -> Outcome {
    let id = uid();
    let url = format!("{}/stall/no-headers?id={id}", ctx.fixture()?);
    let d = Deadline::in_ms(300.0).unwrap();
    match fetch_with_deadline(&url.into(), None, FetchOptions::new(&d)).await {
        Err(Error::DeadlineExceeded { at, .. }) => ensure!(at == d.instant_ms() && now() >= at),
        other => return Err(format!("gave {:?}", other.map(|_| ()))),
    }
    assert_closed(ctx, &id).await
}

pub async fn fetch_a_caller_signal_aborts_with_its_reason(ctx: &Ctx) -> Outcome {
    let id = uid();
    let url = format!("{}/stall/no-headers?id={id}", ctx.fixture()?);
    let d = Deadline::in_ms(10_000.0).unwrap();
    let caller = controller();
    let init = web_sys::RequestInit::new();
    init.set_signal(Some(&caller.signal()));
    let reason = JsValue::from_str("caller gave up");
    let (c, r) = (caller.clone(), reason.clone());
    let _t = edge_deadline::web::Timeout::new(150.0, move || c.abort_with_reason(&r)).unwrap();
    match fetch_with_deadline(&url.into(), Some(&init), FetchOptions::new(&d)).await {
        Err(Error::Js(v)) => ensure!(v == reason, "rejected with {v:?}"),
        other => return Err(format!("gave {:?}", other.map(|_| ()))),
    }
    assert_closed(ctx, &id).await
}

pub async fn fetch_a_steady_body_arrives_whole(ctx: &Ctx) -> Outcome {
    let url = format!("{}/stall/steady?n=3&gap=5&id={}", ctx.fixture()?, uid());
    let d = Deadline::in_ms(10_000.0).unwrap();
    let res = fetch_with_deadline(&url.into(), None, FetchOptions::new(&d).first_byte_ms(5_000.0).stall_ms(5_000.0))
        .await
        .map_err(|e| e.to_string())?;
    let text = JsFuture::from(res.text().unwrap()).await.map_err(|e| format!("{e:?}"))?;
    ensure!(text.as_string().map(|t| t.len()) == Some(48), "{text:?}");
    let _ = CLOSE_SLACK_MS;
    Ok(())
}

pub async fn fetch_bad_limits_fail_before_any_io(ctx: &Ctx) -> Outcome {
    let d = Deadline::in_ms(10_000.0).unwrap();
    let url: JsValue = format!("{}/ping", ctx.fixture()?).into();
    for (options, param) in [
        (FetchOptions::new(&d).first_byte_ms(-1.0), "firstByteMs"),
        (FetchOptions::new(&d).first_chunk_ms(f64::NAN), "firstChunkMs"),
        (FetchOptions::new(&d).stall_ms(0.0), "stallMs"),
    ] {
        match fetch_with_deadline(&url, None, options).await {
            Err(Error::InvalidArgument { param: p, .. }) => ensure!(p == param, "{p} instead of {param}"),
            other => return Err(format!("{param}: {:?}", other.map(|_| ()))),
        }
    }
    Ok(())
}

// ---- SSE keep-alives and a busy event loop --------------------------------------------------

/// Blocks the event loop for `ms` of real time (a long synchronous task):
/// timers and I/O due meanwhile wait.
fn block_loop(ms: f64) {
    let end = now() + ms;
    while now() < end {}
}

pub async fn sse_progress_counts_events_not_keep_alives(_: &Ctx) -> Outcome {
    let text = |s: &str| JsValue::from_str(s);
    let utf8 = |s: &[u8]| JsValue::from(Uint8Array::from(s));
    // Each case: chunks of one stream and whether each is progress (the JavaScript predicate's answers).
    let cases: [(&str, Vec<JsValue>, Vec<bool>); 6] = [
        ("comments and blank lines", vec![text(": ping\n\n"), text("\n"), text(":\r\n")], vec![false, false, false]),
        ("fields", vec![text("data: 1\n\n"), text("event: x\nid: 2\n\n")], vec![true, true]),
        ("a field split mid-line", vec![text("da"), text("ta: 1"), text("\n\n")], vec![true, true, false]),
        ("a comment split mid-line", vec![text(": keep-"), text("alive\n\n")], vec![false, false]),
        (
            "bytes, BOM split",
            vec![utf8(&[0xef, 0xbb]), utf8(&[0xbf, b':', b' ', b'p', b'\n']), utf8(b"data: 1\n")],
            vec![false, false, true],
        ),
        ("text BOM", vec![text("\u{feff}: ping\n"), text("data: 1\n")], vec![false, true]),
    ];
    for (label, chunks, expected) in cases {
        let mut is_progress = edge_deadline::web::sse_progress();
        for (i, (chunk, want)) in chunks.iter().zip(expected).enumerate() {
            let got = is_progress(chunk).map_err(|e| e.to_string())?;
            ensure!(got == want, "{label}: chunk {i} is progress {got}, expected {want}");
        }
    }
    match edge_deadline::web::sse_progress()(&JsValue::from_f64(5.0)) {
        Err(Error::Js(e)) => ensure!(e.is_instance_of::<js_sys::TypeError>(), "a TypeError: {e:?}"),
        other => return Err(format!("a number chunk gave {other:?}")),
    }
    // `content_type` tells the wrapper: on an event stream, pings after an event are silence.
    let src = Source::new();
    let d = Deadline::in_ms(1_000.0).unwrap(); // bounds the case if the pings counted
    let out = with_stall_timeout(
        src.stream.clone(),
        StallOptions::new(1_000.0, 60.0).deadline(&d).content_type("text/event-stream; charset=utf-8"),
    )
    .unwrap();
    src.enqueue(&utf8(b"data: 1\n\n"));
    let reader: ReadableStreamDefaultReader = out.get_reader().unchecked_into();
    let _ = read(&reader).await;
    let mut error = None;
    for _ in 0..60 {
        if src.try_enqueue(&utf8(b": ping\n\n")).is_err() {
            break;
        }
        if let Err(e) = read(&reader).await {
            error = Some(e);
            break;
        }
        wait(10.0).await;
    }
    let rest: Result<(), JsValue> = match error {
        Some(e) => Err(e),
        None => read(&reader).await.map(|_| ()),
    };
    let (phase, after_ms, ..) = stalled(&rest.err())?;
    ensure!(phase == StallPhase::Stall && after_ms >= 60.0, "phase {phase} after {after_ms}");
    Ok(())
}

pub async fn fetch_sse_keep_alives_are_silence_by_default(ctx: &Ctx) -> Outcome {
    let id = uid();
    let url = format!("{}/stall/sse?events=2&gap=20&ping=20&id={id}", ctx.fixture()?);
    let d = Deadline::in_ms(2_000.0).unwrap();
    let t0 = now();
    let res = fetch_with_deadline(&url.into(), None, FetchOptions::new(&d).first_chunk_ms(1_000.0).stall_ms(150.0))
        .await
        .map_err(|e| e.to_string())?;
    let r = drain(&res.body().unwrap()).await;
    let took = r.at - t0;
    let (phase, after_ms, chunks, _) = stalled(&r.error).map_err(|e| format!("{e} after {took} ms"))?;
    ensure!(phase == StallPhase::Stall, "phase {phase}");
    ensure!((150.0..=150.0 + TIMER_SLACK_MS).contains(&after_ms), "afterMs {after_ms}");
    ensure!(chunks >= 3.0, "keep-alives arrived: {chunks} chunks");
    ensure!(took < 1_500.0, "took {took} ms: the keep-alives kept it to the deadline");
    assert_closed(ctx, &id).await
}

/// Without `first_chunk_ms`, an upstream that only sends keep-alive comments is cut at the core's
/// default wait for first content (half of the 10 s left at the headers: 5 s), not left to the deadline.
pub async fn fetch_keep_alives_only_are_cut_at_the_default_first_chunk_wait(ctx: &Ctx) -> Outcome {
    let id = uid();
    let url = format!("{}/stall/pings?ping=50&id={id}", ctx.fixture()?);
    let d = Deadline::in_ms(10_000.0).unwrap();
    let t0 = now();
    let res = fetch_with_deadline(&url.into(), None, FetchOptions::new(&d).stall_ms(2_000.0))
        .await
        .map_err(|e| e.to_string())?;
    let r = drain(&res.body().unwrap()).await;
    let took = r.at - t0;
    let (phase, after_ms, chunks, _) = stalled(&r.error).map_err(|e| format!("{e} after {took} ms"))?;
    ensure!(phase == StallPhase::FirstChunk, "phase {phase}");
    ensure!((4_900.0..=5_000.0 + TIMER_SLACK_MS).contains(&after_ms), "afterMs {after_ms}");
    ensure!(chunks >= 3.0, "keep-alives arrived: {chunks} chunks");
    ensure!(took < 8_000.0, "took {took} ms: the keep-alives kept it to the deadline");
    assert_closed(ctx, &id).await
}

pub async fn fetch_a_blocked_consumer_is_not_a_stall_of_a_source_that_kept_sending(ctx: &Ctx) -> Outcome {
    for trial in 1..=3 {
        // 40 chunks of 16 bytes, one every 20 ms, from another process; stall_ms 250 (a margin
        // for a starved fixture process on a loaded machine), and a consumer blocked for longer.
        let url = format!("{}/stall/steady?n=40&gap=20&id={}", ctx.fixture()?, uid());
        let d = Deadline::in_ms(10_000.0).unwrap();
        let res = fetch_with_deadline(&url.into(), None, FetchOptions::new(&d).first_chunk_ms(1_000.0).stall_ms(250.0))
            .await
            .map_err(|e| e.to_string())?;
        let reader: ReadableStreamDefaultReader = res.body().unwrap().get_reader().unchecked_into();
        let (mut bytes, mut reads) = (0.0, 0);
        loop {
            match read(&reader).await {
                Ok(Some(value)) => {
                    bytes += get(&value, "byteLength").as_f64().unwrap_or(0.0);
                    reads += 1;
                    if reads == 3 {
                        block_loop(700.0); // the wrapper waits on the source meanwhile
                    }
                }
                Ok(None) => break,
                Err(e) => return Err(format!("trial {trial}: a healthy source was declared stalled: {e:?}")),
            }
        }
        ensure!(bytes == 640.0, "trial {trial}: {bytes} bytes");
    }
    Ok(())
}

// ---- the budget header (as js/headers.js `withBudgetHeaders`) ----------------------------------

const OWN: &str = "edge-deadline-remaining-ms";
const FORMATS: [&str; 4] = ["grpc-timeout", "connect-timeout-ms", "x-envoy-expected-rq-timeout-ms", OWN];

/// A browser page (or worker) on another origin than the fixture server's:
/// there CORS applies and the default header is sent only when asked for.
fn cross_origin_page(fixture: &str) -> bool {
    let global: JsValue = js_sys::global().into();
    let server_runtime =
        !get(&global, "Deno").is_undefined() || !get(&get(&get(&global, "process"), "versions"), "node").is_undefined();
    match get(&get(&global, "location"), "origin").as_string() {
        Some(origin) if !server_runtime => origin != fixture,
        _ => false,
    }
}

/// The headers the fixture's echo route saw (lowercase names), fetched through `fetch_with_deadline`.
async fn echoed(
    input: JsValue,
    init: Option<&web_sys::RequestInit>,
    options: FetchOptions<'_>,
) -> Result<JsValue, String> {
    let res = fetch_with_deadline(&input, init, options).await.map_err(|e| e.to_string())?;
    ensure!(res.status() == 200, "status {}", res.status());
    JsFuture::from(res.json().map_err(|e| format!("{e:?}"))?).await.map_err(|e| format!("{e:?}"))
}

fn header(headers: &JsValue, name: &str) -> Option<String> {
    get(headers, name).as_string()
}

pub async fn fetch_sends_the_remaining_budget_in_the_packages_header_by_default(ctx: &Ctx) -> Outcome {
    let url = format!("{}/pipeline/echo-headers", ctx.fixture()?);
    let d = Deadline::in_ms(5_000.0).unwrap();
    let before = d.remaining();
    let headers = echoed(url.clone().into(), None, FetchOptions::new(&d)).await?;
    let after = d.remaining(); // the round trip is the only time spent
    if cross_origin_page(ctx.fixture()?) {
        // CORS: a custom header would make the request preflighted; by default none is added.
        for f in FORMATS {
            ensure!(header(&headers, f).is_none(), "{f} went cross-origin by default");
        }
        // Asked for, it is sent anyway (the fixture answers preflights).
        let headers =
            echoed(url.into(), None, FetchOptions::new(&d).propagate(&[HeaderFormat::EdgeDeadlineRemainingMs])).await?;
        let sent = header(&headers, OWN).and_then(|v| v.parse::<f64>().ok());
        ensure!(sent.is_some_and(|v| v > 4_000.0 && v <= 5_000.0), "asked for cross-origin: {sent:?}");
        return Ok(());
    }
    let sent =
        header(&headers, OWN).ok_or_else(|| format!("no {OWN} header: {:?}", js_sys::JSON::stringify(&headers)))?;
    ensure!(!sent.is_empty() && sent.bytes().all(|b| b.is_ascii_digit()), "a whole number of ms: {sent}");
    let sent: f64 = sent.parse().unwrap();
    ensure!(sent <= before.floor(), "never more than was left at the call: {sent} > {before}");
    ensure!(sent >= after.floor(), "nothing held back: {sent} < {after} left after the round trip");
    for f in FORMATS.into_iter().filter(|f| *f != OWN) {
        ensure!(header(&headers, f).is_none(), "{f} is not sent by default");
    }
    Ok(())
}

pub async fn fetch_propagate_chooses_the_formats_and_an_empty_list_sends_none(ctx: &Ctx) -> Outcome {
    let url = format!("{}/pipeline/echo-headers", ctx.fixture()?);
    let d = Deadline::in_ms(5_000.0).unwrap();
    let headers =
        echoed(url.clone().into(), None, FetchOptions::new(&d).propagate(&[HeaderFormat::GrpcTimeout])).await?;
    let grpc = header(&headers, "grpc-timeout").unwrap_or_default();
    // Read back as a server would: the deadline it states is 4–5 s away.
    let back = web_sys::Headers::new().unwrap();
    back.set("grpc-timeout", &grpc).unwrap();
    let incoming = Deadline::from_headers(&back, 10_000.0, 0.0).map_err(|e| e.to_string())?;
    let left = incoming.deadline.remaining();
    ensure!(
        incoming.source == Some(HeaderFormat::GrpcTimeout) && left > 4_000.0 && left <= 5_000.0,
        "grpc-timeout: {grpc}"
    );
    ensure!(header(&headers, OWN).is_none(), "only the format asked for");
    let both = [HeaderFormat::ConnectTimeoutMs, HeaderFormat::EdgeDeadlineRemainingMs];
    let headers = echoed(url.clone().into(), None, FetchOptions::new(&d).propagate(&both)).await?;
    for f in ["connect-timeout-ms", OWN] {
        let v = header(&headers, f).and_then(|v| v.parse::<f64>().ok());
        ensure!(v.is_some_and(|v| v > 4_000.0 && v <= 5_000.0), "{f}: {v:?}");
    }
    let headers = echoed(url.into(), None, FetchOptions::new(&d).propagate(&[])).await?;
    for f in FORMATS {
        ensure!(header(&headers, f).is_none(), "{f} with propagate(&[])");
    }
    Ok(())
}

pub async fn fetch_keeps_the_callers_headers_and_never_overwrites_a_budget_header_they_set(ctx: &Ctx) -> Outcome {
    let url = format!("{}/pipeline/echo-headers", ctx.fixture()?);
    let d = Deadline::in_ms(5_000.0).unwrap();
    let own = [HeaderFormat::EdgeDeadlineRemainingMs];
    // init.headers as a plain record.
    let record = Object::new();
    Reflect::set(&record, &"x-trace".into(), &"t1".into()).unwrap();
    Reflect::set(&record, &OWN.into(), &"42".into()).unwrap();
    let init = web_sys::RequestInit::new();
    init.set_headers(&record);
    let headers = echoed(url.clone().into(), Some(&init), FetchOptions::new(&d).propagate(&own)).await?;
    ensure!(header(&headers, "x-trace").as_deref() == Some("t1"), "x-trace: {:?}", header(&headers, "x-trace"));
    ensure!(header(&headers, OWN).as_deref() == Some("42"), "an explicit header wins: {:?}", header(&headers, OWN));
    // init.headers as a Headers object.
    let h = web_sys::Headers::new().unwrap();
    h.set("x-trace", "t2").unwrap();
    let init = web_sys::RequestInit::new();
    init.set_headers(&h);
    let headers = echoed(url.clone().into(), Some(&init), FetchOptions::new(&d).propagate(&own)).await?;
    ensure!(header(&headers, "x-trace").as_deref() == Some("t2"));
    ensure!(
        header(&headers, OWN).and_then(|v| v.parse::<f64>().ok()).is_some_and(|v| v > 4_000.0),
        "added to a Headers object"
    );
    ensure!(h.get(OWN).unwrap().is_none(), "the caller's Headers object is not changed");
    // A Request input keeps its headers and gets the budget.
    let rinit = web_sys::RequestInit::new();
    let rh = web_sys::Headers::new().unwrap();
    rh.set("x-trace", "t3").unwrap();
    rinit.set_headers(&rh);
    let request = web_sys::Request::new_with_str_and_init(&url, &rinit).unwrap();
    let headers = echoed(request.into(), None, FetchOptions::new(&d).propagate(&own)).await?;
    ensure!(header(&headers, "x-trace").as_deref() == Some("t3"), "a Request input keeps its headers");
    ensure!(
        header(&headers, OWN).and_then(|v| v.parse::<f64>().ok()).is_some_and(|v| v > 4_000.0),
        "and gets the budget"
    );
    Ok(())
}

pub async fn fetch_default_options_work_against_a_server_that_refuses_preflights(ctx: &Ctx) -> Outcome {
    let base = ctx.fixture()?.to_string();
    let url = |id: &str| -> JsValue { format!("{base}/stall/no-preflight?id={id}").into() };
    let seen = |id: String| {
        let base = base.clone();
        async move {
            let d = Deadline::in_ms(5_000.0).unwrap();
            echoed(format!("{base}/stall/cors-seen?id={id}").into(), None, FetchOptions::new(&d).propagate(&[])).await
        }
    };
    let d = Deadline::in_ms(5_000.0).unwrap();
    let id = uid();
    let res = fetch_with_deadline(&url(&id), None, FetchOptions::new(&d).stall_ms(1_000.0))
        .await
        .map_err(|e| e.to_string())?;
    ensure!(res.status() == 200, "status {}", res.status());
    let text = JsFuture::from(res.text().unwrap()).await.map_err(|e| format!("{e:?}"))?.as_string().unwrap_or_default();
    ensure!(text.ends_with("data: done\n\n"), "{text:?}");
    let view = seen(id).await?;
    ensure!(get(&view, "preflights").as_f64() == Some(0.0), "a preflight was sent");
    ensure!(get(&view, "gets").as_f64() == Some(1.0));
    let budget = get(&view, "budgetHeader");
    if cross_origin_page(&base) {
        ensure!(budget.is_null(), "the budget header went cross-origin: {budget:?}");
        // Asked for, it is sent: the browser preflights, which this server refuses.
        let id2 = uid();
        let own = [HeaderFormat::EdgeDeadlineRemainingMs];
        match fetch_with_deadline(&url(&id2), None, FetchOptions::new(&d).propagate(&own)).await {
            Err(e) => ensure!(!e.is_timeout(), "a refused preflight is the network error, not a timeout: {e}"),
            Ok(res) => return Err(format!("a refused preflight answered {}", res.status())),
        }
        ensure!(get(&seen(id2).await?, "preflights").as_f64() == Some(1.0), "the header was asked for (preflighted)");
    } else {
        let v = budget.as_string().and_then(|v| v.parse::<f64>().ok());
        ensure!(v.is_some_and(|v| v > 0.0 && v <= 5_000.0), "no CORS here: the budget header is sent ({budget:?})");
    }
    Ok(())
}
